package main

import (
	"context"
	"fmt"
	"net/url"

	"github.com/aws/aws-sdk-go-v2/aws"

	"42sisters.ai/oracle/shared/config"
	"42sisters.ai/oracle/shared/secret"
	"42sisters.ai/oracle/shared/stripex"
)

type settings struct {
	BaseURL        string
	AllowedOrigins []string
	StripeKey      *secret.Value // read again when Stripe refuses it
	StripeAPIBase  string        // empty in production: the real Stripe API
	LedgerTable    string
	AlertsTopic    string
	// Smoke is set when test mode is configured: the key that makes the
	// smoke test's sessions and the secret its requests are signed with.
	Smoke *smokeSettings
}

type smokeSettings struct {
	Key                  *secret.Value
	SigningSecret, Email string
}

// loadConfig reads and validates every setting once, at cold start.
func loadConfig(ctx context.Context, cfg aws.Config) (settings, error) {
	env := config.FromEnviron(config.NewAWSSecrets(cfg))
	s := settings{
		BaseURL:        env.URL("BASE_URL"),
		AllowedOrigins: env.List("ALLOWED_ORIGINS"),
		StripeKey:      env.Credential(ctx, "STRIPE_SECRET_KEY", true),
		StripeAPIBase:  env.Optional("STRIPE_API_BASE", ""),
		LedgerTable:    env.String("LEDGER_TABLE"),
		AlertsTopic:    env.String("ALERTS_TOPIC_ARN"),
	}
	testKey := env.Credential(ctx, "STRIPE_TEST_SECRET_KEY", false)
	testWebhookSecret := env.Secret(ctx, "STRIPE_TEST_WEBHOOK_SECRET", false)
	smokeEmail := env.Optional("SMOKE_EMAIL", stripex.SmokeEmail)
	if err := env.Err(); err != nil {
		return settings{}, err
	}
	if key, signing, ok := stripex.SmokeSecrets(s.StripeKey.Get(), testKey.Get(), testWebhookSecret); ok {
		smokeKey := testKey
		if key == s.StripeKey.Get() {
			smokeKey = s.StripeKey
		}
		s.Smoke = &smokeSettings{Key: smokeKey, SigningSecret: signing, Email: smokeEmail}
	}
	if _, _, err := stripex.ModeKeys(s.StripeKey.Get(), ""); err != nil {
		return settings{}, fmt.Errorf("invalid configuration: STRIPE_SECRET_KEY: %w", err)
	}
	if err := validOrigins(s.AllowedOrigins); err != nil {
		return settings{}, fmt.Errorf("invalid configuration: ALLOWED_ORIGINS: %w", err)
	}
	return s, nil
}

// validOrigins requires at least one origin, each exactly as a browser
// sends it (scheme://host[:port], no path or trailing slash), since anything
// else would never match and every browser checkout would get 403.
func validOrigins(origins []string) error {
	if len(origins) == 0 {
		return fmt.Errorf("at least one origin is required")
	}
	for _, o := range origins {
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Path != "" || u.RawQuery != "" || u.User != nil {
			return fmt.Errorf("%q is not an origin such as https://42sisters.ai", o)
		}
	}
	return nil
}
