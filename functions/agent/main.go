// Command agent is the Lambda function behind the agent rail: POST
// /x402/query, /x402/query/full and /x402/query/premium sell the three
// tiers' verdicts for USDC over x402 v2. A payment is checked here, its
// authorization claimed once, verified and settled through the
// facilitator, and only then is its order PAID and generated like a card
// payment's; the answer is the verdict, or where to poll for it.
package main

import (
	"crypto/rand"
	"net/http"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/coldstart"
	"42sisters.ai/oracle/shared/fulfil"
	"42sisters.ai/oracle/shared/httpapi"
	"42sisters.ai/oracle/shared/queue"
	"42sisters.ai/oracle/shared/repair"
	"42sisters.ai/oracle/shared/store"
	"42sisters.ai/oracle/shared/tracing"
	"42sisters.ai/oracle/shared/wait"
	"42sisters.ai/oracle/shared/x402rail"
)

func main() {
	fn, cfg := coldstart.Start(loadConfig)
	log := fn.Log
	if cfg.PayTo == "" {
		log.Info("the agent rail is off: X402_PAY_TO is not set; every paid route answers 404")
		lambda.Start(tracing.Invocations(fn.Tracing, httpapi.Recover(log, (&Handler{Log: log, Now: time.Now, Docs: cfg.Docs}).Handle)))
		return
	}
	aws := fn.AWS
	db := awsenv.NewTables(aws)
	ledger := store.NewLedger(db, cfg.LedgerTable, time.Now)
	alerts := fn.Alerter(cfg.AlertsTopic, ledger)
	orders := store.NewOrders(db, cfg.OrdersTable, time.Now)
	auditor := &audit.Recorder{Writer: audit.NewWriter(awsenv.S3(aws), cfg.AuditBucket), Alerts: alerts, Log: log}
	generate := queue.NewSender(queue.NewClient(aws), cfg.GenerateQueue, time.Now)
	h := &Handler{
		Networks: cfg.Networks, PayTo: cfg.PayTo, SmokePayer: cfg.SmokePayer, MaxTimeout: cfg.MaxTimeout, SettleRoom: cfg.SettleRoom,
		SettleAttempts: cfg.SettleAttempts, Wait: cfg.Wait, Poll: 250 * time.Millisecond, Reserve: 2 * time.Second,
		BaseURL: cfg.BaseURL, Retention: cfg.Retention, Lease: cfg.JobLease,
		// The reference's clients wait 30 s for a settlement; ours must
		// leave the request time to answer within API Gateway's 30 s.
		Facilitator:    x402rail.NewFacilitator(cfg.FacilitatorURL, &http.Client{Timeout: 12 * time.Second}, cfg.FacilitatorKey),
		Authorizations: ledger,
		PaymentIDs:     ledger,
		Junk:           ledger,
		Orders:         orders,
		Verdicts:       &repair.Guard{Orders: orders, Hash: cfg.Hasher.Hash, Generate: generate, Alerts: alerts, Log: log},
		Payer: &fulfil.Service{Orders: orders, Generate: generate, Audit: auditor, Alerts: alerts, Metrics: fn.Metrics,
			Hasher: cfg.Hasher, Log: log, Now: time.Now, Lease: cfg.JobLease, Retention: cfg.Retention},
		Audit:   auditor,
		Alerts:  alerts,
		Metrics: fn.Metrics,
		Hasher:  cfg.Hasher,
		Log:     log,
		Now:     time.Now,
		Sleep:   wait.Sleep,
		Random:  rand.Reader,
		Docs:    cfg.Docs,
	}
	// The paid routes' 402s are encoded here, in the init phase, not in
	// the first request's time.
	h.offers()
	lambda.Start(tracing.Invocations(fn.Tracing, httpapi.Recover(log, h.Handle)))
}
