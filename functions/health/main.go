// Command health is the scheduled health job (every HEALTH_PERIOD): it
// checks the stores, the queues, the email transport, the model, Stripe and,
// with the agent rail on, the x402 facilitator; samples the stored
// verdicts, finds the paid orders left behind and sends what they are owed
// again, claims the paid sessions whose webhook never arrived, repairs the
// chat subscriptions whose events were lost, reminds the operator of the
// orders waiting for them, and keeps the run's record for the health
// endpoint.
package main

import (
	"net/http"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/circuit"
	"42sisters.ai/oracle/shared/coldstart"
	"42sisters.ai/oracle/shared/fulfil"
	"42sisters.ai/oracle/shared/geminikey"
	"42sisters.ai/oracle/shared/mail"
	"42sisters.ai/oracle/shared/queue"
	"42sisters.ai/oracle/shared/repair"
	"42sisters.ai/oracle/shared/store"
	"42sisters.ai/oracle/shared/stripex"
	"42sisters.ai/oracle/shared/subscription"
	"42sisters.ai/oracle/shared/tracing"
	"42sisters.ai/oracle/shared/wait"
	"42sisters.ai/oracle/shared/x402rail"
)

func main() {
	fn, cfg := coldstart.Start(loadConfig)
	log, aws := fn.Log, fn.AWS
	db := awsenv.NewTables(aws)
	ledger := store.NewLedger(db, cfg.LedgerTable, time.Now)
	orders := store.NewOrders(db, cfg.OrdersTable, time.Now)
	queries := awsenv.NewQueries(aws)
	index := store.NewOrderIndex(queries, cfg.OrdersTable)
	alerts := fn.Alerter(cfg.AlertsTopic, ledger)
	auditWriter := audit.NewWriter(awsenv.S3(aws), cfg.AuditBucket).KeepHealthHistory(cfg.HealthHistory, cfg.LockMode, time.Now)
	queues := queue.NewClient(aws)
	sqsClient := sqs.NewFromConfig(aws)
	var cw MetricsAPI
	if cfg.QueueAges {
		cw = cloudwatch.NewFromConfig(aws)
	}
	model, err := geminikey.New(geminikey.Options{Key: cfg.GeminiKey, Model: cfg.GeminiModel, BaseURL: cfg.GeminiBase})
	fn.Check(err, "the model key check")

	sessions := map[bool]Sessions{}
	pingers := map[string]StripePinger{}
	billing := map[bool]ChatBilling{}
	if cfg.StripeLive != nil {
		c := stripex.NewWithKey(cfg.StripeLive, stripex.Options{BaseURL: cfg.StripeAPIBase})
		sessions[true], pingers["live"] = c, c
		billing[true] = stripex.NewBilling(cfg.StripeLive, stripex.Options{BaseURL: cfg.StripeAPIBase})
	}
	if cfg.StripeTest != nil {
		c := stripex.NewWithKey(cfg.StripeTest, stripex.Options{BaseURL: cfg.StripeAPIBase})
		sessions[false], pingers["test"] = c, c
		billing[false] = stripex.NewBilling(cfg.StripeTest, stripex.Options{BaseURL: cfg.StripeAPIBase})
	}

	h := &Handler{States: ledger, Alerts: alerts, Metrics: fn.Metrics, Log: log, Now: time.Now, Sleep: wait.Sleep,
		RetryDelay: cfg.RetryDelay, FailCritical: cfg.FailCritical, History: 24 * time.Hour}
	checks := []Check{
		tableCheck(index, orders),
		ledgerCheck(ledger, time.Now),
		auditCheck(auditWriter, time.Now),
	}
	for _, q := range cfg.Queues {
		checks = append(checks, queueCheck(sqsClient, cw, q, time.Now))
	}
	for _, q := range cfg.DeadLetters {
		checks = append(checks, deadLetterCheck(sqsClient, cw, ledger, q, time.Now))
	}
	if cfg.Graph != nil {
		g, err := mail.NewGraph(*cfg.Graph)
		fn.Check(err, "the Graph transport")
		checks = append(checks, graphCheck(g))
	} else {
		checks = append(checks, sesCheck(sesv2.NewFromConfig(aws)))
	}
	checks = append(checks,
		modelKeyCheck(model),
		circuitCheck(circuit.New(db, cfg.LedgerTable, "gemini", circuit.Options{}, time.Now), cfg.StuckAfter, time.Now),
		stripeCheck(pingers),
		integrityCheck(index, orders, &repair.Guard{Orders: orders, Hash: cfg.Hasher.Hash,
			Generate: queue.NewSender(queues, cfg.Queues[0].URL, time.Now), Alerts: alerts, Log: log}, cfg.Retention, time.Now, randFloat),
	)
	if cfg.Rail.On() {
		f := x402rail.NewFacilitator(cfg.Rail.FacilitatorURL, &http.Client{Timeout: 5 * time.Second}, cfg.Rail.FacilitatorKey)
		checks = append(checks, facilitatorCheck(f, cfg.Rail.Networks), paymentJunkCheck(ledger, time.Now))
	}
	h.Checks = checks
	h.Reconcile = &Reconciler{
		Index:  index,
		Orders: orders,
		Fulfil: &fulfil.Service{
			Orders:    orders,
			Generate:  queue.NewSender(queues, cfg.Queues[0].URL, time.Now),
			Mail:      queue.NewSender(queues, cfg.Queues[1].URL, time.Now),
			Audit:     &audit.Recorder{Writer: auditWriter, Alerts: alerts, Log: log},
			Alerts:    alerts,
			Metrics:   fn.Metrics,
			Hasher:    cfg.Hasher,
			Log:       log,
			Now:       time.Now,
			Lease:     fulfil.DefaultLease,
			Retention: cfg.Retention,
		},
		Mail:            queue.NewSender(queues, cfg.Queues[1].URL, time.Now),
		Ledger:          ledger,
		Alerts:          alerts,
		Log:             log,
		Now:             time.Now,
		Sessions:        sessions,
		StuckAfter:      cfg.StuckAfter,
		MailStuckAfter:  cfg.MailStuckAfter,
		ReconcileWindow: cfg.ReconcileWindow,
		WebhookGrace:    cfg.WebhookGrace,
		RealertEvery:    cfg.RealertEvery,
		Retention:       cfg.Retention,
	}
	h.Subscriptions = &SubscriptionReconciler{
		Billing: billing,
		Store:   subscription.NewStore(db, queries, cfg.ChatTable),
		Ledger:  ledger,
		Alerts:  alerts,
		Log:     log,
		Now:     time.Now,
	}
	lambda.Start(tracing.Invocations(fn.Tracing, h.Handle))
}
