// Command generator is the Lambda function on the generate queue: it leases
// a paid order, asks the model for the verdict, validates and stores it as
// the order's one verdict, audits it and only then queues its email.
package main

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/circuit"
	"42sisters.ai/oracle/shared/coldstart"
	"42sisters.ai/oracle/shared/gemini"
	"42sisters.ai/oracle/shared/quarantine"
	"42sisters.ai/oracle/shared/queue"
	"42sisters.ai/oracle/shared/sosfilter"
	"42sisters.ai/oracle/shared/store"
	"42sisters.ai/oracle/shared/tracing"
)

func main() {
	ctx := context.Background()
	sosfilter.Prepare() // built while the settings' secrets are read
	fn, cfg := coldstart.Start(loadConfig)
	log, aws := fn.Log, fn.AWS
	client, err := gemini.New(ctx, gemini.Options{Key: cfg.GeminiKey, Model: cfg.GeminiModel, BaseURL: cfg.GeminiBase, Timeout: cfg.CallTimeout})
	fn.Check(err, "the model client")
	caller := &gemini.Caller{Primary: client, Policy: gemini.Policy{CallTimeout: cfg.CallTimeout, BackoffBase: cfg.BackoffBase},
		Rand: rand.Float64, Now: time.Now, Log: log, Metrics: fn.Metrics}
	if cfg.GeminiFallback != "" {
		fallback, err := gemini.New(ctx, gemini.Options{Key: cfg.GeminiKey, Model: cfg.GeminiFallback, BaseURL: cfg.GeminiBase, Timeout: cfg.CallTimeout})
		fn.Check(err, "the fallback model client")
		caller.Fallback = fallback
	}
	filter, err := sosfilter.Shared()
	fn.Check(err, "the content filter's block list is unusable")
	db := awsenv.NewTables(aws)
	queues := queue.NewClient(aws)
	ledger := store.NewLedger(db, cfg.LedgerTable, time.Now)
	alerts := fn.Alerter(cfg.AlertsTopic, ledger)
	key := &KeyHealth{Check: client.CheckKey, Recheck: cfg.KeyRecheck, Alerts: alerts, Now: time.Now}
	checkCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	if !key.Verify(checkCtx) {
		log.Error("generator unhealthy: the model refused the API key; jobs are parked")
	}
	cancel()
	h := &Handler{
		Orders:            store.NewOrders(db, cfg.OrdersTable, time.Now),
		Model:             caller,
		Circuit:           circuit.New(db, cfg.LedgerTable, "gemini", cfg.Circuit.Measured(fn.Metrics), time.Now),
		Key:               key,
		Mail:              queue.NewSender(queues, cfg.MailQueue, time.Now),
		Requeue:           queue.NewSender(queues, cfg.GenerateQueue, time.Now),
		Audit:             &audit.Recorder{Writer: audit.NewWriter(awsenv.S3(aws), cfg.AuditBucket), Alerts: alerts, Log: log},
		Alerts:            alerts,
		Filter:            filter,
		Quarantine:        quarantine.NewStore(awsenv.S3(aws), cfg.QuarantineBucket),
		Originals:         ledger,
		OriginalRetention: cfg.OriginalRetention,
		Hasher:            cfg.Hasher,
		Metrics:           fn.Metrics,
		Log:               log,
		Now:               time.Now,
		Rand:              rand.Float64,
		Retention:         cfg.Retention,
		CallTimeout:       cfg.CallTimeout,
		MaxReceives:       cfg.MaxReceives,
		ParkingBudget:     cfg.ParkingBudget,
		RetryBase:         cfg.RetryBase,
	}
	lambda.Start(tracing.Invocations(fn.Tracing, h.Handle))
}
