// Command chat is the Lambda function behind Sisters Chat: the page at
// GET /chat, the sign-in link's page at GET /chat/signin and its button at
// POST /chat/signin, and the API under /api/chat (sign-in requests,
// messages, the conversation and its deletion, the subscription's Checkout
// and portal, sign-out, the account's erasure). An account is the keyed
// hash of the address's canonical form; its trial (under the trial
// identity's keyed hash), grants and daily cap are counted with
// conditional writes in the chat table; the model, the subscriptions and
// Stripe's sessions come through wire.go.
package main

import (
	"context"
	"crypto/rand"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/chat"
	"42sisters.ai/oracle/shared/coldstart"
	"42sisters.ai/oracle/shared/httpapi"
	"42sisters.ai/oracle/shared/queue"
	"42sisters.ai/oracle/shared/sosfilter"
	"42sisters.ai/oracle/shared/store"
	"42sisters.ai/oracle/shared/tracing"
)

func main() {
	sosfilter.Prepare() // built while the settings' secrets are read
	fn, cfg := coldstart.Start(loadConfig)
	log := fn.Log
	aws := fn.AWS
	db := awsenv.NewTables(aws)
	ledger := store.NewLedger(db, cfg.LedgerTable, time.Now)
	alerts := fn.Alerter(cfg.AlertsTopic, ledger)
	accounts := chat.NewStore(db, cfg.ChatTable, cfg.Hasher, time.Now)
	deps, err := wire(context.Background(), fn, cfg, alerts)
	fn.Check(err, "chat dependencies")
	h := &Handler{
		Site: cfg.Site, Support: cfg.Support, Origin: cfg.Origin, CookieKey: cfg.CookieKey,
		RetentionDays: cfg.RetentionDays, DailyCap: cfg.DailyCap,
		HistoryChars: HistoryChars, ShowChars: ShowChars, ReplyTimeout: cfg.ReplyTimeout,
		SignInPerAccount: chat.SignInPerAccount, SignInPerClient: chat.SignInPerClient,
		NewTrialsPerDay: cfg.NewTrials, GiveBacksPerDay: chat.GiveBacksPerDay,
		Accounts:      accounts,
		Conversations: accounts.Conversation(chat.NewClient(aws), cfg.Retention),
		Mail:          queue.NewSender(queue.NewClient(aws), cfg.MailQueue, time.Now),
		Replier:       deps.Replier,
		Subscriptions: deps.Subscriptions,
		Billing:       deps.Billing,
		Canceller:     deps.Canceller,
		Audit:         &audit.Recorder{Writer: audit.NewWriter(awsenv.S3(aws), cfg.AuditBucket), Alerts: alerts, Log: log},
		Alerts:        alerts,
		Metrics:       fn.Metrics,
		Hasher:        cfg.Hasher,
		Log:           log,
		Now:           time.Now,
		Random:        rand.Reader,
	}
	lambda.Start(tracing.Invocations(fn.Tracing, httpapi.Recover(log, h.Handle)))
}
