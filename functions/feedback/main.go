// Command feedback is the Lambda function on the mail events queue: SES's
// events about each sent email (delivered, bounced, complained, rejected)
// move the email's state on its order, put complaining addresses on the
// suppression list, and tell the operator of bounces and complaints.
package main

import (
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/coldstart"
	"42sisters.ai/oracle/shared/store"
	"42sisters.ai/oracle/shared/tracing"
	"42sisters.ai/oracle/shared/wait"
)

func main() {
	fn, cfg := coldstart.Start(loadConfig)
	db := awsenv.NewTables(fn.AWS)
	ledger := store.NewLedger(db, cfg.LedgerTable, time.Now)
	h := &Handler{
		Orders:      store.NewOrders(db, cfg.OrdersTable, time.Now),
		Suppression: ledger,
		Alerts:      fn.Alerter(cfg.AlertsTopic, ledger),
		Hasher:      cfg.Hasher,
		Metrics:     fn.Metrics,
		Log:         fn.Log,
		Sleep:       wait.Sleep,
		RecordWait:  DefaultRecordWait,
	}
	lambda.Start(tracing.Invocations(fn.Tracing, h.Handle))
}
