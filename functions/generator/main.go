// Command generator is the Lambda function on the generate queue: it leases
// a paid order, asks the model for the verdict, validates and stores it as
// the order's one verdict, audits it and only then queues its email.
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
	"42sisters.ai/oracle/shared/gemini"
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
	model, err := gemini.New(ctx, gemini.Options{APIKey: cfg.GeminiKey, Model: cfg.GeminiModel, BaseURL: cfg.GeminiBase, Timeout: cfg.CallTimeout})
	if err != nil {
		log.Error("cold start failed", "error", err.Error())
		os.Exit(1)
	}
	db := dynamodb.NewFromConfig(aws)
	h := &Handler{
		Orders: store.NewOrders(db, cfg.OrdersTable, time.Now),
		Model:  model,
		Mail:   queue.NewSender(sqs.NewFromConfig(aws), cfg.MailQueue, time.Now),
		Audit:  audit.NewWriter(awsenv.S3(aws), cfg.AuditBucket),
		Alerts: &alert.Alerter{
			SNS: sns.NewFromConfig(aws), Topic: cfg.AlertsTopic,
			Dedupe:  store.NewLedger(db, cfg.LedgerTable, time.Now),
			Metrics: obs.NewMetrics(os.Stdout, "Oracle", time.Now), Log: log,
		},
		Hasher:      cfg.Hasher,
		Log:         log,
		Now:         time.Now,
		Retention:   cfg.Retention,
		CallTimeout: cfg.CallTimeout,
		Reserve:     5 * time.Second,
		MaxReceives: cfg.MaxReceives,
	}
	lambda.Start(h.Handle)
}
