package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"42sisters.ai/oracle/infra/testkit"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stripe/stripe-go/v76"
	"github.com/stripe/stripe-go/v76/webhook"

	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/casefile"
	"42sisters.ai/oracle/shared/fulfil"
	"42sisters.ai/oracle/shared/httpapi"
	"42sisters.ai/oracle/shared/obs"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/queue"
	"42sisters.ai/oracle/shared/store"
	"42sisters.ai/oracle/shared/stripex"
	"42sisters.ai/oracle/shared/subscription"
)

const (
	testSecret = "whsec_test_component_secret"
	liveSecret = "whsec_live_component_secret"
	pepper     = "component-test-pepper-0123456789"
)

// env is a webhook handler wired to a fresh copy of the template's resources
// in moto, with everything it wrote observable.
type env struct {
	t      testing.TB
	f      *provision.Fixture
	h      *Handler
	svc    *fulfil.Service
	db     *awsenv.Tables
	sqs    *sqs.Client
	queues *queue.Client
	s3     *s3.Client
	// alertTexts drains the alerts published so far.
	alertTexts func() []string
	logs       *testkit.Buffer
	clock      *testkit.Clock // every component's clock; signatures use real time
	created    int64
}

func newEnv(t testing.TB, secrets Secrets) *env {
	t.Helper()
	return newEnvWith(t, secrets, nil)
}

// newEnvWith is newEnv with instrument (when not nil) applied to the AWS
// configuration the handler's clients are made from, so that a benchmark
// can time the calls themselves.
func newEnvWith(t testing.TB, secrets Secrets, instrument func(*aws.Config)) *env {
	t.Helper()
	f := provision.ForTest(t, nil)
	cfg := f.AWS
	if instrument != nil {
		cfg = f.AWS.Copy()
		instrument(&cfg)
	}
	e := &env{t: t, f: f, db: awsenv.NewTables(cfg), sqs: sqs.NewFromConfig(cfg), queues: queue.NewClient(cfg), s3: awsenv.S3(cfg), logs: &testkit.Buffer{}}
	e.clock = testkit.NewClock(time.Now())
	e.created = time.Now().Add(-time.Minute).Unix()

	// Alerts are read back through a queue subscribed to the topic.
	e.alertTexts = testkit.AlertTap(t, f.AWS, f.Ref("AlertsTopic"), provision.TestRegion, provision.Account)
	var sink io.Writer = e.logs
	if _, verbose := t.(*testing.T); verbose {
		sink = io.MultiWriter(e.logs, testWriter{t})
	}
	log := obs.NewLogger(sink, "DEBUG")
	hasher, err := audit.NewHasher(pepper)
	if err != nil {
		t.Fatal(err)
	}
	ledger := store.NewLedger(e.db, f.Ref("LedgerTable"), e.clock.Now)
	metrics := obs.NewMetrics(e.logs, "Oracle", e.clock.Now)
	// The alert's budget is a test's, not Lambda's: its Ledger dedupe gets a
	// third of it, and the shared moto of make test can take over a second.
	alerts := &alert.Alerter{SNS: awsenv.NewTopics(cfg), Topic: f.Ref("AlertsTopic"), Dedupe: ledger, Log: log, Metrics: metrics, Now: e.clock.Now, Timeout: 30 * time.Second}
	e.svc = &fulfil.Service{
		Orders:    store.NewOrders(e.db, f.Ref("OrdersTable"), e.clock.Now),
		Generate:  queue.NewSender(e.queues, f.Ref("GenerateQueue"), e.clock.Now),
		Mail:      queue.NewSender(e.queues, f.Ref("MailQueue"), e.clock.Now),
		Audit:     &audit.Recorder{Writer: audit.NewWriter(e.s3, f.Ref("AuditBucket")), Alerts: alerts, Log: log},
		Alerts:    alerts,
		Metrics:   metrics,
		Hasher:    hasher,
		Log:       log,
		Now:       e.clock.Now,
		Lease:     30 * time.Second,
		Retention: 90 * 24 * time.Hour,
	}
	e.h = &Handler{Secrets: secrets, Ledger: ledger, Fulfil: e.svc, Alerts: alerts, Metrics: metrics, Log: log, Now: e.clock.Now, OrderRetention: e.svc.Retention,
		Chat: &Chat{Subscriptions: subscription.NewStore(e.db, awsenv.NewQueries(cfg), f.Ref("ChatTable")), Mail: e.svc.Mail, Ledger: ledger, Audit: e.svc.Audit,
			Alerts: alerts, Now: e.clock.Now},
		Money: &Money{
			Index:        store.NewOrderIndex(awsenv.NewQueries(cfg), f.Ref("OrdersTable")),
			Orders:       store.NewOrders(e.db, f.Ref("OrdersTable"), e.clock.Now),
			Records:      audit.NewReader(e.s3, f.Ref("AuditBucket")),
			Evidence:     casefile.NewEvidenceStore(e.s3, f.Ref("EvidenceBucket")),
			Mail:         e.svc.Mail,
			Audit:        e.svc.Audit,
			Alerts:       alerts,
			Hasher:       hasher,
			BaseURL:      "https://oracle.example",
			Now:          e.clock.Now,
			ChatPayments: subscription.NewStore(e.db, awsenv.NewQueries(cfg), f.Ref("ChatTable")),
		}}
	return e
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// session is a Checkout Session object as Stripe sends it.
type session struct {
	ID       string
	Paid     bool
	Meta     map[string]string
	Idea     *string
	Email    string
	Livemode bool
	Amount   int64
	Currency string // default cad
	// TraceParent is the checkout's trace context (client_reference_id).
	TraceParent string
}

func paidSession(id string, tier oracle.Tier, query string) session {
	meta, err := stripex.QueryMetadata(query)
	if err != nil {
		panic(err) // the tests' queries fit
	}
	meta[stripex.MetaTier] = string(tier)
	return session{ID: id, Paid: true, Meta: meta, Email: "customer@example.com", Amount: tier.PriceCents()}
}

func (s session) object() map[string]any {
	status := "unpaid"
	if s.Paid {
		status = "paid"
	}
	currency := s.Currency
	if currency == "" {
		currency = oracle.Currency
	}
	o := map[string]any{
		"id": s.ID, "object": "checkout.session", "mode": "payment", "status": "complete",
		"payment_status": status, "amount_total": s.Amount, "amount_subtotal": s.Amount, "currency": currency,
		"livemode": s.Livemode, "created": time.Now().Add(-2 * time.Minute).Unix(), "metadata": s.Meta,
		"customer_details": map[string]any{"email": s.Email}, "customer_email": nil,
		"custom_fields": []any{}, "payment_intent": "pi_" + strings.TrimPrefix(s.ID, "cs_test_"),
	}
	if s.TraceParent != "" {
		o["client_reference_id"] = s.TraceParent
	}
	if s.Idea != nil {
		o["custom_fields"] = []any{map[string]any{"key": "idea", "type": "text", "optional": false,
			"label": map[string]any{"type": "custom", "custom": "Your idea"}, "text": map[string]any{"value": *s.Idea}}}
	}
	return o
}

func (e *env) event(id string, typ audit.Event, s session) []byte {
	b, err := json.Marshal(map[string]any{
		"id": id, "object": "event", "api_version": stripe.APIVersion, "type": typ,
		"created": e.created, "livemode": s.Livemode, "pending_webhooks": 1,
		"data": map[string]any{"object": s.object()},
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return b
}

func sign(body []byte, secret string, at time.Time) string {
	return webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: secret, Timestamp: at}).Header
}

func request(body []byte, signature string) httpapi.Request {
	r := events.APIGatewayV2HTTPRequest{
		RouteKey: "POST /api/webhook",
		Headers:  map[string]string{"content-type": "application/json; charset=utf-8"},
		Body:     string(body),
	}
	r.RequestContext.HTTP.Method = "POST"
	if signature != "" {
		r.Headers["stripe-signature"] = signature
	}
	return r
}

func base64Request(body []byte, signature string) httpapi.Request {
	r := request(nil, signature)
	r.Body, r.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
	return r
}

func (e *env) deliver(r httpapi.Request) httpapi.Response {
	e.t.Helper()
	resp, err := e.h.Handle(context.Background(), r)
	if err != nil {
		e.t.Fatalf("handler returned an error: %v", err)
	}
	return resp
}

// send signs and delivers an event with the test-mode secret.
func (e *env) send(body []byte) httpapi.Response {
	return e.deliver(request(body, sign(body, testSecret, time.Now())))
}

func (e *env) order(id string) (oracle.Order, bool) {
	e.t.Helper()
	o, ok, err := store.NewOrders(e.db, e.f.Ref("OrdersTable"), time.Now).Get(context.Background(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	return o, ok
}

// orderItem is the order's item as the Orders table holds it.
func (e *env) orderItem(id string) map[string]types.AttributeValue {
	e.t.Helper()
	out, err := e.db.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(e.f.Ref("OrdersTable")),
		Key:       map[string]types.AttributeValue{"session_id": &types.AttributeValueMemberS{Value: id}},
	})
	if err != nil || out.Item == nil {
		e.t.Fatalf("the order %s: %v", id, err)
	}
	return out.Item
}

func (e *env) eventRecorded(id string) bool {
	out, err := e.db.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(e.f.Ref("LedgerTable")),
		Key:       map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "event#" + id}},
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return out.Item != nil
}

// jobs drains a queue and returns the jobs on it.
func (e *env) jobs(logicalID string) []queue.Job {
	e.t.Helper()
	var out []queue.Job
	for _, b := range testkit.Drain(e.t, e.sqs, e.f.Ref(logicalID)) {
		j, err := queue.Parse(b)
		if err != nil {
			e.t.Fatalf("garbage on %s: %v", logicalID, err)
		}
		out = append(out, j)
	}
	return out
}

// auditRecords returns every audit record written.
func (e *env) auditRecords() []audit.Record {
	e.t.Helper()
	return testkit.AuditRecords(e.t, e.s3, e.f.Ref("AuditBucket"))
}

func status(r httpapi.Response) string { return strconv.Itoa(r.StatusCode) + " " + r.Body }
