// Command webhook is the Lambda function behind POST /api/webhook: it
// verifies Stripe's events and turns paid Checkout Sessions into orders with
// one queued generation job each, and keeps Sisters Chat's subscriptions.
package main

import (
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/casefile"
	"42sisters.ai/oracle/shared/coldstart"
	"42sisters.ai/oracle/shared/fulfil"
	"42sisters.ai/oracle/shared/httpapi"
	"42sisters.ai/oracle/shared/queue"
	"42sisters.ai/oracle/shared/store"
	"42sisters.ai/oracle/shared/subscription"
	"42sisters.ai/oracle/shared/tracing"
)

func main() {
	fn, cfg := coldstart.Start(loadConfig)
	log, aws := fn.Log, fn.AWS
	db := awsenv.NewTables(aws)
	sq := queue.NewClient(aws)
	ledger := store.NewLedger(db, cfg.LedgerTable, time.Now)
	metrics := fn.Metrics
	alerts := fn.Alerter(cfg.AlertsTopic, ledger)
	if cfg.Secrets.Live == "" && cfg.Secrets.Test == "" {
		log.Error("no webhook signing secret configured: every event will be refused with 503")
	}
	orders := store.NewOrders(db, cfg.OrdersTable, time.Now)
	mailQueue := queue.NewSender(sq, cfg.MailQueue, time.Now)
	queries := awsenv.NewQueries(aws)
	subs := subscription.NewStore(db, queries, cfg.ChatTable)
	recorder := &audit.Recorder{Writer: audit.NewWriter(awsenv.S3(aws), cfg.AuditBucket), Alerts: alerts, Log: log}
	h := &Handler{
		Secrets: cfg.Secrets,
		Signing: cfg.Signing,
		Ledger:  ledger,
		Alerts:  alerts,
		Metrics: metrics,
		Log:     log,
		Now:     time.Now,
		// The same retention the claim gives each order.
		OrderRetention: cfg.Retention,
		Money: &Money{
			Index:    store.NewOrderIndex(queries, cfg.OrdersTable),
			Orders:   orders,
			Records:  audit.NewReader(awsenv.S3(aws), cfg.AuditBucket),
			Evidence: casefile.NewEvidenceStore(awsenv.S3(aws), cfg.EvidenceBucket),
			Mail:     mailQueue,
			Audit:    recorder,
			Alerts:   alerts,
			Hasher:   cfg.Hasher,
			BaseURL:  cfg.BaseURL,
			Now:      time.Now,
			// A refund or dispute no order has may be a chat invoice's.
			ChatPayments: subs,
		},
		Chat: &Chat{
			Subscriptions: subs,
			Mail:          mailQueue,
			Ledger:        ledger,
			Audit:         recorder,
			Alerts:        alerts,
			Now:           time.Now,
		},
		Fulfil: &fulfil.Service{
			Orders:    orders,
			Generate:  queue.NewSender(sq, cfg.GenerateQueue, time.Now),
			Mail:      mailQueue,
			Audit:     recorder,
			Alerts:    alerts,
			Metrics:   metrics,
			Hasher:    cfg.Hasher,
			Log:       log,
			Now:       time.Now,
			Lease:     cfg.JobLease,
			Retention: cfg.Retention,
		},
	}
	lambda.Start(tracing.Invocations(fn.Tracing, httpapi.Recover(log, h.Handle)))
}
