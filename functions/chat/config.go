package main

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/chatsession"
	"42sisters.ai/oracle/shared/circuit"
	"42sisters.ai/oracle/shared/config"
	"42sisters.ai/oracle/shared/gemini"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/secret"
)

type settings struct {
	ChatTable     string
	LedgerTable   string
	MailQueue     string
	AuditBucket   string
	AlertsTopic   string
	BaseURL       string
	Origin        string
	Site          string
	Support       string
	Retention     time.Duration
	RetentionDays int
	DailyCap      int
	NewTrials     int
	ReplyTimeout  time.Duration
	CookieKey     []byte
	Hasher        *audit.Hasher

	// StripeKey is read again when Stripe refuses it; StripeAPIBase is
	// empty in production (the real Stripe API).
	StripeKey     *secret.Value
	StripeAPIBase string

	// The model's, as the generator's: the same key, model, timeouts and
	// circuit (the breaker's state is shared through the Ledger).
	GeminiKey   *secret.Value
	GeminiModel string
	GeminiBase  string
	CallTimeout time.Duration
	BackoffBase time.Duration
	Circuit     circuit.Options
}

// Defaults of the chat's settings (docs/configuration.md).
const (
	defaultSite          = "42 Sisters AI"
	defaultRetentionDays = 30
	defaultDailyCap      = 25
	// defaultNewTrials bounds a day's free trials: at make cost's bound of
	// $0.0035 an exchange, 500 whole trials cost about US$5.25 of model
	// calls.
	defaultNewTrials = 500
	// defaultReplyTimeout leaves the answer room within API Gateway's 30 s.
	defaultReplyTimeout = 25 * time.Second
	// defaultCallTimeout bounds one model call: the stances share 40 % of
	// the reply's time, so a call longer than that could never finish.
	defaultCallTimeout = 10 * time.Second
)

// loadConfig reads and validates every setting once, at cold start.
func loadConfig(ctx context.Context, cfg aws.Config) (settings, error) {
	return loadFrom(ctx, config.FromEnviron(config.NewAWSSecrets(cfg)))
}

func loadFrom(ctx context.Context, env *config.Env) (settings, error) {
	s := settings{
		ChatTable:     env.String("CHAT_TABLE"),
		LedgerTable:   env.String("LEDGER_TABLE"),
		MailQueue:     env.String("MAIL_QUEUE_URL"),
		AuditBucket:   env.String("AUDIT_BUCKET"),
		AlertsTopic:   env.String("ALERTS_TOPIC_ARN"),
		BaseURL:       env.URL("BASE_URL"),
		Site:          env.Optional("SITE_NAME", defaultSite),
		Support:       env.Address("SUPPORT_EMAIL", oracle.SupportAddress),
		RetentionDays: env.Int("CHAT_RETENTION_DAYS", defaultRetentionDays, 1, 365),
		DailyCap:      env.Int("CHAT_DAILY_CAP", defaultDailyCap, 1, 10000),
		NewTrials:     env.Int("CHAT_NEW_TRIALS_PER_DAY", defaultNewTrials, 1, 1000000),
		ReplyTimeout:  env.Duration("CHAT_REPLY_TIMEOUT", defaultReplyTimeout),
		Hasher:        audit.HasherFrom(ctx, env),
		StripeKey:     env.Credential(ctx, "STRIPE_SECRET_KEY", true),
		StripeAPIBase: env.Optional("STRIPE_API_BASE", ""),
		GeminiKey:     env.Credential(ctx, "GEMINI_API_KEY", true),
		GeminiModel:   env.Optional("GEMINI_MODEL", gemini.DefaultModel),
		GeminiBase:    env.Optional("GEMINI_API_BASE", ""),
		CallTimeout:   env.Duration("GEMINI_CALL_TIMEOUT", defaultCallTimeout),
		BackoffBase:   env.Duration("GEMINI_BACKOFF_BASE", gemini.DefaultBackoffBase),
		Circuit: circuit.Options{
			FailureThreshold: env.Int("GEMINI_CIRCUIT_OPEN_THRESHOLD", 5, 1, 1000),
			OpenFor:          env.Duration("GEMINI_CIRCUIT_OPEN_FOR", 60*time.Second),
			SlowThreshold:    env.Duration("GEMINI_CIRCUIT_SLOW_THRESHOLD", 30*time.Second),
			SlowCalls:        env.Int("GEMINI_CIRCUIT_SLOW_CALLS", 5, 1, 1000),
		},
	}
	// A half-open probe holds its slot for one whole reply.
	s.Circuit.ProbeLease = s.ReplyTimeout
	s.Retention = time.Duration(s.RetentionDays) * 24 * time.Hour
	if s.ReplyTimeout <= 0 || s.ReplyTimeout > 28*time.Second {
		env.Invalid("CHAT_REPLY_TIMEOUT", fmt.Errorf("must be positive and at most 28s, to answer within API Gateway's 30 s"))
	}
	if s.BaseURL != "" {
		origin, err := originOf(s.BaseURL)
		if err != nil {
			env.Invalid("BASE_URL", err)
		}
		s.Origin = origin
	}
	if key := env.Secret(ctx, "CHAT_COOKIE_KEY", true); key != "" {
		if len(key) < chatsession.MinKey {
			env.Invalid("CHAT_COOKIE_KEY", fmt.Errorf("must be at least %d bytes", chatsession.MinKey))
		}
		s.CookieKey = []byte(key)
	}
	if err := env.Err(); err != nil {
		return settings{}, err
	}
	return s, nil
}
