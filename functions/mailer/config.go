package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"

	"42sisters.ai/oracle/functions/mailer/letter"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/config"
)

type stripeKey struct {
	Key  string
	Live bool
}

type settings struct {
	OrdersTable   string
	LedgerTable   string
	AuditBucket   string
	AlertsTopic   string
	BaseURL       string
	StripeKeys    []stripeKey // one per mode configured
	StripeAPIBase string      // empty in production: the real Stripe API
	Brand         letter.Brand
	Hasher        *audit.Hasher
}

// loadConfig reads and validates every setting once, at cold start.
func loadConfig(ctx context.Context, cfg aws.Config) (settings, error) {
	env := config.FromEnviron(config.NewAWSSecrets(cfg))
	s := settings{
		OrdersTable:   env.String("ORDERS_TABLE"),
		LedgerTable:   env.String("LEDGER_TABLE"),
		AuditBucket:   env.String("AUDIT_BUCKET"),
		AlertsTopic:   env.String("ALERTS_TOPIC_ARN"),
		BaseURL:       env.URL("BASE_URL"),
		StripeAPIBase: env.Optional("STRIPE_API_BASE", ""),
		Brand: letter.Brand{
			Name:    env.Optional("MAIL_BRAND", ""),
			Sender:  env.Optional("MAIL_FROM", ""),
			Support: env.Optional("MAIL_SUPPORT", ""),
		},
	}
	key := env.Secret(ctx, "STRIPE_SECRET_KEY", true)
	testKey := env.Secret(ctx, "STRIPE_TEST_SECRET_KEY", false)
	pepper := env.Secret(ctx, "HASH_PEPPER", true)
	if err := env.Err(); err != nil {
		return settings{}, err
	}
	// Sessions are read with the key of their mode: the main key serves its
	// own mode, the optional test key test-mode (smoke) orders.
	switch {
	case strings.HasPrefix(key, "sk_live_") || strings.HasPrefix(key, "rk_live_"):
		s.StripeKeys = append(s.StripeKeys, stripeKey{Key: key, Live: true})
		if testKey != "" {
			s.StripeKeys = append(s.StripeKeys, stripeKey{Key: testKey})
		}
	case strings.HasPrefix(key, "sk_test_") || strings.HasPrefix(key, "rk_test_"):
		s.StripeKeys = append(s.StripeKeys, stripeKey{Key: key})
	default:
		return settings{}, fmt.Errorf("invalid configuration: STRIPE_SECRET_KEY is not a Stripe secret key")
	}
	h, err := audit.NewHasher(pepper)
	if err != nil {
		return settings{}, fmt.Errorf("invalid configuration: HASH_PEPPER: %w", err)
	}
	s.Hasher = h
	return s, nil
}
