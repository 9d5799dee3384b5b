package main

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/config"
	"42sisters.ai/oracle/shared/fulfil"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/secret"
	"42sisters.ai/oracle/shared/x402"
	"42sisters.ai/oracle/shared/x402rail"
)

type settings struct {
	OrdersTable   string
	LedgerTable   string
	GenerateQueue string
	AuditBucket   string
	AlertsTopic   string
	BaseURL       string
	// PayTo is the wallet agents pay, EIP-55; empty turns the rail off.
	PayTo string
	// SmokePayer is the smoke test's wallet, EIP-55, or empty.
	SmokePayer string
	Networks   []x402.NetworkInfo
	// FacilitatorURL and, for Coinbase's, its API key pair ("<key id>
	// <secret>", read again when refused).
	FacilitatorURL string
	FacilitatorKey *secret.Value
	MaxTimeout     time.Duration
	SettleRoom     time.Duration
	SettleAttempts int
	Wait           time.Duration
	Retention      time.Duration
	JobLease       time.Duration
	Hasher         *audit.Hasher
	// Docs are the discovery documents, made from the settings above.
	Docs *Discovery
}

// loadConfig reads and validates every setting once, at cold start. With
// X402_PAY_TO unset the rail is off and nothing else is needed.
func loadConfig(ctx context.Context, cfg aws.Config) (settings, error) {
	env := config.FromEnviron(config.NewAWSSecrets(cfg))
	rail := x402rail.FromEnv(ctx, env)
	s := settings{PayTo: rail.PayTo, Networks: rail.Networks, FacilitatorURL: rail.FacilitatorURL, FacilitatorKey: rail.FacilitatorKey}
	// The discovery documents are served with the rail off too: they
	// describe the card product and the chat.
	s.BaseURL = env.URL("BASE_URL")
	if !rail.On() {
		if err := env.Err(); err != nil {
			return settings{}, err
		}
		return s.withDocs()
	}
	if p := env.Optional("X402_SMOKE_PAYER", ""); p != "" {
		var err error
		if s.SmokePayer, err = x402.ChecksumAddress(p); err != nil {
			env.Invalid("X402_SMOKE_PAYER", fmt.Errorf("must be the smoke wallet's address (0x and 40 hex digits): %w", err))
		}
	}
	s.OrdersTable = env.String("ORDERS_TABLE")
	s.LedgerTable = env.String("LEDGER_TABLE")
	s.GenerateQueue = env.String("GENERATE_QUEUE_URL")
	s.AuditBucket = env.String("AUDIT_BUCKET")
	s.AlertsTopic = env.String("ALERTS_TOPIC_ARN")
	s.MaxTimeout = env.Duration("X402_MAX_TIMEOUT", 5*time.Minute)
	s.SettleRoom = env.Duration("X402_SETTLE_ROOM", 30*time.Second)
	if s.SettleRoom >= s.MaxTimeout {
		env.Invalid("X402_SETTLE_ROOM", fmt.Errorf("must be shorter than X402_MAX_TIMEOUT (%s)", s.MaxTimeout))
	}
	s.SettleAttempts = env.Int("X402_SETTLE_ATTEMPTS", 3, 1, 10)
	s.Wait = env.Duration("X402_WAIT", 20*time.Second)
	s.Retention = env.Days("ORDER_RETENTION_DAYS", 90, oracle.MinRetentionDays, 3650)
	s.JobLease = env.Duration("JOB_LEASE", fulfil.DefaultLease)
	s.Hasher = audit.HasherFrom(ctx, env)
	if err := env.Err(); err != nil {
		return settings{}, err
	}
	return s.withDocs()
}

// withDocs makes the discovery documents from the settings read.
func (s settings) withDocs() (settings, error) {
	site := site{BaseURL: s.BaseURL}
	if s.PayTo != "" {
		site.PayTo, site.Networks = s.PayTo, s.Networks
	}
	docs, err := NewDiscovery(site)
	if err != nil {
		return settings{}, fmt.Errorf("the discovery documents: %w", err)
	}
	s.Docs = docs
	return s, nil
}
