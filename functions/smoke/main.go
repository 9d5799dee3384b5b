// Command smoke is the end-to-end smoke test of the deployed pipeline,
// daily at 07:00 UTC and on demand: a test-mode session through the
// deployed checkout and webhook to the stored verdict, the verdict API,
// the email and the audit log, and the agent rail paid on Base Sepolia as
// an agent pays it, then cleaned away.
package main

import (
	"context"
	"encoding/json"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"

	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/coldstart"
	"42sisters.ai/oracle/shared/config"
	"42sisters.ai/oracle/shared/smoke"
	"42sisters.ai/oracle/shared/store"
	"42sisters.ai/oracle/shared/tracing"
)

func main() {
	load := func(ctx context.Context, a aws.Config) (smoke.Settings, error) {
		return smoke.LoadSettings(ctx, config.FromEnviron(config.NewAWSSecrets(a)))
	}
	fn, cfg := coldstart.Start(load)
	ses := sesv2.NewFromConfig(fn.AWS)
	_, err := smoke.NewRunner(cfg, fn.AWS, ses)
	fn.Check(err, "the smoke runner")
	runner := Fresh{
		Load:  func(ctx context.Context) (smoke.Settings, error) { return load(ctx, fn.AWS) },
		Build: func(s smoke.Settings) (Runner, error) { return smoke.NewRunner(s, fn.AWS, ses) },
		Now:   time.Now,
	}
	ledger := store.NewLedger(awsenv.NewTables(fn.AWS), cfg.LedgerTable, time.Now)
	h := &Handler{Runner: runner, Alerts: fn.Alerter(cfg.AlertsTopic, ledger), Metrics: fn.Metrics, Log: fn.Log}
	lambda.Start(tracing.Invocations(fn.Tracing, func(ctx context.Context, _ json.RawMessage) (smoke.Report, error) { return h.Handle(ctx) }))
}
