package main

import (
	"context"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"42sisters.ai/oracle/shared/config"
)

// DefaultRetentionDays is how long a dead letter's record is kept.
const DefaultRetentionDays = 90

// MinRetentionDays is the dead-letter queues' message retention (14 days,
// counted from the message's first send): a message SQS delivers again
// always finds its record, so it never alerts twice.
const MinRetentionDays = 14

type settings struct {
	LedgerTable string
	AlertsTopic string
	// Retention is how long each dead letter's record is kept.
	Retention time.Duration
}

// loadConfig reads and validates every setting once, at cold start.
func loadConfig(context.Context, aws.Config) (settings, error) {
	return readSettings(os.LookupEnv)
}

// readSettings reads the settings through lookup. The function reads no
// secret.
func readSettings(lookup func(string) (string, bool)) (settings, error) {
	env := config.New(lookup, nil)
	s := settings{
		LedgerTable: env.String("LEDGER_TABLE"),
		AlertsTopic: env.String("ALERTS_TOPIC_ARN"),
		Retention:   env.Days("DEAD_LETTER_RETENTION_DAYS", DefaultRetentionDays, MinRetentionDays, 3650),
	}
	if err := env.Err(); err != nil {
		return settings{}, err
	}
	return s, nil
}
