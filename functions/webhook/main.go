// Command webhook is the Lambda function behind POST /api/webhook: it
// verifies Stripe's events and turns paid Checkout Sessions into orders with
// one queued generation job each.
package main

import (
	"context"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/fulfil"
	"42sisters.ai/oracle/shared/httpapi"
	"42sisters.ai/oracle/shared/obs"
	"42sisters.ai/oracle/shared/queue"
	"42sisters.ai/oracle/shared/store"
)

func main() {
	ctx := context.Background()
	log := obs.NewLogger(os.Stdout, os.Getenv("LOG_LEVEL"))
	aws, err := awsenv.Load(ctx)
	if err != nil {
		log.Error("cold start failed", "error", err.Error())
		os.Exit(1)
	}
	cfg, err := loadConfig(ctx, aws)
	if err != nil {
		log.Error("cold start failed", "error", err.Error())
		os.Exit(1)
	}
	db := dynamodb.NewFromConfig(aws)
	sq := sqs.NewFromConfig(aws)
	ledger := store.NewLedger(db, cfg.LedgerTable, time.Now)
	metrics := obs.NewMetrics(os.Stdout, "Oracle", time.Now)
	alerts := &alert.Alerter{SNS: sns.NewFromConfig(aws), Topic: cfg.AlertsTopic, Dedupe: ledger, Metrics: metrics, Log: log}
	if cfg.Secrets.Live == "" && cfg.Secrets.Test == "" {
		log.Error("no webhook signing secret configured: every event will be refused with 503")
	}
	h := &Handler{
		Secrets: cfg.Secrets,
		Ledger:  ledger,
		Alerts:  alerts,
		Metrics: metrics,
		Log:     log,
		Now:     time.Now,
		Fulfil: &fulfil.Service{
			Orders:    store.NewOrders(db, cfg.OrdersTable, time.Now),
			Generate:  queue.NewSender(sq, cfg.GenerateQueue, time.Now),
			Mail:      queue.NewSender(sq, cfg.MailQueue, time.Now),
			Audit:     audit.NewWriter(awsenv.S3(aws), cfg.AuditBucket),
			Alerts:    alerts,
			Metrics:   metrics,
			Hasher:    cfg.Hasher,
			Log:       log,
			Now:       time.Now,
			Lease:     cfg.JobLease,
			Retention: cfg.Retention,
		},
	}
	lambda.Start(httpapi.Recover(log, h.Handle))
}
