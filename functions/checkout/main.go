// Command checkout is the Lambda function behind POST /api/checkout: it
// validates the tier and query and creates the Stripe Checkout Session.
package main

import (
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/coldstart"
	"42sisters.ai/oracle/shared/httpapi"
	"42sisters.ai/oracle/shared/store"
	"42sisters.ai/oracle/shared/stripex"
	"42sisters.ai/oracle/shared/tracing"
)

func main() {
	fn, cfg := coldstart.Start(loadConfig)
	log, aws := fn.Log, fn.AWS
	h := &Handler{
		Stripe:  stripex.NewWithKey(cfg.StripeKey, stripex.Options{BaseURL: cfg.StripeAPIBase, Retries: 1}),
		BaseURL: cfg.BaseURL,
		CORS:    httpapi.CORS{Origins: cfg.AllowedOrigins, Methods: "POST, OPTIONS"},
		Log:     log,
		Alerts:  fn.Alerter(cfg.AlertsTopic, store.NewLedger(awsenv.NewTables(aws), cfg.LedgerTable, time.Now)),
	}
	if cfg.Smoke != nil {
		h.Smoke = &Smoke{
			Stripe:        stripex.NewWithKey(cfg.Smoke.Key, stripex.Options{BaseURL: cfg.StripeAPIBase, Retries: 1}),
			SigningSecret: cfg.Smoke.SigningSecret,
			Email:         cfg.Smoke.Email,
		}
	}
	lambda.Start(tracing.Invocations(fn.Tracing, httpapi.Recover(log, h.Handle)))
}
