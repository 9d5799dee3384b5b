package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/config"
	"42sisters.ai/oracle/shared/fulfil"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/secret"
	"42sisters.ai/oracle/shared/x402"
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
}

// networkChoices are X402_NETWORKS's values.
var networkChoices = map[string][]x402.Network{
	"mainnet": {x402.NetworkBase},
	"testnet": {x402.NetworkBaseSepolia},
	"both":    {x402.NetworkBase, x402.NetworkBaseSepolia},
}

// loadConfig reads and validates every setting once, at cold start. With
// X402_PAY_TO unset the rail is off and nothing else is needed.
func loadConfig(ctx context.Context, cfg aws.Config) (settings, error) {
	env := config.FromEnviron(config.NewAWSSecrets(cfg))
	s := settings{PayTo: env.Optional("X402_PAY_TO", "")}
	if s.PayTo == "" {
		return s, env.Err()
	}
	sum, err := x402.ChecksumAddress(s.PayTo)
	if err != nil {
		env.Invalid("X402_PAY_TO", fmt.Errorf("must be a wallet address (0x and 40 hex digits): %w", err))
	}
	s.PayTo = sum
	if p := env.Optional("X402_SMOKE_PAYER", ""); p != "" {
		if s.SmokePayer, err = x402.ChecksumAddress(p); err != nil {
			env.Invalid("X402_SMOKE_PAYER", fmt.Errorf("must be the smoke wallet's address (0x and 40 hex digits): %w", err))
		}
	}
	choice := env.Optional("X402_NETWORKS", "testnet")
	names, ok := networkChoices[choice]
	if !ok {
		env.Invalid("X402_NETWORKS", fmt.Errorf("must be mainnet, testnet or both, got %q", choice))
	}
	for _, n := range names {
		info, _ := x402.LookupNetwork(n)
		s.Networks = append(s.Networks, info)
	}
	s.OrdersTable = env.String("ORDERS_TABLE")
	s.LedgerTable = env.String("LEDGER_TABLE")
	s.GenerateQueue = env.String("GENERATE_QUEUE_URL")
	s.AuditBucket = env.String("AUDIT_BUCKET")
	s.AlertsTopic = env.String("ALERTS_TOPIC_ARN")
	s.BaseURL = env.URL("BASE_URL")
	s.FacilitatorURL = env.URL("X402_FACILITATOR_URL")
	s.FacilitatorKey = env.Credential(ctx, "X402_FACILITATOR_KEY", false)
	if k := s.FacilitatorKey.Get(); k != "" {
		if _, err := authorizer(k); err != nil {
			env.Invalid("X402_FACILITATOR_KEY", err)
		}
	}
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
	return s, nil
}

// authorizer is the CDP facilitator's authorizer for its API key pair,
// given as "<key id> <secret>" (the secret may hold spaces and newlines).
func authorizer(key string) (*x402.CDPAuthorizer, error) {
	id, sec, ok := strings.Cut(strings.TrimSpace(key), " ")
	if !ok || id == "" || strings.TrimSpace(sec) == "" {
		return nil, fmt.Errorf("must be the API key id, a space, and its secret")
	}
	a, err := x402.NewCDPAuthorizer(id, strings.TrimSpace(sec))
	if err != nil {
		return nil, fmt.Errorf("the API key's secret: %w", err)
	}
	return a, nil
}
