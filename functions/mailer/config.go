package main

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"42sisters.ai/oracle/functions/mailer/letter"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/config"
	"42sisters.ai/oracle/shared/mail"
	"42sisters.ai/oracle/shared/secret"
	"42sisters.ai/oracle/shared/stripex"
)

type settings struct {
	OrdersTable string
	LedgerTable string
	AuditBucket string
	AlertsTopic string
	// QuarantineBucket keeps the emails gate 2 stops; MailQueue carries
	// the review notice.
	QuarantineBucket string
	MailQueue        string
	// GenerateQueue takes the repair of a stored verdict found corrupt.
	GenerateQueue string
	// InboxBucket holds the received messages autoresponses answer.
	InboxBucket string
	// ChatTable holds the chat accounts (their addresses) and the sign-in
	// tokens the mailer mints.
	ChatTable     string
	BaseURL       string
	StripeLive    *secret.Value // the key for live sessions, if any
	StripeTest    *secret.Value // the key for test sessions, if any
	StripeAPIBase string        // empty in production: the real Stripe API
	Brand         letter.Brand
	Hasher        *audit.Hasher
	// Transport is "ses" (the default) or "graph"; SES sends through the
	// ConfigurationSet, whose events say what became of each email.
	Transport        string
	ConfigurationSet string
	// Graph, with the graph transport: the app's credentials (a JSON
	// secret: tenant_id, client_id, client_secret), the mailbox it sends
	// as, and the endpoints (empty in production: Microsoft's).
	Graph *mail.GraphConfig
	// Schedule is the delay before each attempt of an email; BlockedRetry
	// how often a job parked while the account cannot send tries again.
	Schedule            []time.Duration
	BlockedRetry        time.Duration
	DeadLetterRetention time.Duration
}

// loadConfig reads and validates every setting once, at cold start.
func loadConfig(ctx context.Context, cfg aws.Config) (settings, error) {
	env := config.FromEnviron(config.NewAWSSecrets(cfg))
	s := settings{
		OrdersTable:      env.String("ORDERS_TABLE"),
		LedgerTable:      env.String("LEDGER_TABLE"),
		AuditBucket:      env.String("AUDIT_BUCKET"),
		AlertsTopic:      env.String("ALERTS_TOPIC_ARN"),
		QuarantineBucket: env.String("QUARANTINE_BUCKET"),
		MailQueue:        env.String("MAIL_QUEUE_URL"),
		GenerateQueue:    env.String("GENERATE_QUEUE_URL"),
		InboxBucket:      env.String("INBOX_BUCKET"),
		ChatTable:        env.String("CHAT_TABLE"),
		BaseURL:          env.URL("BASE_URL"),
		StripeAPIBase:    env.Optional("STRIPE_API_BASE", ""),
		Brand: letter.Brand{
			Name:    env.Optional("MAIL_BRAND", ""),
			Sender:  env.Address("MAIL_FROM", letter.DefaultBrand().Sender),
			Support: env.Address("SUPPORT_EMAIL", letter.DefaultBrand().Support),
		},
	}
	s.Transport, s.Graph = mail.TransportFrom(ctx, env, s.Brand.Sender)
	s.ConfigurationSet = env.Optional("MAIL_CONFIGURATION_SET", "")
	schedule, err := parseSchedule(env.Optional("MAIL_RETRY_SCHEDULE", DefaultSchedule))
	if err != nil {
		env.Invalid("MAIL_RETRY_SCHEDULE", err)
	}
	s.Schedule = schedule
	s.BlockedRetry = env.Duration("MAIL_BLOCKED_RETRY", DefaultBlockedRetry)
	s.DeadLetterRetention = env.Days("DEAD_LETTER_RETENTION_DAYS", 90, 14, 3650)
	s.StripeLive, s.StripeTest = stripex.KeysFrom(ctx, env)
	s.Hasher = audit.HasherFrom(ctx, env)
	if err := env.Err(); err != nil {
		return settings{}, err
	}
	return s, nil
}
