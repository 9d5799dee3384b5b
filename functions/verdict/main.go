// Command verdict is the Lambda function behind GET /api/verdict: the
// result page's one source of the verdict. It serves the stored verdict,
// claims a paid session the webhook has not reached yet, and queues a
// regeneration for an expired verdict; it never calls the model. It also
// answers GET /api/health, the health job's latest record summed up for
// uptime monitors.
package main

import (
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
	"42sisters.ai/oracle/shared/stripex"
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
	orders := store.NewOrders(db, cfg.OrdersTable, time.Now)
	auditor := &audit.Recorder{Writer: audit.NewWriter(awsenv.S3(aws), cfg.AuditBucket), Alerts: alerts, Log: log}
	generate := queue.NewSender(sq, cfg.GenerateQueue, time.Now)
	h := &Handler{
		Orders: orders,
		Fulfil: &fulfil.Service{
			Orders: orders, Generate: generate, Mail: queue.NewSender(sq, cfg.MailQueue, time.Now),
			Audit: auditor, Alerts: alerts, Metrics: metrics, Hasher: cfg.Hasher, Log: log, Now: time.Now,
			Lease: cfg.JobLease, Retention: cfg.Retention,
		},
		Regen:     ledger,
		Originals: ledger,
		Generate:  generate,
		Audit:     auditor,
		Alerts:    alerts,
		Verdicts:  &repair.Guard{Orders: orders, Hash: cfg.Hasher.Hash, Generate: generate, Alerts: alerts, Log: log},
		Metrics:   metrics,
		Hasher:    cfg.Hasher,
		Log:       log,
		Now:       time.Now,
		Support:   cfg.Support,
		Retention: cfg.Retention,
		Health:    &HealthEndpoint{Records: ledger, Period: cfg.HealthPeriod, Log: log, Now: time.Now},
	}
	if cfg.StripeLive != nil {
		h.Live = stripex.NewWithKey(cfg.StripeLive, stripex.Options{BaseURL: cfg.StripeAPIBase, Retries: 1})
	}
	if cfg.StripeTest != nil {
		h.Test = stripex.NewWithKey(cfg.StripeTest, stripex.Options{BaseURL: cfg.StripeAPIBase, Retries: 1})
	}
	lambda.Start(tracing.Invocations(fn.Tracing, httpapi.Recover(log, h.Handle)))
}
