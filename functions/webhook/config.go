package main

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/config"
	"42sisters.ai/oracle/shared/fulfil"
	"42sisters.ai/oracle/shared/oracle"
)

type settings struct {
	OrdersTable   string
	LedgerTable   string
	ChatTable     string
	GenerateQueue string
	MailQueue     string
	AuditBucket   string
	// EvidenceBucket keeps the evidence bundles of disputes; BaseURL is
	// the site, for the result page a bundle names.
	EvidenceBucket string
	BaseURL        string
	AlertsTopic    string
	Secrets        Secrets
	Signing        *Signing
	Hasher         *audit.Hasher
	Retention      time.Duration
	JobLease       time.Duration
}

// loadConfig reads and validates every setting once, at cold start. The
// signing secrets are optional here on purpose: without them the function
// still starts, answers 503 and raises a CRITICAL alert, so the operator
// hears of it while Stripe keeps retrying.
func loadConfig(ctx context.Context, cfg aws.Config) (settings, error) {
	env := config.FromEnviron(config.NewAWSSecrets(cfg))
	s := settings{
		OrdersTable:    env.String("ORDERS_TABLE"),
		LedgerTable:    env.String("LEDGER_TABLE"),
		ChatTable:      env.String("CHAT_TABLE"),
		GenerateQueue:  env.String("GENERATE_QUEUE_URL"),
		MailQueue:      env.String("MAIL_QUEUE_URL"),
		AuditBucket:    env.String("AUDIT_BUCKET"),
		EvidenceBucket: env.String("EVIDENCE_BUCKET"),
		BaseURL:        env.URL("BASE_URL"),
		AlertsTopic:    env.String("ALERTS_TOPIC_ARN"),
		Signing: &Signing{
			Live: env.Credential(ctx, "STRIPE_WEBHOOK_SECRET", false),
			Test: env.Credential(ctx, "STRIPE_TEST_WEBHOOK_SECRET", false),
		},
		Retention: env.Days("ORDER_RETENTION_DAYS", 90, oracle.MinRetentionDays, 3650),
		JobLease:  env.Duration("JOB_LEASE", fulfil.DefaultLease),
	}
	s.Secrets = Secrets{Live: s.Signing.Live.Get(), Test: s.Signing.Test.Get()}
	s.Hasher = audit.HasherFrom(ctx, env)
	if err := env.Err(); err != nil {
		return settings{}, err
	}
	return s, nil
}
