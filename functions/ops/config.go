package main

import (
	"context"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/auditseal"
	"42sisters.ai/oracle/shared/config"
	"42sisters.ai/oracle/shared/health"
	"42sisters.ai/oracle/shared/secret"
	"42sisters.ai/oracle/shared/stripex"
)

type settings struct {
	OrdersTable      string
	LedgerTable      string
	AuditBucket      string
	QuarantineBucket string
	InboxBucket      string
	ChatTable        string
	ChatDailyCap     int
	AlertsTopic      string
	GenerateQueue    string
	MailQueue        string
	// The dead-letter queue whose recorded jobs a redrive sends back to
	// their source queues.
	DeadLetters   string
	StripeLive    *secret.Value
	StripeTest    *secret.Value
	StripeAPIBase string
	Hasher        *audit.Hasher
	Lock          auditseal.Lock
	Retention     time.Duration
	StuckAfter    time.Duration
}

// chatDailyCap is the chat function's default CHAT_DAILY_CAP, which `chat`
// shows an account's day against.
const chatDailyCap = 25

// loadConfig reads and validates every setting once, at cold start.
func loadConfig(ctx context.Context, cfg aws.Config) (settings, error) {
	env := config.FromEnviron(config.NewAWSSecrets(cfg))
	s := settings{
		OrdersTable:      env.String("ORDERS_TABLE"),
		LedgerTable:      env.String("LEDGER_TABLE"),
		AuditBucket:      env.String("AUDIT_BUCKET"),
		QuarantineBucket: env.String("QUARANTINE_BUCKET"),
		InboxBucket:      env.String("INBOX_BUCKET"),
		ChatTable:        env.String("CHAT_TABLE"),
		ChatDailyCap:     env.Int("CHAT_DAILY_CAP", chatDailyCap, 1, 10000),
		AlertsTopic:      env.String("ALERTS_TOPIC_ARN"),
		GenerateQueue:    env.String("GENERATE_QUEUE_URL"),
		MailQueue:        env.String("MAIL_QUEUE_URL"),
		DeadLetters:      env.String("DEAD_LETTER_QUEUE_URL"),
		StripeAPIBase:    env.Optional("STRIPE_API_BASE", ""),
		Retention:        env.Days("ORDER_RETENTION_DAYS", 90, 1, 3650),
		StuckAfter:       env.Duration("STUCK_AFTER", health.DefaultStuckAfter),
		Lock:             auditseal.LockFrom(env),
	}
	s.StripeLive, s.StripeTest = stripex.KeysFrom(ctx, env)
	s.Hasher = audit.HasherFrom(ctx, env)
	if err := env.Err(); err != nil {
		return settings{}, err
	}
	return s, nil
}

// queueName is the name of the queue at url, as the dead-letter records
// give it.
func queueName(url string) string { return url[strings.LastIndex(url, "/")+1:] }
