package main

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/circuit"
	"42sisters.ai/oracle/shared/config"
	"42sisters.ai/oracle/shared/gemini"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/secret"
)

type settings struct {
	OrdersTable string
	LedgerTable string
	MailQueue   string
	AuditBucket string
	// QuarantineBucket keeps what the content filter stops, for review.
	QuarantineBucket string
	AlertsTopic      string
	// GeminiKey reads itself again when the model refuses it.
	GeminiKey   *secret.Value
	GeminiModel string
	// GeminiFallback is a second model for when the first is rate limited
	// or unavailable; empty means none.
	GeminiFallback string
	GeminiBase     string // empty in production: Google's endpoint
	GenerateQueue  string // this function's own queue, for parked jobs
	CallTimeout    time.Duration
	BackoffBase    time.Duration
	MaxReceives    int
	Retention      time.Duration
	// OriginalRetention is how long the first verdict's label and hash are
	// kept in the Ledger after its last generation.
	OriginalRetention time.Duration
	Circuit           circuit.Options
	ParkingBudget     time.Duration
	RetryBase         time.Duration
	KeyRecheck        time.Duration
	Hasher            *audit.Hasher
}

// loadConfig reads and validates every setting once, at cold start.
func loadConfig(ctx context.Context, cfg aws.Config) (settings, error) {
	env := config.FromEnviron(config.NewAWSSecrets(cfg))
	s := settings{
		OrdersTable:       env.String("ORDERS_TABLE"),
		LedgerTable:       env.String("LEDGER_TABLE"),
		MailQueue:         env.String("MAIL_QUEUE_URL"),
		AuditBucket:       env.String("AUDIT_BUCKET"),
		QuarantineBucket:  env.String("QUARANTINE_BUCKET"),
		AlertsTopic:       env.String("ALERTS_TOPIC_ARN"),
		GeminiKey:         env.Credential(ctx, "GEMINI_API_KEY", true),
		GeminiModel:       env.Optional("GEMINI_MODEL", gemini.DefaultModel),
		GeminiFallback:    env.Optional("GEMINI_FALLBACK_MODEL", ""),
		GeminiBase:        env.Optional("GEMINI_API_BASE", ""),
		GenerateQueue:     env.String("GENERATE_QUEUE_URL"),
		CallTimeout:       env.Duration("GEMINI_CALL_TIMEOUT", gemini.DefaultTimeout),
		BackoffBase:       env.Duration("GEMINI_BACKOFF_BASE", gemini.DefaultBackoffBase),
		MaxReceives:       env.Int("GENERATE_MAX_RECEIVES", 5, 1, 1000),
		Retention:         env.Days("ORDER_RETENTION_DAYS", 90, oracle.MinRetentionDays, 3650),
		OriginalRetention: env.Days("ORIGINAL_RETENTION_DAYS", 730, 1, 3650),
		Circuit: circuit.Options{
			FailureThreshold: env.Int("GEMINI_CIRCUIT_OPEN_THRESHOLD", 5, 1, 1000),
			OpenFor:          env.Duration("GEMINI_CIRCUIT_OPEN_FOR", 60*time.Second),
			SlowThreshold:    env.Duration("GEMINI_CIRCUIT_SLOW_THRESHOLD", 30*time.Second),
			SlowCalls:        env.Int("GEMINI_CIRCUIT_SLOW_CALLS", 5, 1, 1000),
		},
		ParkingBudget: env.Duration("PARKING_BUDGET", DefaultParkingBudget),
		RetryBase:     env.Duration("GENERATE_RETRY_BASE", DefaultRetryBase),
		KeyRecheck:    env.Duration("GEMINI_KEY_RECHECK", time.Minute),
	}
	// A half-open probe holds its slot for one whole model call: every
	// attempt and the longest backoffs between them.
	s.Circuit.ProbeLease = gemini.MaxAttempts*s.CallTimeout + (gemini.MaxAttempts-1)*gemini.DefaultBackoffCap
	s.Hasher = audit.HasherFrom(ctx, env)
	if err := env.Err(); err != nil {
		return settings{}, err
	}
	return s, nil
}
