package main

import (
	"context"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/config"
	"42sisters.ai/oracle/shared/inbox"
	"42sisters.ai/oracle/shared/mail"
	"42sisters.ai/oracle/shared/oracle"
)

type settings struct {
	OrdersTable, LedgerTable string
	AlertsTopic, AuditBucket string
	InboxBucket, MailQueue   string
	// FailureQueue names the on-failure destination whose records the
	// deadletter function keeps (make inbox-replay reads them).
	FailureQueue string
	Hasher       *audit.Hasher
	Policy       inbox.Policy
	// Cooldown is how long a sender waits for a second acknowledgement;
	// Retention how long a message is remembered as processed.
	Cooldown, Retention time.Duration
	// Transport is ses (SES receiving) or graph (a Microsoft 365 mailbox,
	// polled with the Graph transport's credentials); Mailbox is the one
	// polled and Lookback how far back a poll reads.
	Transport string
	Graph     *mail.GraphConfig
	Mailbox   string
	Lookback  time.Duration
}

// loadConfig reads and validates every setting once, at cold start.
func loadConfig(ctx context.Context, cfg aws.Config) (settings, error) {
	env := config.FromEnviron(config.NewAWSSecrets(cfg))
	s := settings{
		OrdersTable:  env.String("ORDERS_TABLE"),
		LedgerTable:  env.String("LEDGER_TABLE"),
		AlertsTopic:  env.String("ALERTS_TOPIC_ARN"),
		AuditBucket:  env.String("AUDIT_BUCKET"),
		InboxBucket:  env.String("INBOX_BUCKET"),
		MailQueue:    env.String("MAIL_QUEUE_URL"),
		FailureQueue: env.String("INBOX_FAILURE_QUEUE"),
		Cooldown:     env.Duration("INBOX_COOLDOWN", 24*time.Hour),
	}
	sender := env.Address("MAIL_FROM", oracle.SupportAddress)
	support := env.Address("SUPPORT_EMAIL", oracle.SupportAddress)
	s.Policy = inbox.Policy{Own: []string{strings.ToLower(sender), strings.ToLower(support)}, Skip: inbox.DefaultSkip}
	if extra := env.Optional("INBOX_SKIP", ""); extra != "" {
		for _, a := range strings.Split(extra, ",") {
			s.Policy.Skip = append(s.Policy.Skip, strings.ToLower(strings.TrimSpace(a)))
		}
	}
	s.Transport, s.Graph = mail.TransportFrom(ctx, env, support)
	if s.Graph != nil {
		s.Mailbox = env.Address("GRAPH_MAILBOX", support)
		s.Policy.Own = append(s.Policy.Own, strings.ToLower(s.Graph.Sender), strings.ToLower(s.Mailbox))
	}
	s.Lookback = env.Days("INBOX_LOOKBACK_DAYS", 7, 1, 30)
	s.Retention = env.Days("INBOX_SEEN_DAYS", 45, 31, 365)
	s.Hasher = audit.HasherFrom(ctx, env)
	if err := env.Err(); err != nil {
		return settings{}, err
	}
	return s, nil
}
