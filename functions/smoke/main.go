// Command smoke is the end-to-end smoke test of the deployed pipeline,
// daily at 07:00 UTC and on demand: a test-mode session through the
// deployed checkout and webhook to the stored verdict, the verdict API,
// the email and the audit log, then cleaned away.
package main

import (
	"context"
	"net/http"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"

	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/coldstart"
	"42sisters.ai/oracle/shared/mail"
	"42sisters.ai/oracle/shared/smoke"
	"42sisters.ai/oracle/shared/store"
	"42sisters.ai/oracle/shared/stripex"
)

func main() {
	fn, cfg := coldstart.Start(loadConfig)
	log, aws := fn.Log, fn.AWS
	db := awsenv.NewTables(aws)
	ledger := store.NewLedger(db, cfg.LedgerTable, time.Now)
	orders := store.NewOrders(db, cfg.OrdersTable, time.Now)
	s3 := awsenv.S3(aws)
	email := smoke.SESProbe(sesv2.NewFromConfig(aws))
	if cfg.Graph != nil {
		g, err := mail.NewGraph(*cfg.Graph)
		fn.Check(err, "the Graph transport")
		email = smoke.GraphProbe(g)
	}
	h := &Handler{
		Runner: &smoke.Runner{
			StripeKey: cfg.StripeKey, SigningSecret: cfg.SigningSecret, APIURL: cfg.APIURL,
			HTTP:     &http.Client{Timeout: 10 * time.Second},
			Sessions: stripex.New(cfg.StripeKey, stripex.Options{BaseURL: cfg.StripeAPIBase, Retries: 1}),
			Stores:   smoke.StoresProbe(orders, ledger, s3, cfg.AuditBucket),
			Email:    email,
			Orders:   orders,
			Audit:    audit.NewReader(s3, cfg.AuditBucket),
		},
		Alerts:  fn.Alerter(cfg.AlertsTopic, ledger),
		Metrics: fn.Metrics,
		Log:     log,
	}
	lambda.Start(func(ctx context.Context) (smoke.Report, error) { return h.Handle(ctx) })
}
