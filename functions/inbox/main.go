// Command inbox reads the messages that reach the support address: SES's
// receipt rule stores each one and invokes it, or (MAIL_TRANSPORT=graph) a
// schedule has it poll the Microsoft 365 mailbox. Every new message is put
// in front of the operator with its order, and the sender is acknowledged
// once (a mail job for the mailer), never twice in 24 hours.
package main

import (
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/coldstart"
	"42sisters.ai/oracle/shared/inbox"
	"42sisters.ai/oracle/shared/mail"
	"42sisters.ai/oracle/shared/queue"
	"42sisters.ai/oracle/shared/sosfilter"
	"42sisters.ai/oracle/shared/store"
	"42sisters.ai/oracle/shared/tracing"
)

func main() {
	sosfilter.Prepare() // built while the settings' secrets are read
	fn, cfg := coldstart.Start(loadConfig)
	log, aws := fn.Log, fn.AWS
	filter, err := sosfilter.Shared()
	fn.Check(err, "the content filter's block list is unusable")
	db := awsenv.NewTables(aws)
	buckets := awsenv.S3(aws) // the inbox bucket and the audit log
	ledger := store.NewLedger(db, cfg.LedgerTable, time.Now)
	alerts := fn.Alerter(cfg.AlertsTopic, ledger)
	messages := inbox.NewMessages(buckets, cfg.InboxBucket)
	core := &Core{
		Ledger: ledger, Orders: store.NewOrders(db, cfg.OrdersTable, time.Now),
		Sent:   store.NewSentMessages(awsenv.NewQueries(aws), cfg.OrdersTable, ledger),
		Mail:   queue.NewSender(queue.NewClient(aws), cfg.MailQueue, time.Now),
		Alerts: alerts, Audit: &audit.Recorder{Writer: audit.NewWriter(buckets, cfg.AuditBucket), Alerts: alerts, Log: log},
		Filter: filter, Hasher: cfg.Hasher, Policy: cfg.Policy,
		Cooldown: cfg.Cooldown, Retention: cfg.Retention, Lease: DefaultLease, Log: log, Now: time.Now,
	}
	h := &Handler{Core: core, Messages: messages, Alerts: alerts, Log: log,
		Failures: store.NewDeadLetters(awsenv.NewQueries(aws), cfg.LedgerTable), Releaser: ledger, FailureQueue: cfg.FailureQueue}
	if cfg.Graph != nil {
		g, err := mail.NewGraph(*cfg.Graph)
		fn.Check(err, "the Graph client")
		p := &Poller{Graph: g, Mailbox: cfg.Mailbox, Lookback: cfg.Lookback, State: ledger, Store: messages, Core: core,
			Alerts: alerts, FailureAlertEvery: time.Hour, Log: log, Now: time.Now}
		h.Poll = p.Poll
	}
	lambda.Start(tracing.Invocations(fn.Tracing, h.Handle))
}
