package stack_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"42sisters.ai/oracle/infra/local/schedule"
	"42sisters.ai/oracle/infra/local/stack"
	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/health"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/queue"
)

// healthChecks are the checks every run of the health job reports.
var healthChecks = []string{
	"audit_bucket", "chat_subscriptions", "email", "ledger_table", "model_circuit", "model_key", "orders", "orders_table",
	"queue_dead_letters", "queue_generate", "queue_mail",
	"queue_mail_events", "stripe", "stripe_reconcile", "verdict_integrity",
	"x402_facilitator", "x402_junk", // the agent rail is on in the local stack
}

// GET /api/health through the front door of a fresh stack started as
// `make run` starts it (ScheduleAtStart): the health function has run once
// before Start returns, so the verdict function answers 200 at once with
// every check and its status. The schedule's clock is held, so that run
// is the only one; the daily smoke test keeps its time of day. (Before any run the answer is 503: TestHealthEndpoint.)
func TestFreshStackAnswersHealthAtOnce(t *testing.T) {
	t.Parallel()
	o := options(t)
	o.ScheduleAtStart = true
	o.ScheduleClock = schedule.NewManualClock(time.Now())
	runs := make(chan stack.Firing, 10)
	o.AfterSchedule = func(f stack.Firing) { runs <- f }
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	s, err := stack.Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	// The rate schedule fired; the daily cron (the smoke test) did not.
	var fired []string
	for len(runs) > 0 {
		f := <-runs
		fired = append(fired, f.Function)
		if f.Err != nil {
			t.Errorf("the run of %s at start: %v", f.Function, f.Err)
		}
	}
	if !slices.Equal(fired, []string{"HealthFunction"}) {
		t.Fatalf("fired before Start returned: %v, want HealthFunction alone", fired)
	}

	code, body := healthAnswer(ctx, t, s)
	if code != http.StatusOK || body.Status != "ok" && body.Status != "warn" || body.Stale || body.At.IsZero() {
		t.Fatalf("a fresh stack: %d %+v, want 200 ok or warn", code, body)
	}
	if got := slices.Sorted(maps.Keys(body.Checks)); !slices.Equal(got, healthChecks) {
		t.Errorf("checks %v, want %v", got, healthChecks)
	}
	for name, st := range body.Checks {
		if st != "ok" && st != "warn" {
			t.Errorf("check %s is %q", name, st)
		}
	}
}

// healthReply is /api/health's answer.
type healthReply struct {
	Status string            `json:"status"`
	At     time.Time         `json:"at"`
	Checks map[string]string `json:"checks"`
	Stale  bool              `json:"stale"`
	Error  string            `json:"error"`
}

// healthAnswer GETs /api/health and checks it is never cached.
func healthAnswer(ctx context.Context, t *testing.T, s *stack.Stack) (int, healthReply) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.APIURL+"/api/health", nil)
	if err != nil {
		t.Fatal(err)
	}
	checker := apiChecker(t, s)
	resp, err := checker.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	checkedAll(t, checker, fmt.Sprintf("GET /api/health %d", resp.StatusCode))
	if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control %q, want no-store", cc)
	}
	var r healthReply
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("body %q: %v", b, err)
	}
	return resp.StatusCode, r
}

// TestHealthReconciles runs the health job's end-to-end acceptance on one
// local stack whose schedules fire only when the test says (Fire):
//
//   - a fresh stack's first run finds every check ok;
//   - a paid order whose generate job is lost from the queue is found by
//     the next run, sent again and served: one verdict, one email, one
//     WARN ORDER_STUCK alert; the run after changes nothing;
//   - a paid session whose webhook never came, and whose customer never
//     opens the result page, is claimed by the next run and served: one
//     verdict, one email, one ERROR WEBHOOK_MISSED alert, a reconcile
//     audit record; the run after claims and raises nothing.
//
// STUCK_AFTER and WEBHOOK_GRACE are a millisecond (the settings take only
// positive durations), so no run waits out the production windows: the
// test drains the queues first, so nothing is in flight when a run looks.
// A failing check is retried at once.
func TestHealthReconciles(t *testing.T) {
	t.Parallel()
	o := options(t)
	o.ScheduleOff = true
	o.Env = map[string]map[string]string{"HealthFunction": {"STUCK_AFTER": "1ms", "WEBHOOK_GRACE": "1ms", "HEALTH_RETRY_DELAY": "1ms"}}
	// loseNext has the next generate job deleted from its queue before the
	// generator sees it; lost then names its session.
	var loseNext atomic.Bool
	lost := make(chan string, 1)
	o.LoseDelivery = func(queueID string, batch events.SQSEvent) bool {
		if queueID != "GenerateQueue" || !loseNext.CompareAndSwap(true, false) {
			return false
		}
		var j queue.Job
		if len(batch.Records) != 1 || json.Unmarshal([]byte(batch.Records[0].Body), &j) != nil {
			t.Errorf("generate batch %+v, want one job", batch.Records)
		}
		lost <- j.SessionID
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s, err := stack.Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	q := sqs.NewFromConfig(s.AWS)

	t.Run("a fresh stack is healthy", func(t *testing.T) {
		rec := fireHealth(ctx, t, s)
		if rec.Overall != health.OK {
			t.Errorf("overall %s, want ok", rec.Overall)
		}
		if len(rec.Checks) == 0 {
			t.Fatal("the record has no checks")
		}
		for _, c := range rec.Checks {
			if c.Status != health.OK {
				t.Errorf("check %s is %s: %s", c.Name, c.Status, c.Detail)
			}
		}
		if alerts := s.Alerts(); len(alerts) != 0 {
			t.Errorf("alerts raised: %q", alerts)
		}
	})

	t.Run("a lost generate job is sent again", func(t *testing.T) {
		loseNext.Store(true)
		ord := buy(t, s, "quick", "lost-job")
		select {
		case got := <-lost:
			if got != ord.session {
				t.Fatalf("lost the job of %s, want %s's", got, ord.session)
			}
		case <-time.After(60 * time.Second):
			t.Fatal("the order's generate job never reached the generate queue's poller")
		}
		drained(ctx, t, q, s)
		item := orderItem(t, s, ord.session)
		if st := stringAttr(item, "status"); st != string(oracle.StatusPaid) {
			t.Fatalf("with its job lost the order is %q, want PAID", st)
		}
		// The claim's job lease stands until the generator takes the
		// order (its claim records the job's arrival): a replay meanwhile
		// finds the job in flight. The lease (30 s, and past the
		// webhook's deadline) is far shorter than STUCK_AFTER (15
		// minutes); the test compresses STUCK_AFTER to a millisecond, so
		// it moves the lease's end into the past rather than wait for it.
		if _, ok := item["job_lease_until"]; !ok {
			t.Fatalf("the order of a lost job holds no job lease: %v", item)
		}
		lapse(ctx, t, s, ord.session)

		rec := fireHealth(ctx, t, s)
		if r := rec.Reconcile; r.Stuck != 1 || r.Redelivered != 1 || r.StillStuck != 0 || r.WebhooksMissed != 0 {
			t.Errorf("reconciliation %+v, want one stuck order sent again", r)
		}
		if c := checkNamed(t, rec, "orders"); c.Status != health.Warn {
			t.Errorf("orders check %s (%s), want warn", c.Status, c.Detail)
		}
		served(ctx, t, s, ord)
		stuck := alertsOf(s, alert.OrderStuck)
		if len(stuck) != 1 || !strings.HasPrefix(stuck[0], "[ORACLE-ALERT] WARN ") || !strings.Contains(stuck[0], oracle.ShortID(ord.session)) || strings.Contains(stuck[0], ord.session) {
			t.Errorf("ORDER_STUCK alerts %q, want one WARN naming the session by oracle.ShortID", stuck)
		}

		// The next run finds nothing to do: the order is READY and its
		// email sent.
		rec = fireHealth(ctx, t, s)
		if r := rec.Reconcile; r.Stuck != 0 || r.Redelivered != 0 || r.MailResent != 0 {
			t.Errorf("second run's reconciliation %+v, want nothing", r)
		}
		drained(ctx, t, q, s)
		onceServed(t, s, ord)
		if n := len(alertsOf(s, alert.OrderStuck)); n != 1 {
			t.Errorf("%d ORDER_STUCK alerts after the second run, want 1", n)
		}
	})

	t.Run("a missed webhook is claimed", func(t *testing.T) {
		post(t, s.StripeURL+"/_control", `{"skip_delivery":true}`)
		ord := buy(t, s, "quick", "missed-webhook")
		if n := len(deliveriesFor(t, s.StripeURL, ord.session)); n != 0 {
			t.Fatalf("%d webhook deliveries, want none", n)
		}
		if item := orderItem(t, s, ord.session); item != nil {
			t.Fatalf("an order exists with no webhook and no landing: %v", item)
		}

		before := len(alertsOf(s, alert.OrderStuck))
		rec := fireHealth(ctx, t, s)
		if r := rec.Reconcile; r.WebhooksMissed != 1 || r.SessionsListed < 1 || r.Stuck != 0 {
			t.Errorf("reconciliation %+v, want one missed webhook claimed", r)
		}
		if c := checkNamed(t, rec, "stripe_reconcile"); c.Status != health.Warn {
			t.Errorf("stripe_reconcile check %s (%s), want warn", c.Status, c.Detail)
		}
		served(ctx, t, s, ord)
		missed := alertsOf(s, alert.WebhookMissed)
		if len(missed) != 1 || !strings.HasPrefix(missed[0], "[ORACLE-ALERT] ERROR ") || !strings.Contains(missed[0], oracle.ShortID(ord.session)) || strings.Contains(missed[0], ord.session) {
			t.Errorf("WEBHOOK_MISSED alerts %q, want one ERROR naming the session by oracle.ShortID", missed)
		}
		bySource := map[audit.Source]int{}
		for _, r := range testkit.AuditRecords(t, awsenv.S3(s.AWS), s.Resources.Ref("AuditBucket")) {
			if r.SessionID == ord.session && r.Status == audit.StatusOK {
				bySource[r.Source]++
			}
		}
		// One claim, the health job's; the generator's and the mailer's
		// records follow it.
		if bySource[audit.SourceReconcile] != 1 || bySource[audit.SourceWebhook] != 0 || bySource[audit.SourceResultPage] != 0 {
			t.Errorf("OK audit records by source %v, want one claim, from reconcile", bySource)
		}

		rec = fireHealth(ctx, t, s)
		if r := rec.Reconcile; r.WebhooksMissed != 0 || r.Stuck != 0 || r.MailResent != 0 {
			t.Errorf("second run's reconciliation %+v, want nothing", r)
		}
		drained(ctx, t, q, s)
		onceServed(t, s, ord)
		if n := len(alertsOf(s, alert.WebhookMissed)); n != 1 {
			t.Errorf("%d WEBHOOK_MISSED alerts after the second run, want 1", n)
		}
		if n := len(alertsOf(s, alert.OrderStuck)); n != before {
			t.Errorf("%d ORDER_STUCK alerts, want %d: a claimed order is not stuck", n, before)
		}
		if n := len(deliveriesFor(t, s.StripeURL, ord.session)); n != 0 {
			t.Errorf("%d webhook deliveries, want none", n)
		}
	})
}

// fireHealth runs the health job now and returns its record.
func fireHealth(ctx context.Context, t *testing.T, s *stack.Stack) health.Record {
	t.Helper()
	out, err := s.Fire(ctx, "HealthFunction")
	if err != nil {
		t.Fatalf("health run: %v", err)
	}
	var rec health.Record
	if err := json.Unmarshal(out, &rec); err != nil {
		t.Fatalf("health record %s: %v", out, err)
	}
	return rec
}

// checkNamed is the record's check of that name.
func checkNamed(t *testing.T, rec health.Record, name string) health.Check {
	t.Helper()
	for _, c := range rec.Checks {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no %s check in %+v", name, rec.Checks)
	return health.Check{}
}

// served waits for the order to be READY with its email sent, then checks
// it was served once.
func served(ctx context.Context, t *testing.T, s *stack.Stack, ord order) {
	t.Helper()
	var item map[string]ddbtypes.AttributeValue
	if !testkit.Eventually(60*time.Second, 100*time.Millisecond, func() bool {
		item = orderItem(t, s, ord.session)
		return stringAttr(item, "status") == string(oracle.StatusReady) && stringAttr(item, "mail_verdict_sent_at") != ""
	}) {
		t.Fatalf("the order was not served: %v", item)
	}
	drained(ctx, t, sqs.NewFromConfig(s.AWS), s)
	onceServed(t, s, ord)
}

// onceServed checks the order has one verdict, from one model call, and
// one email, sent on the first try.
func onceServed(t *testing.T, s *stack.Stack, ord order) {
	t.Helper()
	item := orderItem(t, s, ord.session)
	if stringAttr(item, "status") != string(oracle.StatusReady) || stringAttr(item, "verdict") == "" {
		t.Errorf("order %v, want READY with its verdict", item)
	}
	if a, ok := item["attempts"].(*ddbtypes.AttributeValueMemberN); !ok || a.Value != "1" {
		t.Errorf("attempts = %v, want one generation", item["attempts"])
	}
	calls := 0
	for _, c := range modelCalls(t, s.GeminiURL) {
		if strings.Contains(c.UserText, ord.query) {
			calls++
		}
	}
	if calls != 1 {
		t.Errorf("%d model calls for the order, want 1", calls)
	}
	if sends := sesCallsFor(t, s, ord.session); len(sends) != 1 || sends[0].Status != http.StatusOK {
		t.Errorf("SendEmail requests %+v, want one accepted", sends)
	}
	oneVerdictEmail(t, s, ord)
}

// alertsOf lists the alerts of one kind published so far.
func alertsOf(s *stack.Stack, kind alert.Kind) []string {
	var out []string
	for _, a := range s.Alerts() {
		if strings.Contains(a, " | "+string(kind)+" | ") {
			out = append(out, a)
		}
	}
	return out
}

// stringAttr is a string attribute of an item, or "".
func stringAttr(item map[string]ddbtypes.AttributeValue, name string) string {
	if v, ok := item[name].(*ddbtypes.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

// lapse ends the job lease of session's order a second ago, as time would.
func lapse(ctx context.Context, t *testing.T, s *stack.Stack, session string) {
	t.Helper()
	_, err := dynamodb.NewFromConfig(s.AWS).UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.Resources.Ref("OrdersTable")),
		Key:                       map[string]ddbtypes.AttributeValue{"session_id": &ddbtypes.AttributeValueMemberS{Value: session}},
		UpdateExpression:          aws.String("SET job_lease_until = :past"),
		ConditionExpression:       aws.String("attribute_exists(job_lease_until)"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":past": &ddbtypes.AttributeValueMemberN{Value: fmt.Sprint(time.Now().Add(-time.Second).UnixMilli())}},
	})
	if err != nil {
		t.Fatalf("lapse the job lease of %s: %v", oracle.ShortID(session), err)
	}
}
