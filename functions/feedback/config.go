package main

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"

	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/config"
)

type settings struct {
	OrdersTable string
	LedgerTable string
	AlertsTopic string
	// Hasher keys the suppression list: complaining addresses are kept
	// only as keyed hashes.
	Hasher *audit.Hasher
}

// loadConfig reads and validates every setting once, at cold start.
func loadConfig(ctx context.Context, cfg aws.Config) (settings, error) {
	env := config.FromEnviron(config.NewAWSSecrets(cfg))
	s := settings{
		OrdersTable: env.String("ORDERS_TABLE"),
		LedgerTable: env.String("LEDGER_TABLE"),
		AlertsTopic: env.String("ALERTS_TOPIC_ARN"),
	}
	s.Hasher = audit.HasherFrom(ctx, env)
	if err := env.Err(); err != nil {
		return settings{}, err
	}
	return s, nil
}
