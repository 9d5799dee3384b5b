package main

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/config"
	"42sisters.ai/oracle/shared/fulfil"
	"42sisters.ai/oracle/shared/health"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/secret"
	"42sisters.ai/oracle/shared/stripex"
)

type settings struct {
	OrdersTable   string
	LedgerTable   string
	GenerateQueue string
	MailQueue     string
	AuditBucket   string
	AlertsTopic   string
	Support       string
	StripeLive    *secret.Value // the key for live sessions, if any
	StripeTest    *secret.Value // the key for test sessions, if any
	StripeAPIBase string        // empty in production: the real Stripe API
	Retention     time.Duration
	JobLease      time.Duration
	Hasher        *audit.Hasher
	// HealthPeriod is the health job's period: /api/health calls a record
	// older than three periods stale.
	HealthPeriod time.Duration
}

// loadConfig reads and validates every setting once, at cold start.
func loadConfig(ctx context.Context, cfg aws.Config) (settings, error) {
	env := config.FromEnviron(config.NewAWSSecrets(cfg))
	s := settings{
		OrdersTable:   env.String("ORDERS_TABLE"),
		LedgerTable:   env.String("LEDGER_TABLE"),
		GenerateQueue: env.String("GENERATE_QUEUE_URL"),
		MailQueue:     env.String("MAIL_QUEUE_URL"),
		AuditBucket:   env.String("AUDIT_BUCKET"),
		AlertsTopic:   env.String("ALERTS_TOPIC_ARN"),
		Support:       env.Address("SUPPORT_EMAIL", oracle.SupportAddress),
		StripeAPIBase: env.Optional("STRIPE_API_BASE", ""),
		Retention:     env.Days("ORDER_RETENTION_DAYS", 90, oracle.MinRetentionDays, 3650),
		JobLease:      env.Duration("JOB_LEASE", fulfil.DefaultLease),
		HealthPeriod:  env.Duration("HEALTH_PERIOD", health.DefaultPeriod),
	}
	if err := health.CheckPeriod(s.HealthPeriod); err != nil {
		env.Invalid("HEALTH_PERIOD", err)
	}
	s.StripeLive, s.StripeTest = stripex.KeysFrom(ctx, env)
	s.Hasher = audit.HasherFrom(ctx, env)
	if err := env.Err(); err != nil {
		return settings{}, err
	}
	return s, nil
}
