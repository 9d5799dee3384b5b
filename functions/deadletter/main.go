// Command deadletter is the Lambda function on the dead-letter queues: every
// message that reaches one (a garbage job, or a job whose function failed on
// every delivery) leaves a record in the Ledger saying what it was and which
// session it concerned, and raises its own CRITICAL alert, once.
package main

import (
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/coldstart"
	"42sisters.ai/oracle/shared/store"
	"42sisters.ai/oracle/shared/tracing"
)

func main() {
	fn, cfg := coldstart.Start(loadConfig)
	// No dedupe window: the record's conditional write already raises one
	// alert per message, and two messages of one session (its generate and
	// its mail job) dying within a minute must both be seen.
	alerts := fn.Alerter(cfg.AlertsTopic, nil)
	h := &Handler{
		Records:   store.NewLedger(awsenv.NewTables(fn.AWS), cfg.LedgerTable, time.Now),
		Alerts:    alerts,
		Retention: cfg.Retention,
		Metrics:   fn.Metrics,
		Log:       fn.Log,
	}
	lambda.Start(tracing.Invocations(fn.Tracing, h.Handle))
}
