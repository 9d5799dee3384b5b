package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"

	"42sisters.ai/oracle/shared/config"
)

type settings struct {
	BaseURL        string
	AllowedOrigins []string
	StripeKey      string
	StripeAPIBase  string // empty in production: the real Stripe API
	LedgerTable    string
	AlertsTopic    string
}

// loadConfig reads and validates every setting once, at cold start.
func loadConfig(ctx context.Context, cfg aws.Config) (settings, error) {
	env := config.FromEnviron(config.NewAWSSecrets(cfg))
	s := settings{
		BaseURL:        env.URL("BASE_URL"),
		AllowedOrigins: env.List("ALLOWED_ORIGINS"),
		StripeKey:      env.Secret(ctx, "STRIPE_SECRET_KEY", true),
		StripeAPIBase:  env.Optional("STRIPE_API_BASE", ""),
		LedgerTable:    env.String("LEDGER_TABLE"),
		AlertsTopic:    env.String("ALERTS_TOPIC_ARN"),
	}
	if err := env.Err(); err != nil {
		return settings{}, err
	}
	if !strings.HasPrefix(s.StripeKey, "sk_live_") && !strings.HasPrefix(s.StripeKey, "sk_test_") && !strings.HasPrefix(s.StripeKey, "rk_") {
		return settings{}, fmt.Errorf("invalid configuration: STRIPE_SECRET_KEY is not a Stripe secret key")
	}
	return s, nil
}
