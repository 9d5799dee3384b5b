// Command ops is the operator's hands: actions on orders (list, show,
// deliver, rerun, refund, resend, redrive), on the audit log (report,
// seal, verify-seal), on the support inbox (inbox: print a message) and on
// Sisters Chat's accounts (chat, chat-grant, chat-refund, chat-erase),
// invoked with `sam remote invoke OpsFunction -e events/ops/<action>.json`
// or `make ops ACTION=…`, and daily, to seal the audit log's previous day.
// It has no HTTP route.
package main

import (
	"cmp"
	"context"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/auditfigures"
	"42sisters.ai/oracle/shared/auditseal"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/chat"
	"42sisters.ai/oracle/shared/coldstart"
	"42sisters.ai/oracle/shared/fulfil"
	"42sisters.ai/oracle/shared/inbox"
	"42sisters.ai/oracle/shared/quarantine"
	"42sisters.ai/oracle/shared/queue"
	"42sisters.ai/oracle/shared/repair"
	"42sisters.ai/oracle/shared/secret"
	"42sisters.ai/oracle/shared/sosfilter"
	"42sisters.ai/oracle/shared/store"
	"42sisters.ai/oracle/shared/stripex"
	"42sisters.ai/oracle/shared/subscription"
	"42sisters.ai/oracle/shared/tracing"
)

func main() {
	sosfilter.Prepare() // built while the settings' secrets are read
	fn, cfg := coldstart.Start(loadConfig)
	log, aws := fn.Log, fn.AWS
	db, queries, s3 := awsenv.NewTables(aws), awsenv.NewQueries(aws), awsenv.S3(aws)
	sq := queue.NewClient(aws)
	ledger := store.NewLedger(db, cfg.LedgerTable, time.Now)
	alerts := fn.Alerter(cfg.AlertsTopic, ledger)
	// One Stripe client per mode whose key is configured: it finds a
	// customer's sessions, and the report compares the log's paid sessions
	// with its list; refunds have a client of their own.
	opts := stripex.Options{BaseURL: cfg.StripeAPIBase, Retries: 2}
	clients := map[bool]*stripex.Client{}
	paidLists := map[bool]auditfigures.SessionLister{}
	for live, key := range map[bool]*secret.Value{true: cfg.StripeLive, false: cfg.StripeTest} {
		if key != nil {
			clients[live] = stripex.NewWithKey(key, opts)
			paidLists[live] = clients[live]
		}
	}
	filter, err := sosfilter.Shared()
	fn.Check(err, "the content filter")
	orders := store.NewOrders(db, cfg.OrdersTable, time.Now)
	generate := queue.NewSender(sq, cfg.GenerateQueue, time.Now)
	auditor := &audit.Recorder{Writer: audit.NewWriter(s3, cfg.AuditBucket), Alerts: alerts, Log: log}
	h := &Handler{
		Orders:      orders,
		Index:       store.NewOrderIndex(queries, cfg.OrdersTable),
		Records:     audit.NewReader(s3, cfg.AuditBucket),
		Generate:    generate,
		Mail:        queue.NewSender(sq, cfg.MailQueue, time.Now),
		Audit:       auditor,
		Hasher:      cfg.Hasher,
		Verdicts:    &repair.Guard{Orders: orders, Hash: cfg.Hasher.Hash, Generate: generate, Alerts: alerts, Log: log},
		Cleaner:     filter,
		Quarantined: quarantine.NewReader(s3, cfg.QuarantineBucket),
		Dead:        store.NewDeadLetters(queries, cfg.LedgerTable),
		Ledger:      ledger,
		DeadQueues: map[string]DeadQueue{
			"generate":  {Name: queueName(cfg.DeadLetters), Source: queue.NewSender(sq, cfg.GenerateQueue, time.Now), Takes: generateJob},
			"mail-jobs": {Name: queueName(cfg.DeadLetters), Source: queue.NewSender(sq, cfg.MailQueue, time.Now), Takes: mailJob},
		},
		Seals: auditseal.New(s3, cfg.AuditBucket, cfg.Lock, time.Now),
		Figures: func(ctx context.Context, from, to time.Time) (auditfigures.Figures, error) {
			return auditfigures.ComputeAgainstStripe(ctx, s3, cfg.AuditBucket, from, to, paidLists)
		},
		Inbox:      inbox.NewMessages(s3, cfg.InboxBucket),
		Log:        log,
		Now:        time.Now,
		StuckAfter: cfg.StuckAfter,
		Retention:  cfg.Retention,
		Claims:     orders,
		Payer: &fulfil.Service{Orders: orders, Generate: generate, Audit: auditor, Alerts: alerts, Metrics: fn.Metrics,
			Hasher: cfg.Hasher, Log: log, Now: time.Now, Lease: fulfil.DefaultLease, Retention: cfg.Retention},
	}
	// Sisters Chat's accounts, and its billing with the main key
	// (STRIPE_SECRET_KEY), the one the chat function subscribes with.
	accounts := chat.NewStore(db, cfg.ChatTable, cfg.Hasher, time.Now)
	h.Chat, h.ChatSubs, h.ChatDailyCap = accounts, subscription.NewStore(db, queries, cfg.ChatTable), cfg.ChatDailyCap
	h.ChatMessages = accounts.Conversation(chat.NewClient(aws), 0)
	if key := cmp.Or(cfg.StripeLive, cfg.StripeTest); key != nil {
		h.ChatBilling, h.ChatRefunds = stripex.NewBilling(key, opts), stripex.NewRefundsWithKey(key, opts)
	}
	if cfg.StripeLive != nil {
		h.Live, h.LiveCustomers = stripex.NewRefundsWithKey(cfg.StripeLive, opts), clients[true]
	}
	if cfg.StripeTest != nil {
		h.Test, h.TestCustomers = stripex.NewRefundsWithKey(cfg.StripeTest, opts), clients[false]
	}
	lambda.Start(tracing.Invocations(fn.Tracing, h.Handle))
}
