package main

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"

	"42sisters.ai/oracle/shared/config"
	"42sisters.ai/oracle/shared/mail"
	"42sisters.ai/oracle/shared/stripex"
)

type settings struct {
	APIURL        string
	OrdersTable   string
	LedgerTable   string
	AuditBucket   string
	AlertsTopic   string
	StripeAPIBase string
	// StripeKey and SigningSecret are test mode's (stripex.SmokeSecrets).
	// Without test mode configured, StripeKey is the main key when it is
	// live, so the run's first stage says so, loudly, instead of the
	// function failing to start unheard.
	StripeKey     string
	SigningSecret string
	Graph         *mail.GraphConfig
}

// loadConfig reads and validates every setting once, at cold start.
func loadConfig(ctx context.Context, cfg aws.Config) (settings, error) {
	env := config.FromEnviron(config.NewAWSSecrets(cfg))
	s := settings{
		APIURL:        env.URL("API_URL"),
		OrdersTable:   env.String("ORDERS_TABLE"),
		LedgerTable:   env.String("LEDGER_TABLE"),
		AuditBucket:   env.String("AUDIT_BUCKET"),
		AlertsTopic:   env.String("ALERTS_TOPIC_ARN"),
		StripeAPIBase: env.Optional("STRIPE_API_BASE", ""),
	}
	main := env.Secret(ctx, "STRIPE_SECRET_KEY", true)
	test := env.Secret(ctx, "STRIPE_TEST_SECRET_KEY", false)
	testWebhook := env.Secret(ctx, "STRIPE_TEST_WEBHOOK_SECRET", false)
	_, s.Graph = mail.TransportFrom(ctx, env, "oracle@42sisters.ai")
	if err := env.Err(); err != nil {
		return settings{}, err
	}
	var ok bool
	if s.StripeKey, s.SigningSecret, ok = stripex.SmokeSecrets(main, test, testWebhook); !ok && stripex.IsLiveKey(main) && test == "" {
		s.StripeKey = main
	}
	return s, nil
}
