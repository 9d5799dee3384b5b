package main

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/config"
)

type settings struct {
	OrdersTable string
	LedgerTable string
	MailQueue   string
	AuditBucket string
	AlertsTopic string
	GeminiKey   string
	GeminiModel string
	GeminiBase  string // empty in production: Google's endpoint
	CallTimeout time.Duration
	MaxReceives int
	Retention   time.Duration
	Hasher      *audit.Hasher
}

// loadConfig reads and validates every setting once, at cold start.
func loadConfig(ctx context.Context, cfg aws.Config) (settings, error) {
	env := config.FromEnviron(config.NewAWSSecrets(cfg))
	s := settings{
		OrdersTable: env.String("ORDERS_TABLE"),
		LedgerTable: env.String("LEDGER_TABLE"),
		MailQueue:   env.String("MAIL_QUEUE_URL"),
		AuditBucket: env.String("AUDIT_BUCKET"),
		AlertsTopic: env.String("ALERTS_TOPIC_ARN"),
		GeminiKey:   env.Secret(ctx, "GEMINI_API_KEY", true),
		GeminiModel: env.Optional("GEMINI_MODEL", "gemini-2.5-flash"),
		GeminiBase:  env.Optional("GEMINI_API_BASE", ""),
		CallTimeout: env.Duration("GEMINI_CALL_TIMEOUT", 45*time.Second),
		MaxReceives: env.Int("GENERATE_MAX_RECEIVES", 5, 1, 1000),
		Retention:   time.Duration(env.Int("ORDER_RETENTION_DAYS", 90, 1, 3650)) * 24 * time.Hour,
	}
	pepper := env.Secret(ctx, "HASH_PEPPER", true)
	if err := env.Err(); err != nil {
		return settings{}, err
	}
	h, err := audit.NewHasher(pepper)
	if err != nil {
		return settings{}, fmt.Errorf("invalid configuration: HASH_PEPPER: %w", err)
	}
	s.Hasher = h
	return s, nil
}
