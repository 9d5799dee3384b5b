// Command checkout is the Lambda function behind POST /api/checkout: it
// validates the tier and query and creates the Stripe Checkout Session.
package main

import (
	"context"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sns"

	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/httpapi"
	"42sisters.ai/oracle/shared/obs"
	"42sisters.ai/oracle/shared/store"
	"42sisters.ai/oracle/shared/stripex"
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
	h := &Handler{
		Stripe:  stripex.New(cfg.StripeKey, stripex.Options{BaseURL: cfg.StripeAPIBase, Retries: 1}),
		BaseURL: cfg.BaseURL,
		CORS:    httpapi.CORS{Origins: cfg.AllowedOrigins, Methods: "POST, OPTIONS"},
		Log:     log,
		Alerts: &alert.Alerter{
			SNS:     sns.NewFromConfig(aws),
			Topic:   cfg.AlertsTopic,
			Dedupe:  store.NewLedger(dynamodb.NewFromConfig(aws), cfg.LedgerTable, time.Now),
			Metrics: obs.NewMetrics(os.Stdout, "Oracle", time.Now),
			Log:     log,
		},
	}
	lambda.Start(httpapi.Recover(log, h.Handle))
}
