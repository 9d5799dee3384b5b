// Command mailer is the Lambda function on the mail queue: it renders the
// stored verdict (or a notice) for the session, reads the recipient from
// Stripe at send time and sends it through SES or Microsoft Graph, at most
// once per session and mail kind, on the retry schedule; likewise the
// support inbox's acknowledgements and Sisters Chat's emails (a chat
// account's address read from the chat table, a sign-in link minted as
// the email leaves).
package main

import (
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/chat"
	"42sisters.ai/oracle/shared/coldstart"
	"42sisters.ai/oracle/shared/inbox"
	"42sisters.ai/oracle/shared/mail"
	"42sisters.ai/oracle/shared/quarantine"
	"42sisters.ai/oracle/shared/queue"
	"42sisters.ai/oracle/shared/repair"
	"42sisters.ai/oracle/shared/sosfilter"
	"42sisters.ai/oracle/shared/store"
	"42sisters.ai/oracle/shared/stripex"
	"42sisters.ai/oracle/shared/tracing"
)

func main() {
	sosfilter.Prepare() // built while the settings' secrets are read
	fn, cfg := coldstart.Start(loadConfig)
	log, aws := fn.Log, fn.AWS
	filter, err := sosfilter.Shared()
	fn.Check(err, "the content filter's block list is unusable")
	db := awsenv.NewTables(aws)
	queues := queue.NewClient(aws)
	buckets := awsenv.S3(aws) // the audit log, the quarantine and inbox buckets
	ledger := store.NewLedger(db, cfg.LedgerTable, time.Now)
	alerts := fn.Alerter(cfg.AlertsTopic, ledger)
	var transport Transport = &mail.SES{Client: mail.NewClient(aws), ConfigurationSet: cfg.ConfigurationSet, Now: time.Now}
	transportName := "SES"
	if cfg.Graph != nil {
		g, err := mail.NewGraph(*cfg.Graph)
		fn.Check(err, "the Graph transport")
		transport, transportName = g, "Graph"
	}
	orders := store.NewOrders(db, cfg.OrdersTable, time.Now)
	h := &Handler{
		Orders:              orders,
		Ledger:              ledger,
		Transport:           transport,
		TransportName:       transportName,
		Schedule:            cfg.Schedule,
		BlockedRetry:        cfg.BlockedRetry,
		DeadLetterRetention: cfg.DeadLetterRetention,
		SentRetention:       DefaultSentRetention,
		ReplyRetention:      DefaultReplyRetention,
		Inbox:               inbox.NewMessages(buckets, cfg.InboxBucket),
		Chat:                chat.NewStore(db, cfg.ChatTable, cfg.Hasher, time.Now),
		ChatMailRetention:   DefaultChatMailRetention,
		Audit:               &audit.Recorder{Writer: audit.NewWriter(buckets, cfg.AuditBucket), Alerts: alerts, Log: log},
		Alerts:              alerts,
		Verdicts:            &repair.Guard{Orders: orders, Hash: cfg.Hasher.Hash, Generate: queue.NewSender(queues, cfg.GenerateQueue, time.Now), Alerts: alerts, Log: log},
		Filter:              filter,
		Quarantine:          quarantine.NewStore(buckets, cfg.QuarantineBucket),
		Mail:                queue.NewSender(queues, cfg.MailQueue, time.Now),
		Hasher:              cfg.Hasher,
		Brand:               cfg.Brand,
		BaseURL:             cfg.BaseURL,
		Metrics:             fn.Metrics,
		Log:                 log,
		Now:                 time.Now,
		Lease:               DefaultLease,
	}
	if cfg.StripeLive != nil {
		h.Live = stripex.NewWithKey(cfg.StripeLive, stripex.Options{BaseURL: cfg.StripeAPIBase, Retries: 1})
	}
	if cfg.StripeTest != nil {
		h.Test = stripex.NewWithKey(cfg.StripeTest, stripex.Options{BaseURL: cfg.StripeAPIBase, Retries: 1})
	}
	lambda.Start(tracing.Invocations(fn.Tracing, h.Handle))
}
