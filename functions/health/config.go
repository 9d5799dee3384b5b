package main

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/config"
	"42sisters.ai/oracle/shared/geminikey"
	"42sisters.ai/oracle/shared/health"
	"42sisters.ai/oracle/shared/mail"
	"42sisters.ai/oracle/shared/secret"
	"42sisters.ai/oracle/shared/stripex"
	"42sisters.ai/oracle/shared/x402rail"
)

// The defaults of the health job's windows (docs/configuration.md).
const (
	DefaultPeriod          = health.DefaultPeriod
	DefaultStuckAfter      = health.DefaultStuckAfter
	DefaultMailStuckAfter  = 30 * time.Minute
	DefaultReconcileWindow = 24 * time.Hour
	DefaultRetryDelay      = 5 * time.Second
	DefaultRealertEvery    = 24 * time.Hour
	// DefaultWebhookGrace keeps the reconciliation off sessions whose
	// webhook may still be on its way.
	DefaultWebhookGrace = 10 * time.Minute
)

type settings struct {
	OrdersTable string
	LedgerTable string
	ChatTable   string
	AuditBucket string
	AlertsTopic string
	// Queues by the name the record gives them; DeadLetters likewise,
	// with the queue name the deadletter function counts under.
	Queues      []queueRef
	DeadLetters []queueRef

	// QueueAges reads the queues' oldest-message ages from CloudWatch;
	// off where there is none (the local stack: moto does not speak
	// CloudWatch's current protocol).
	QueueAges bool

	// Graph is set with MAIL_TRANSPORT=graph; nil means SES.
	Graph *mail.GraphConfig

	GeminiKey   *secret.Value
	GeminiModel string
	GeminiBase  string

	StripeLive    *secret.Value
	StripeTest    *secret.Value
	StripeAPIBase string
	Hasher        *audit.Hasher

	// Rail is the agent rail's settings; with it on, the facilitator is
	// checked.
	Rail x402rail.Settings

	Retention       time.Duration
	HealthHistory   time.Duration
	LockMode        s3types.ObjectLockMode
	Period          time.Duration
	StuckAfter      time.Duration
	MailStuckAfter  time.Duration
	ReconcileWindow time.Duration
	WebhookGrace    time.Duration
	RetryDelay      time.Duration
	FailCritical    int
	RealertEvery    time.Duration
}

// queueRef names a queue for the record and locates it.
type queueRef struct {
	Name string
	URL  string
}

// loadConfig reads and validates every setting once, at cold start.
func loadConfig(ctx context.Context, cfg aws.Config) (settings, error) {
	env := config.FromEnviron(config.NewAWSSecrets(cfg))
	s := settings{
		OrdersTable: env.String("ORDERS_TABLE"),
		LedgerTable: env.String("LEDGER_TABLE"),
		ChatTable:   env.String("CHAT_TABLE"),
		AuditBucket: env.String("AUDIT_BUCKET"),
		AlertsTopic: env.String("ALERTS_TOPIC_ARN"),
		Queues: []queueRef{
			{"generate", env.String("GENERATE_QUEUE_URL")},
			{"mail", env.String("MAIL_QUEUE_URL")},
			{"mail_events", env.String("MAIL_EVENTS_QUEUE_URL")},
		},
		// One dead-letter queue takes every source's dead letters.
		DeadLetters:     []queueRef{{"dead_letters", env.String("DEAD_LETTER_QUEUE_URL")}},
		GeminiKey:       env.Credential(ctx, "GEMINI_API_KEY", true),
		GeminiModel:     env.Optional("GEMINI_MODEL", geminikey.DefaultModel),
		GeminiBase:      env.Optional("GEMINI_API_BASE", ""),
		StripeAPIBase:   env.Optional("STRIPE_API_BASE", ""),
		Retention:       env.Days("ORDER_RETENTION_DAYS", 90, 1, 3650),
		Period:          env.Duration("HEALTH_PERIOD", DefaultPeriod),
		StuckAfter:      env.Duration("STUCK_AFTER", DefaultStuckAfter),
		MailStuckAfter:  env.Duration("MAIL_STUCK_AFTER", DefaultMailStuckAfter),
		ReconcileWindow: env.Duration("RECONCILE_WINDOW", DefaultReconcileWindow),
		WebhookGrace:    env.Duration("WEBHOOK_GRACE", DefaultWebhookGrace),
		RetryDelay:      env.Duration("HEALTH_RETRY_DELAY", DefaultRetryDelay),
		FailCritical:    env.Int("HEALTH_FAIL_CRITICAL", health.DefaultFailCritical, 1, 100),
		RealertEvery:    env.Duration("REALERT_EVERY", DefaultRealertEvery),
	}
	// SPEC_ORACLE_CACHE_HEALTH invariant 1: a period between 30 s and an hour.
	if err := health.CheckPeriod(s.Period); err != nil {
		env.Invalid("HEALTH_PERIOD", err)
	}
	if s.ReconcileWindow > 30*24*time.Hour {
		env.Invalid("RECONCILE_WINDOW", fmt.Errorf("must be at most 30 days (Stripe's list reaches that far back), got %s", s.ReconcileWindow))
	}
	switch v := env.Optional("QUEUE_AGE_METRICS", "cloudwatch"); v {
	case "cloudwatch":
		s.QueueAges = true
	case "off":
	default:
		env.Invalid("QUEUE_AGE_METRICS", fmt.Errorf("must be cloudwatch or off, got %q", v))
	}
	_, s.Graph = mail.TransportFrom(ctx, env, "oracle@42sisters.ai")
	s.StripeLive, s.StripeTest = stripex.KeysFrom(ctx, env)
	s.Hasher = audit.HasherFrom(ctx, env)
	s.Rail = x402rail.FromEnv(ctx, env)
	s.HealthHistory, s.LockMode = audit.HealthHistoryFrom(env)
	if err := env.Err(); err != nil {
		return settings{}, err
	}
	return s, nil
}
