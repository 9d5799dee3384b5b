package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	fakegemini "42sisters.ai/oracle/infra/fakes/fakegemini"
	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/circuit"
	"42sisters.ai/oracle/shared/crosscheck"
	"42sisters.ai/oracle/shared/gemini"
	"42sisters.ai/oracle/shared/obs"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/prompt"
	"42sisters.ai/oracle/shared/quarantine"
	"42sisters.ai/oracle/shared/queue"
	"42sisters.ai/oracle/shared/sosfilter"
	"42sisters.ai/oracle/shared/store"
)

// env is a generator wired to a fresh copy of the template's resources in
// moto and to the fake Gemini over HTTP.
type env struct {
	t       *testing.T
	f       *provision.Fixture
	h       *Handler
	model   *fakegemini.Server
	orders  *store.Orders
	ledger  *store.Ledger
	sqs     *sqs.Client
	queues  *queue.Client
	s3      *s3.Client
	alerts  func() []string
	logs    *testkit.Buffer
	clock   *testkit.Clock
	caller  *gemini.Caller
	breaker *circuit.Breaker
	slept   []time.Duration // the model call's backoffs
	metrics *testkit.Metrics
	// requeued are the jobs parked or re-delayed on the generate queue,
	// which SQS keeps invisible for their delay.
	requeued []queue.Job

	// modelURL is where the fake Gemini listens.
	modelURL string
}

// recorder notes each job it sends to the real queue.
type recorder struct {
	*queue.Sender
	mu   sync.Mutex
	jobs *[]queue.Job
}

func (r *recorder) Send(ctx context.Context, j queue.Job) error {
	r.mu.Lock()
	*r.jobs = append(*r.jobs, j)
	r.mu.Unlock()
	return r.Sender.Send(ctx, j)
}

func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvWith(t, nil)
}

// newEnvWith provisions the stack with secrets in moto's Secrets Manager
// (by template parameter, as provision.ForTest takes them).
func newEnvWith(t *testing.T, secrets map[string]string) *env {
	t.Helper()
	ctx := context.Background()
	f := provision.ForTest(t, secrets)
	e := &env{t: t, f: f, sqs: sqs.NewFromConfig(f.AWS), queues: queue.NewClient(f.AWS), s3: awsenv.S3(f.AWS), logs: &testkit.Buffer{}, clock: testkit.NewClock(time.Now()), metrics: &testkit.Metrics{}}
	e.model = fakegemini.New(fakegemini.Options{})
	srv := httptest.NewServer(e.model)
	t.Cleanup(srv.Close)
	e.modelURL = srv.URL
	client, err := gemini.New(ctx, gemini.Options{APIKey: "test-key", Model: "gemini-2.5-flash", BaseURL: srv.URL, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	e.alerts = testkit.AlertTap(t, f.AWS, f.Ref("AlertsTopic"), provision.TestRegion, provision.Account)
	db := awsenv.NewTables(f.AWS)
	hasher, err := audit.NewHasher("generator-test-pepper-0123456789")
	if err != nil {
		t.Fatal(err)
	}
	log := obs.NewLogger(e.logs, "DEBUG")
	e.orders = store.NewOrders(db, f.Ref("OrdersTable"), e.clock.Now)
	e.ledger = store.NewLedger(db, f.Ref("LedgerTable"), e.clock.Now)
	e.caller = &gemini.Caller{Primary: client, Policy: gemini.Policy{CallTimeout: 5 * time.Second},
		Rand: func() float64 { return 0.5 }, Now: e.clock.Now, Log: log,
		// Backoffs are recorded, not waited for.
		Sleep: func(ctx context.Context, d time.Duration) error { e.slept = append(e.slept, d); return ctx.Err() }}
	filter, err := sosfilter.New()
	if err != nil {
		t.Fatal(err)
	}
	e.breaker = circuit.New(db, f.Ref("LedgerTable"), "gemini", circuit.Options{}, e.clock.Now)
	e.h = &Handler{
		Orders:  e.orders,
		Model:   e.caller,
		Circuit: e.breaker,
		Mail:    queue.NewSender(e.queues, f.Ref("MailQueue"), e.clock.Now),
		Requeue: &recorder{Sender: queue.NewSender(e.queues, f.Ref("GenerateQueue"), e.clock.Now), jobs: &e.requeued},

		Alerts: &alert.Alerter{SNS: awsenv.NewTopics(f.AWS), Topic: f.Ref("AlertsTopic"), Timeout: testAlertTimeout,
			Dedupe: e.ledger, Log: log, Now: e.clock.Now},
		Filter: filter, Quarantine: quarantine.NewStore(e.s3, f.Ref("QuarantineBucket")),
		Originals: e.ledger, OriginalRetention: 730 * 24 * time.Hour,
		Hasher: hasher, Metrics: e.metrics, Log: log, Now: e.clock.Now, Rand: func() float64 { return 0.5 },
		Retention: 90 * 24 * time.Hour, CallTimeout: 5 * time.Second, MaxReceives: 3,
		ParkingBudget: DefaultParkingBudget, RetryBase: DefaultRetryBase,
	}
	e.h.Audit = &audit.Recorder{Writer: audit.NewWriter(e.s3, f.Ref("AuditBucket")), Alerts: e.h.Alerts, Log: log}
	return e
}

// paid records a paid order whose generation job is on its way.
func (e *env) paid(id string, tier oracle.Tier, query string) {
	e.t.Helper()
	ctx := context.Background()
	c, err := e.orders.ClaimOrder(ctx, oracle.Order{SessionID: id, Status: oracle.StatusPaid, Tier: tier, Query: query,
		AmountTotal: tier.PriceCents(), Currency: "cad", Source: oracle.SourceWebhook, SessionCreated: time.Now().UTC()}, time.Minute)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.orders.JobEnqueued(ctx, id, c.Lease); err != nil {
		e.t.Fatal(err)
	}
}

func record(id, body string, receive int) events.SQSMessage {
	return events.SQSMessage{MessageId: id, Body: body, Attributes: map[string]string{"ApproximateReceiveCount": fmt.Sprint(receive)}}
}

func job(session string) string {
	return fmt.Sprintf(`{"session_id":%q,"reason":"paid","attempt":0}`, session)
}

// run delivers records and returns the ids of the failed ones.
func (e *env) run(recs ...events.SQSMessage) []string {
	e.t.Helper()
	resp, err := e.h.Handle(context.Background(), events.SQSEvent{Records: recs})
	if err != nil {
		e.t.Fatalf("handler error: %v", err)
	}
	var failed []string
	for _, f := range resp.BatchItemFailures {
		failed = append(failed, f.ItemIdentifier)
	}
	return failed
}

func (e *env) control(sc fakegemini.Scenario) {
	e.t.Helper()
	if _, err := e.model.SetScenario(sc); err != nil {
		e.t.Fatal(err)
	}
}

// leased reports whether the order's generation lease is held, as the
// table keeps it (the lease is the store's, not the domain's).
func (e *env) leased(id string) bool {
	e.t.Helper()
	out, err := awsenv.NewTables(e.f.AWS).GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(e.f.Ref("OrdersTable")), ConsistentRead: aws.Bool(true),
		Key: map[string]ddbtypes.AttributeValue{"session_id": &ddbtypes.AttributeValueMemberS{Value: id}},
	})
	if err != nil {
		e.t.Fatal(err)
	}
	_, held := out.Item["gen_lease"]
	return held
}

func (e *env) order(id string) oracle.Order {
	e.t.Helper()
	o, ok, err := e.orders.Get(context.Background(), id)
	if err != nil || !ok {
		e.t.Fatalf("order %s: %v %v", id, ok, err)
	}
	return o
}

func (e *env) mailJobs() []queue.Job {
	e.t.Helper()
	var out []queue.Job
	for _, b := range testkit.Drain(e.t, e.sqs, e.f.Ref("MailQueue")) {
		j, err := queue.Parse(b)
		if err != nil {
			e.t.Fatal(err)
		}
		out = append(out, j)
	}
	return out
}

// byEvent counts audit records by event and status.
func (e *env) byEvent() map[string]int {
	e.t.Helper()
	n := map[string]int{}
	for _, r := range testkit.AuditRecords(e.t, e.s3, e.f.Ref("AuditBucket")) {
		n[string(r.Event)+"/"+string(r.Status)]++
	}
	return n
}

// generateJobs returns the jobs parked or re-delayed since the last call.
func (e *env) generateJobs() []queue.Job {
	out := e.requeued
	e.requeued = nil
	return out
}

func TestEachTierAndVerdictIsStoredThenMailed(t *testing.T) {
	e := newEnv(t)
	n := 0
	for _, tier := range oracle.Tiers() {
		for _, v := range []oracle.Verdict{oracle.VerdictGreen, oracle.VerdictAmber, oracle.VerdictRed, oracle.VerdictNull} {
			n++
			id := fmt.Sprintf("cs_test_gen%s%s", tier, v)
			e.paid(id, tier, "Should I open a bakery on my street?")
			e.control(fakegemini.Scenario{Verdict: v})
			if failed := e.run(record("m"+id, job(id), 1)); len(failed) != 0 {
				t.Fatalf("%s/%s failed", tier, v)
			}
			o := e.order(id)
			if o.Status != oracle.StatusReady || o.VerdictHash == "" || o.PromptVersion == "" || o.Model == "" ||
				o.VerdictLabel != v || o.CoherenceScore < crosscheck.OMEGA {
				t.Fatalf("%s/%s: order %+v", tier, v, o)
			}
			a, err := oracle.ParseAnalysis(tier, []byte(o.Verdict))
			if err != nil || a.Verdict != v {
				t.Fatalf("%s/%s: stored verdict %v %v", tier, v, a.Verdict, err)
			}
		}
	}
	if jobs := e.mailJobs(); len(jobs) != n {
		t.Fatalf("%d mail jobs, want %d", len(jobs), n)
	}
	// One crosscheck, one filter and one generation record per order
	// (CROSSCHECK VC-4; the filter's record at gate 1).
	recs := testkit.AuditRecords(e.t, e.s3, e.f.Ref("AuditBucket"))
	if len(recs) != 3*n {
		t.Fatalf("%d audit records, want %d", len(recs), 3*n)
	}
	for _, r := range recs {
		if r.Status != audit.StatusOK || r.Source != audit.SourceGenerator {
			t.Fatalf("audit %+v", r)
		}
		switch r.Event {
		case "verdict_generated":
			if !strings.HasPrefix(r.VerdictHash, audit.HashPrefix) || r.Model == "" {
				t.Fatalf("generation record %+v", r)
			}
		case "tmm_crosscheck":
			if c := r.Crosscheck; c == nil || !c.Approved || c.Phi != crosscheck.PHI || c.Threshold != crosscheck.OMEGA || c.CrosscheckReason != "pass" {
				t.Fatalf("crosscheck record %+v", r.Crosscheck)
			}
		case "sos_filter":
			if f := r.Filter; f == nil || f.Gate != "generator" || f.Action != "PASS" || len(f.TermIDs) != 0 || f.Version == "" {
				t.Fatalf("filter record %+v", r.Filter)
			}
		default:
			t.Fatalf("unexpected record %+v", r)
		}
	}
	// VC-5: NULL is no error: no alert was raised.
	if a := e.alerts(); len(a) != 0 {
		t.Fatalf("alerts %q", a)
	}
}

func TestBadModelOutputNeverBecomesAPartialVerdict(t *testing.T) {
	// Both the reply and its one stricter retry are bad: nothing is
	// stored, the item fails, and the redelivery succeeds.
	cases := []struct {
		name string
		sc   fakegemini.Scenario
	}{
		{"malformed", fakegemini.Scenario{Malformed: true, Calls: 2}},
		{"markdown fence", fakegemini.Scenario{Fenced: true, Calls: 2}},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			id := fmt.Sprintf("cs_test_bad%d", i)
			e.paid(id, oracle.TierFull, "Launch a newsletter")
			e.control(c.sc)
			if failed := e.run(record("m1", job(id), 1)); len(failed) != 1 {
				t.Fatal("a bad reply did not fail the item")
			}
			calls := e.model.Calls()
			if len(calls) != 2 || strings.Contains(calls[0].SystemInstruction, gemini.StrictInstruction) ||
				!strings.HasSuffix(calls[1].SystemInstruction, gemini.StrictInstruction) {
				t.Fatalf("%d calls; want the reply and one stricter retry (GAP-02E)", len(calls))
			}
			o := e.order(id)
			if o.Verdict != "" || o.Status != oracle.StatusGenerating || e.leased(id) {
				t.Fatalf("order after a bad reply: %+v", o)
			}
			if jobs := e.mailJobs(); len(jobs) != 0 {
				t.Fatal("a mail job was queued without a verdict")
			}
			// Content failures never count against the circuit.
			if st, _ := e.breaker.State(context.Background()); st.Failures != 0 {
				t.Fatalf("circuit %+v", st)
			}
			if n := e.byEvent(); n["generation_failed/ERROR"] != 1 || n["tmm_crosscheck/ERROR"] != 2 {
				t.Fatalf("audit %v", n)
			}
			// The redelivery (the fake answers normally again) succeeds.
			if failed := e.run(record("m1", job(id), 2)); len(failed) != 0 {
				t.Fatal("the retry failed")
			}
			if o := e.order(id); o.Status != oracle.StatusReady || o.Attempts != 2 {
				t.Fatalf("after the retry: %+v", o)
			}
		})
	}
}

func TestOneStricterRetryRepairsABadReply(t *testing.T) {
	e := newEnv(t)
	id := "cs_test_strict"
	e.paid(id, oracle.TierQuick, "q")
	e.control(fakegemini.Scenario{Fenced: true})
	if failed := e.run(record("m1", job(id), 1)); len(failed) != 0 {
		t.Fatal("the stricter retry did not save the generation")
	}
	if o := e.order(id); o.Status != oracle.StatusReady || len(e.model.Calls()) != 2 {
		t.Fatalf("order %+v after %d calls", o, len(e.model.Calls()))
	}
}

func TestLastFailureMarksFailedAndAlerts(t *testing.T) {
	e := newEnv(t)
	id := "cs_test_genlast"
	e.paid(id, oracle.TierQuick, "q")
	e.control(fakegemini.Scenario{Malformed: true, Calls: 6})
	for receive := 1; receive <= 3; receive++ {
		if failed := e.run(record("m1", job(id), receive)); len(failed) != 1 {
			t.Fatalf("receive %d did not fail", receive)
		}
	}
	if o := e.order(id); o.Status != oracle.StatusFailed || o.Failure != "invalid_reply" {
		t.Fatalf("order %+v", o)
	}
	alerts := e.alerts()
	if len(alerts) != 1 || !strings.Contains(alerts[0], "GENERATION_FAILED") {
		t.Fatalf("alerts %q", alerts)
	}
	// The customer is told, once: the failure notice.
	if jobs := e.mailJobs(); len(jobs) != 1 || jobs[0].Kind != oracle.MailFailed {
		t.Fatalf("mail jobs %+v", jobs)
	}
}

func TestDuplicateJobsGiveOneVerdict(t *testing.T) {
	e := newEnv(t)
	id := "cs_test_gendup"
	e.paid(id, oracle.TierStrategy, "Acquire a failing restaurant")
	var wg sync.WaitGroup
	for i := 0; i < 5; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := e.h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{record(fmt.Sprint("m", i), job(id), 1)}}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	// And a late redelivery.
	e.run(record("late", job(id), 2))
	o := e.order(id)
	if o.Status != oracle.StatusReady || o.Attempts != 1 {
		t.Fatalf("order %+v: want one generation", o)
	}
	if calls := len(e.model.Calls()); calls != 1 {
		t.Fatalf("%d model calls, want 1", calls)
	}
	if n := e.byEvent(); n["verdict_generated/OK"] != 1 || n["tmm_crosscheck/OK"] != 1 || n["sos_filter/OK"] != 1 || len(n) != 3 {
		t.Fatalf("audit records %v, want one crosscheck, one filter decision and one generation", n)
	}
	// The mailer dedupes by its delivery record; at least one job is queued.
	if jobs := e.mailJobs(); len(jobs) == 0 {
		t.Fatal("no mail job")
	}
}

func TestGarbageFailsAndAlerts(t *testing.T) {
	e := newEnv(t)
	bodies := []string{"not json", `{"session_id":"cs_test_x","kind":"verdict","attempt":0}`, `{"session_id":"nope","reason":"paid","attempt":0}`}
	for i, b := range bodies {
		if failed := e.run(record(fmt.Sprint("g", i), b, 1)); len(failed) != 1 {
			t.Fatalf("%q did not fail", b)
		}
	}
	if a := e.alerts(); len(a) != len(bodies) {
		t.Fatalf("%d alerts, want %d", len(a), len(bodies))
	}
	if c := e.metrics.Counts(); !maps.Equal(c, map[string]float64{"GeneratorRecordFailures": float64(len(bodies))}) {
		t.Fatalf("counted %v, want one GeneratorRecordFailures per failed delivery", c)
	}
}

func TestNotOwedJobsAreAcknowledged(t *testing.T) {
	e := newEnv(t)
	id := "cs_test_gennot"
	if _, err := e.orders.ClaimOrder(context.Background(), oracle.Order{SessionID: id, Status: oracle.StatusDropped, Currency: "cad", Source: oracle.SourceWebhook}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if failed := e.run(record("m", job(id), 1)); len(failed) != 0 {
		t.Fatal("a job for a dropped order was failed")
	}
	if failed := e.run(record("m2", job("cs_test_unknownorder"), 1)); len(failed) != 0 {
		t.Fatal("a job for an unknown order was failed")
	}
	if len(e.model.Calls()) != 0 {
		t.Fatal("the model was called for an order that owes no verdict")
	}
}

// The sample in events/generator stays valid: a job for a session this
// stack has no order for is acknowledged, not failed.
func TestSampleEvent(t *testing.T) {
	e := newEnv(t)
	b, err := os.ReadFile("../../events/generator/generate-job.json")
	if err != nil {
		t.Fatal(err)
	}
	var ev events.SQSEvent
	if err := json.Unmarshal(b, &ev); err != nil || len(ev.Records) != 1 {
		t.Fatalf("sample: %v", err)
	}
	if _, err := queue.Parse(ev.Records[0].Body); err != nil {
		t.Fatalf("sample job: %v", err)
	}
	if failed := e.run(ev.Records...); len(failed) != 0 {
		t.Fatal("the sample failed")
	}
}

// VC-5: a failed audit write alerts and the customer still gets the
// verdict. The audit bucket does not exist, so moto refuses the write as S3
// would; the verdict is stored and mailed all the same.
func TestFailedAuditWriteAlertsAndTheVerdictIsStillMailed(t *testing.T) {
	e := newEnv(t)
	// A bucket name no test creates: the fixture's own, suffixed.
	e.h.Audit.Writer = audit.NewWriter(e.s3, e.f.Ref("AuditBucket")+"-missing")
	id := "cs_test_genauditfail"
	query := "Should I sell my grandmother's recipe book?"
	e.paid(id, oracle.TierQuick, query)

	if failed := e.run(record("m1", job(id), 1)); len(failed) != 0 {
		t.Fatalf("failed items %q: an audit failure must not hold back the verdict", failed)
	}
	if o := e.order(id); o.Status != oracle.StatusReady || o.Verdict == "" {
		t.Fatalf("order %+v, want READY with the verdict", o)
	}
	jobs := e.mailJobs()
	if len(jobs) != 1 || jobs[0].SessionID != id || jobs[0].Kind != oracle.MailVerdict {
		t.Fatalf("mail jobs %+v, want one verdict mail for %s", jobs, id)
	}
	alerts := e.alerts()
	if len(alerts) != 1 || !strings.HasPrefix(alerts[0], "[ORACLE-ALERT] ERROR |") || !strings.Contains(alerts[0], "| AUDIT_WRITE_FAILED |") {
		t.Fatalf("alerts %q, want one ERROR AUDIT_WRITE_FAILED", alerts)
	}
	// Neither the alert nor the log may quote the customer's query.
	logs := e.logs.String()
	if !strings.Contains(logs, "audit write failed") {
		t.Fatal("the failed audit write was not logged")
	}
	if strings.Contains(alerts[0], query) || strings.Contains(logs, query) {
		t.Fatal("the query leaked into the alert or the log")
	}
	// Nothing reached the real bucket: the failure injected is the one seen.
	if recs := testkit.AuditRecords(e.t, e.s3, e.f.Ref("AuditBucket")); len(recs) != 0 {
		t.Fatalf("%d audit records in the real bucket, want 0", len(recs))
	}
}

func TestTransientFailuresAreRetriedThenParked(t *testing.T) {
	// GEMINI_TIMEOUT VC-2 on the generator's path: three failed calls with
	// bounded backoffs; the order then waits, it does not fail.
	e := newEnv(t)
	id := "cs_test_transient"
	e.paid(id, oracle.TierQuick, "q")
	e.control(fakegemini.Scenario{Status: 503, Calls: 3})
	if failed := e.run(record("m1", job(id), 1)); len(failed) != 0 {
		t.Fatal("a parked job failed its item")
	}
	if calls := len(e.model.Calls()); calls != 3 {
		t.Fatalf("%d calls, want 3", calls)
	}
	if len(e.slept) != 2 || e.slept[0] != 500*time.Millisecond || e.slept[1] != time.Second {
		t.Fatalf("backoffs %v, want rand×1s and rand×2s with rand 0.5", e.slept)
	}
	o := e.order(id)
	if o.Verdict != "" || o.Status == oracle.StatusFailed || o.ParkedSince == nil {
		t.Fatalf("order %+v", o)
	}
	jobs := e.generateJobs()
	if len(jobs) != 1 || jobs[0].Attempt != 1 || jobs[0].NotBefore == nil || !jobs[0].NotBefore.Equal(e.clock.Now().Add(22500*time.Millisecond)) {
		t.Fatalf("re-delayed jobs %+v, want attempt 1 after 22.5 s", jobs)
	}
	if st, _ := e.breaker.State(context.Background()); st.Failures != 1 {
		t.Fatalf("circuit %+v, want one final failure counted", st)
	}
	// The re-delayed job, delivered early, hops until its time.
	if failed := e.run(record("m2", mustJSON(t, jobs[0]), 1)); len(failed) != 0 || len(e.model.Calls()) != 3 {
		t.Fatal("an early job called the model")
	}
	e.clock.Add(30 * time.Second)
	next := e.generateJobs()
	if len(next) != 1 {
		t.Fatalf("hop: %+v", next)
	}
	if failed := e.run(record("m3", mustJSON(t, next[0]), 1)); len(failed) != 0 {
		t.Fatal("the retry failed")
	}
	if o := e.order(id); o.Status != oracle.StatusReady || o.ParkedSince != nil {
		t.Fatalf("after the model came back: %+v", o)
	}
}

// GAP-02B: a model that answers only after retries is slow, however fast
// its last attempt: the circuit is told the whole call's latency.
func TestAnswerAfterRetriesCountsAsSlow(t *testing.T) {
	e := newEnv(t)
	// Backoffs pass on the clock; one slow success over 1 s trips.
	e.caller.Sleep = func(ctx context.Context, d time.Duration) error {
		e.slept = append(e.slept, d)
		e.clock.Add(d)
		return ctx.Err()
	}
	e.breaker = circuit.New(awsenv.NewTables(e.f.AWS), e.f.Ref("LedgerTable"), "gemini",
		circuit.Options{SlowThreshold: time.Second, SlowCalls: 1}, e.clock.Now)
	e.h.Circuit = e.breaker
	id := "cs_test_slowretries"
	e.paid(id, oracle.TierQuick, "q")
	e.control(fakegemini.Scenario{Status: 503, Calls: 2})
	if failed := e.run(record("m1", job(id), 1)); len(failed) != 0 {
		t.Fatal("the generation failed")
	}
	if o := e.order(id); o.Status != oracle.StatusReady || len(e.slept) != 2 {
		t.Fatalf("order %s after backoffs %v, want READY after two", o.Status, e.slept)
	}
	if st, _ := e.breaker.State(context.Background()); st.State != circuit.Open || st.Reason != circuit.ReasonSlow {
		t.Fatalf("circuit %+v, want OPEN (slow): the call took %v with its backoffs", st, e.slept[0]+e.slept[1])
	}
}

func mustJSON(t *testing.T, j queue.Job) string {
	t.Helper()
	b, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestOpenCircuitParksWithoutCallingTheModel(t *testing.T) {
	// GEMINI_TIMEOUT VC-4 and REGEN/ops: five final failures open the
	// circuit; the next order is parked without a call until the circuit
	// half-opens; one probe closes it; past the parking budget an order fails.
	e := newEnv(t)
	e.control(fakegemini.Scenario{Status: 503, Calls: 15})
	for i := range 5 {
		id := fmt.Sprintf("cs_test_storm%d", i)
		e.paid(id, oracle.TierQuick, "q")
		e.run(record("s"+id, job(id), 1))
	}
	if calls := len(e.model.Calls()); calls != 15 {
		t.Fatalf("%d calls, want 5 orders × 3", calls)
	}
	if st, _ := e.breaker.State(context.Background()); st.State != circuit.Open {
		t.Fatalf("circuit %+v, want OPEN", st)
	}
	opened := 0
	for _, a := range e.alerts() {
		if strings.Contains(a, "CIRCUIT_OPEN") {
			opened++
		}
	}
	if opened != 1 {
		t.Fatalf("alerts %q, want one CIRCUIT_OPEN", e.alerts())
	}
	e.generateJobs() // the five re-delayed jobs

	id := "cs_test_parked"
	e.paid(id, oracle.TierQuick, "q")
	if failed := e.run(record("p1", job(id), 1)); len(failed) != 0 || len(e.model.Calls()) != 15 {
		t.Fatal("an open circuit let a call through or failed the item")
	}
	jobs := e.generateJobs()
	// The circuit keeps its times in milliseconds.
	if len(jobs) != 1 || jobs[0].Attempt != 0 || jobs[0].NotBefore.Sub(e.clock.Now().Add(time.Minute)).Abs() >= time.Millisecond {
		t.Fatalf("parked jobs %+v, want the job unchanged until the circuit half-opens", jobs)
	}
	if o := e.order(id); o.Status != oracle.StatusPaid || o.Attempts != 0 || o.ParkedSince == nil {
		t.Fatalf("parked order %+v", o)
	}

	// Half-open: the model is back; the probe succeeds and closes it.
	e.control(fakegemini.Scenario{})
	e.clock.Add(time.Minute)
	if failed := e.run(record("p2", mustJSON(t, jobs[0]), 1)); len(failed) != 0 {
		t.Fatal("the probe failed")
	}
	if o := e.order(id); o.Status != oracle.StatusReady {
		t.Fatalf("order after the probe %+v", o)
	}
	if st, _ := e.breaker.State(context.Background()); st.State != circuit.Closed {
		t.Fatalf("circuit %+v, want CLOSED", st)
	}
}

func TestParkingBudgetEndsInFailedWithNotice(t *testing.T) {
	e := newEnv(t)
	e.h.ParkingBudget = 2 * time.Hour // the default's 6 h, compressed
	ctx := context.Background()
	for range 5 {
		p, _ := e.breaker.Allow(ctx)
		if _, err := e.breaker.Failed(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	id := "cs_test_budget"
	e.paid(id, oracle.TierFull, "q")
	body := job(id)
	for hour := 0; ; hour++ {
		if hour > 3 {
			t.Fatal("the order was parked past its budget")
		}
		if failed := e.run(record("b", body, 1)); len(failed) != 0 {
			t.Fatal("the item failed")
		}
		if o := e.order(id); o.Status == oracle.StatusFailed {
			break
		}
		jobs := e.generateJobs()
		if len(jobs) != 1 {
			t.Fatalf("parked jobs %+v", jobs)
		}
		body = mustJSON(t, jobs[0])
		e.clock.Add(time.Hour)
		// Keep the circuit open: a new trip each hour.
		p, err := e.breaker.Allow(ctx)
		if err == nil {
			_, _ = e.breaker.Failed(ctx, p)
		}
	}
	if len(e.model.Calls()) != 0 {
		t.Fatal("the model was called through an open circuit")
	}
	if jobs := e.mailJobs(); len(jobs) != 1 || jobs[0].Kind != oracle.MailFailed {
		t.Fatalf("mail jobs %+v, want the failure notice", jobs)
	}
	failed := 0
	for _, a := range e.alerts() {
		if strings.Contains(a, "GENERATION_FAILED") {
			failed++
		}
	}
	if failed != 1 {
		t.Fatalf("alerts %q", e.alerts())
	}
}

func TestRefusedRequestsAreNeverRetried(t *testing.T) {
	tests := []struct {
		status int
		code   string
		failed bool // the order fails at once (bad request) or is parked (key)
	}{
		{401, "GEMINI_AUTH_FAILURE", false},
		{400, "GEMINI_BAD_REQUEST", true},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprint(tc.status), func(t *testing.T) {
			e := newEnv(t)
			e.h.Key = &KeyHealth{Check: func(context.Context) error { return nil }, Recheck: time.Minute, Alerts: e.h.Alerts, Now: e.clock.Now}
			id := fmt.Sprintf("cs_test_refused%d", tc.status)
			e.paid(id, oracle.TierQuick, "q")
			e.control(fakegemini.Scenario{Status: tc.status})
			if failed := e.run(record("r", job(id), 1)); len(failed) != 0 {
				t.Fatal("the item failed")
			}
			if len(e.model.Calls()) != 1 || len(e.slept) != 0 {
				t.Fatalf("%d calls and backoffs %v, want one call and none", len(e.model.Calls()), e.slept)
			}
			if !strings.Contains(e.logs.String(), tc.code) {
				t.Fatalf("no %s in the logs", tc.code)
			}
			o := e.order(id)
			if (o.Status == oracle.StatusFailed) != tc.failed {
				t.Fatalf("order %+v", o)
			}
			if st, _ := e.breaker.State(context.Background()); st.Failures != 0 {
				t.Fatal("a refusal counted against the circuit")
			}
			if tc.failed {
				return
			}
			// A refused key: CRITICAL, and the next job waits without a call.
			if a := e.alerts(); len(a) != 1 || !strings.Contains(a[0], "CRITICAL") {
				t.Fatalf("alerts %q", a)
			}
			e.generateJobs()
			if e.run(record("r2", job(id), 1)); len(e.model.Calls()) != 1 {
				t.Fatal("a job went to the model with a refused key")
			}
		})
	}
}

func TestKeyCheckAtColdStart(t *testing.T) {
	e := newEnv(t)
	srv := httptest.NewServer(e.model)
	defer srv.Close()
	for _, tc := range []struct {
		key     string
		healthy bool
	}{{"test-key", true}, {fakegemini.InvalidKey, false}} {
		client, err := gemini.New(context.Background(), gemini.Options{APIKey: tc.key, BaseURL: srv.URL})
		if err != nil {
			t.Fatal(err)
		}
		k := &KeyHealth{Check: client.CheckKey, Recheck: time.Minute, Alerts: e.h.Alerts, Now: e.clock.Now}
		if got := k.Verify(context.Background()); got != tc.healthy {
			t.Errorf("key %q: healthy %v, want %v", tc.key, got, tc.healthy)
		}
		if _, rejected := k.Rejected(context.Background()); rejected == tc.healthy {
			t.Errorf("key %q: rejected %v", tc.key, rejected)
		}
	}
	if a := e.alerts(); len(a) != 1 || !strings.Contains(a[0], "CRITICAL") || !strings.Contains(a[0], "GEMINI_AUTH_FAILURE") {
		t.Fatalf("alerts %q, want one CRITICAL for the refused key", a)
	}
}

func TestCrosscheckFailureHoldsTheOrder(t *testing.T) {
	// CROSSCHECK VC-5: a rejected reply is never stored or mailed; one
	// fresh generation is tried; a second rejection holds the order.
	for _, tc := range []struct {
		name  string
		calls int
		want  oracle.Status
	}{{"second reply passes", 1, oracle.StatusReady}, {"both rejected", 2, oracle.StatusHeld}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			id := "cs_test_xcheck" + fmt.Sprint(tc.calls)
			e.paid(id, oracle.TierQuick, "q")
			e.control(fakegemini.Scenario{Incomplete: true, Calls: tc.calls})
			if failed := e.run(record("x", job(id), 1)); len(failed) != 0 {
				t.Fatal("the item failed")
			}
			o := e.order(id)
			if o.Status != tc.want || len(e.model.Calls()) != 2 {
				t.Fatalf("order %+v after %d calls", o, len(e.model.Calls()))
			}
			n := e.byEvent()
			if n["tmm_crosscheck/ERROR"] != tc.calls {
				t.Fatalf("audit %v", n)
			}
			jobs := e.mailJobs()
			if tc.want == oracle.StatusReady {
				if len(jobs) != 1 || jobs[0].Kind != oracle.MailVerdict {
					t.Fatalf("mail jobs %+v", jobs)
				}
				return
			}
			if o.Verdict != "" || len(jobs) != 1 || jobs[0].Kind != oracle.MailReview {
				t.Fatalf("held order %+v with mail jobs %+v, want no verdict and the review notice", o, jobs)
			}
			if a := e.alerts(); len(a) != 1 || !strings.Contains(a[0], "VERDICT_HELD") {
				t.Fatalf("alerts %q", a)
			}
		})
	}
}

// A prompt the model refuses, and refuses again on the stricter retry, is
// a content outcome: the order is HELD within the one job, with the review
// notice and one alert, instead of parked until the budget ends.
func TestAPromptRefusedTwiceHoldsTheOrder(t *testing.T) {
	e := newEnv(t)
	const id = "cs_test_refusedPrompt0001"
	e.paid(id, oracle.TierFull, "q")
	e.control(fakegemini.Scenario{Blocked: true, Calls: 2})
	if failed := e.run(record("x", job(id), 1)); len(failed) != 0 {
		t.Fatal("the item failed: SQS would deliver it again")
	}
	o := e.order(id)
	if o.Status != oracle.StatusHeld || o.Verdict != "" || len(e.model.Calls()) != 2 {
		t.Fatalf("order %s (verdict %q) after %d calls, want HELD after 2", o.Status, o.Verdict, len(e.model.Calls()))
	}
	if jobs := e.mailJobs(); len(jobs) != 1 || jobs[0].Kind != oracle.MailReview {
		t.Fatalf("mail jobs %+v, want the review notice", jobs)
	}
	if jobs := e.generateJobs(); len(jobs) != 0 {
		t.Fatalf("the job was parked: %+v", jobs)
	}
	if a := e.alerts(); len(a) != 1 || !strings.Contains(a[0], "ERROR") || !strings.Contains(a[0], "VERDICT_HELD") || !strings.Contains(a[0], "refused the prompt twice") {
		t.Fatalf("alerts %q", a)
	}
	if n := e.byEvent(); n["generation_failed/ERROR"] != 1 {
		t.Fatalf("audit %v, want the held record", n)
	}
}

func TestRegenerationIsConsistentAndChecked(t *testing.T) {
	// REGEN_CONSISTENCY VC-1, VC-2, VC-3, VC-5, VC-6 on the generator.
	for _, tc := range []struct {
		regen  oracle.Verdict
		level  string
		notice bool
	}{
		{oracle.VerdictGreen, oracle.DivergenceNone, false},
		{oracle.VerdictAmber, oracle.DivergenceMinor, false},
		{oracle.VerdictRed, oracle.DivergenceSignificant, true},
		{oracle.VerdictNull, oracle.DivergenceSignificant, true},
	} {
		t.Run(string(tc.regen), func(t *testing.T) {
			e := newEnv(t)
			id := "cs_test_regen" + strings.ToLower(string(tc.regen))
			e.paid(id, oracle.TierFull, "Open a second bakery")
			e.control(fakegemini.Scenario{Verdict: oracle.VerdictGreen})
			e.run(record("g", job(id), 1))
			if kinds := mailKinds(e.mailJobs()); !slices.Equal(kinds, []oracle.MailKind{oracle.MailVerdict}) {
				t.Fatalf("first generation's mail jobs %v, want one verdict", kinds)
			}
			first := e.order(id)
			e.wantOriginal(id, oracle.Original{Verdict: oracle.VerdictGreen, Hash: first.VerdictHash})
			e.clock.Add(e.h.Retention + time.Hour)
			e.control(fakegemini.Scenario{Verdict: tc.regen})
			if failed := e.run(record("r", fmt.Sprintf(`{"session_id":%q,"reason":"regenerate","attempt":0}`, id), 1)); len(failed) != 0 {
				t.Fatal("the regeneration failed")
			}
			o := e.order(id)
			if o.Status != oracle.StatusReady || !o.Regen || o.RegenReason == "" || o.VerdictLabel != tc.regen ||
				o.OriginalVerdict != oracle.VerdictGreen || o.Divergence != tc.level {
				t.Fatalf("regenerated order %+v", o)
			}
			calls := e.model.Calls()
			if len(calls) != 2 || calls[0].SystemInstruction != calls[1].SystemInstruction || calls[0].UserText != calls[1].UserText {
				t.Fatal("the regeneration's prompt differs from the first")
			}
			for _, c := range calls {
				g := c.GenerationConfig
				if g.Temperature == nil || *g.Temperature != 0 || g.TopK == nil || *g.TopK != 1 || g.CandidateCount == nil || *g.CandidateCount != 1 || g.Seed == nil || *g.Seed != int64(prompt.Seed) {
					t.Fatalf("generation settings %+v", g)
				}
			}
			var divergence []audit.Record
			for _, r := range testkit.AuditRecords(e.t, e.s3, e.f.Ref("AuditBucket")) {
				if r.Event == "regen_divergence_check" {
					divergence = append(divergence, r)
				}
			}
			if len(divergence) != 1 || divergence[0].Divergence.DivergenceLevel != tc.level || divergence[0].Divergence.OriginalVerdict != "GREEN" {
				t.Fatalf("divergence records %+v", divergence)
			}
			// The emailed verdict stands: no second verdict email, only the
			// notice when the divergence owes it; the original is kept.
			var want []oracle.MailKind
			if tc.notice {
				want = []oracle.MailKind{oracle.MailDivergence}
			}
			if kinds := mailKinds(e.mailJobs()); !slices.Equal(kinds, want) {
				t.Fatalf("regeneration's mail jobs %v, want %v", kinds, want)
			}
			e.wantOriginal(id, oracle.Original{Verdict: oracle.VerdictGreen, Hash: first.VerdictHash})
		})
	}
}

// An order deleted at the end of its retention and claimed again from the
// kept original (REGEN-GAP-02) is generated as a regeneration: compared
// with the emailed verdict, never emailed again.
func TestRestoredOrderIsComparedWithTheKeptOriginal(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	id := "cs_test_restoredorderxxxx"
	original := oracle.Original{Verdict: oracle.VerdictGreen, Hash: "hmac-sha256:0123456789abcdef0123456789abcdef"}
	c, err := e.orders.ClaimOrder(ctx, oracle.Order{SessionID: id, Status: oracle.StatusPaid, Tier: oracle.TierQuick, Query: "Open a second bakery",
		AmountTotal: 100, Currency: "cad", Source: oracle.SourceResultPage, SessionCreated: time.Now().UTC(),
		Regen: true, RegenReason: oracle.RegenExpired, OriginalVerdict: original.Verdict, OriginalVerdictHash: original.Hash}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.orders.JobEnqueued(ctx, id, c.Lease); err != nil {
		t.Fatal(err)
	}
	e.control(fakegemini.Scenario{Verdict: oracle.VerdictRed})
	if failed := e.run(record("r", fmt.Sprintf(`{"session_id":%q,"reason":"regenerate","attempt":0}`, id), 1)); len(failed) != 0 {
		t.Fatal("the regeneration failed")
	}
	if o := e.order(id); o.Status != oracle.StatusReady || o.VerdictLabel != oracle.VerdictRed || o.Divergence != oracle.DivergenceSignificant {
		t.Fatalf("restored order %+v", o)
	}
	if kinds := mailKinds(e.mailJobs()); !slices.Equal(kinds, []oracle.MailKind{oracle.MailDivergence}) {
		t.Fatalf("mail jobs %v, want only the divergence notice", kinds)
	}
	e.wantOriginal(id, original)
}

func mailKinds(jobs []queue.Job) []oracle.MailKind {
	var kinds []oracle.MailKind
	for _, j := range jobs {
		kinds = append(kinds, j.Kind)
	}
	return kinds
}

// wantOriginal checks the first verdict kept in the Ledger for the session.
func (e *env) wantOriginal(id string, want oracle.Original) {
	e.t.Helper()
	got, kept, err := e.ledger.Original(context.Background(), id)
	if err != nil || !kept || got != want {
		e.t.Fatalf("original kept %v %+v (%v), want %+v", kept, got, err, want)
	}
}

// A quarantine reminder of the retired chain (the health job re-alerts
// unresolved quarantines now), still on the queue when the generator
// deployed, is acknowledged at once, due or not: nothing is alerted,
// mailed or sent on, and the order is left as it is.
func TestARetiredQuarantineReminderIsAcknowledged(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	id := "cs_test_retiredreminder"
	e.paid(id, oracle.TierFull, "Open a second bakery")
	_, lease, err := e.orders.StartGeneration(ctx, id, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := e.orders.QuarantineGeneration(ctx, id, lease, store.Quarantine{Gate: "generator", Terms: []string{"cat3.csdm"}, Record: "quarantine/x.json", FilterVersion: "v1"}); err != nil || !ok {
		t.Fatalf("quarantine: %v %v", ok, err)
	}
	before := e.order(id)
	due := e.clock.Now().UTC().Format(time.RFC3339)
	later := e.clock.Now().Add(20 * time.Hour).UTC().Format(time.RFC3339)
	for i, body := range []string{
		fmt.Sprintf(`{"session_id":%q,"reason":"quarantine_review","attempt":3,"not_before":%q}`, id, due),
		fmt.Sprintf(`{"session_id":%q,"reason":"quarantine_review","attempt":0,"not_before":%q}`, id, later),
	} {
		if failed := e.run(record(fmt.Sprint("q", i), body, 1)); len(failed) != 0 {
			t.Fatalf("reminder %d failed", i)
		}
	}
	if alerts := e.alerts(); len(alerts) != 0 {
		t.Fatalf("alerts %q, want none", alerts)
	}
	if mails := e.mailJobs(); len(mails) != 0 {
		t.Fatalf("mail jobs %+v, want none", mails)
	}
	if next := e.generateJobs(); len(next) != 0 {
		t.Fatalf("generate jobs %+v, want none", next)
	}
	if after := e.order(id); after.Status != oracle.StatusQuarantined || after.Attempts != before.Attempts {
		t.Fatalf("order %+v, want it left QUARANTINED", after)
	}
	if n := strings.Count(e.logs.String(), "reminders now come from the health job"); n != 2 {
		t.Fatalf("%d acknowledgements logged, want 2:\n%s", n, e.logs.String())
	}
	if len(e.model.Calls()) != 0 {
		t.Fatal("the model was asked")
	}
}

// Gate 1 (SPEC_ORACLE_SOS_FILTER): a replaceable leak is stored cleaned; a
// quarantine-class one is never stored or mailed, kept whole for review,
// alerted, and the customer is told it is under review; a term the
// customer's own query holds is no exception (invariant 1).
func TestGateOneFiltersEveryVerdictBeforeItIsStored(t *testing.T) {
	tests := []struct {
		name        string
		tier        oracle.Tier
		query       string
		leak        []string
		action      string
		terms       []string
		quarantined bool
	}{
		{name: "clean", tier: oracle.TierQuick, query: "Should I open a bakery on my street?", action: "PASS"},
		{name: "replaced", tier: oracle.TierQuick, query: "Should I open a bakery on my street?", leak: []string{"TMM"}, action: "REPLACE", terms: []string{"cat3.tmm"}},
		{name: "quarantined", tier: oracle.TierFull, query: "Should I open a bakery on my street?", leak: []string{"CSDM"}, action: "QUARANTINE", terms: []string{"cat3.csdm"}, quarantined: true},
		{name: "too dense to repair", tier: oracle.TierFull, query: "Should I open a bakery on my street?", leak: []string{"TMM"}, action: "QUARANTINE", terms: []string{"cat3.tmm"}, quarantined: true},
		{name: "repeated from the query", tier: oracle.TierQuick, query: "Should I sell my TMM consulting practice?", leak: []string{"TMM"}, action: "REPLACE", terms: []string{"cat3.tmm"}},
		{name: "a quarantined term from the query", tier: oracle.TierQuick, query: "Should I build on the CSDM framework?", leak: []string{"CSDM"}, action: "QUARANTINE", terms: []string{"cat3.csdm"}, quarantined: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			id := "cs_test_gate1" + strings.ReplaceAll(tc.name, " ", "") + strings.Repeat("x", 40) // long enough that its alert name is not the whole id
			e.paid(id, tc.tier, tc.query)
			// The model leaks in both writings: gate 1 sends the first back
			// to be written again, and decides on the second.
			e.control(fakegemini.Scenario{LeakTerms: tc.leak, Calls: 2})
			if failed := e.run(record("g", job(id), 1)); len(failed) != 0 {
				t.Fatal("the generation failed")
			}
			o := e.order(id)
			var filter, rewrite *audit.Filter
			for _, r := range testkit.AuditRecords(e.t, e.s3, e.f.Ref("AuditBucket")) {
				switch {
				case r.Event == "sos_filter" && r.Filter.Action == audit.FilterRewrite:
					rewrite = r.Filter
				case r.Event == "sos_filter":
					filter = r.Filter
				}
			}
			if filter == nil || filter.Gate != "generator" || filter.Action != tc.action || !slices.Equal(filter.TermIDs, orEmpty(tc.terms)) || filter.Version == "" {
				t.Fatalf("filter record %+v, want %s %v", filter, tc.action, tc.terms)
			}
			calls := len(e.model.Calls())
			if tc.leak == nil {
				if rewrite != nil || calls != 1 {
					t.Fatalf("a clean verdict written again (%+v, %d model calls)", rewrite, calls)
				}
			} else if rewrite == nil || rewrite.Gate != "generator" || !slices.Equal(rewrite.TermIDs, tc.terms) || calls != 2 {
				t.Fatalf("rewrite record %+v after %d model calls, want one REWRITE of %v", rewrite, calls, tc.terms)
			}
			alerts := e.alerts()
			mails := mailKinds(e.mailJobs())
			if !tc.quarantined {
				if o.Status != oracle.StatusReady || o.FilterVersion != filter.Version || !slices.Equal(mails, []oracle.MailKind{oracle.MailVerdict}) || len(alerts) != 0 {
					t.Fatalf("order %s (filter %q), mails %v, alerts %q: want READY and mailed", o.Status, o.FilterVersion, mails, alerts)
				}
				if strings.Contains(o.Verdict, "TMM") {
					t.Fatalf("stored verdict %s", o.Verdict)
				}
				return
			}
			if o.Status != oracle.StatusQuarantined || o.Verdict != "" || o.QuarantineGate != "generator" || !slices.Equal(o.QuarantineTerms, tc.terms) || o.QuarantineRecord == "" {
				t.Fatalf("order %+v, want QUARANTINED with nothing stored", o)
			}
			if !slices.Equal(mails, []oracle.MailKind{oracle.MailReview}) {
				t.Fatalf("mail jobs %v, want only the review notice", mails)
			}
			if len(alerts) != 1 || !strings.HasPrefix(alerts[0], "[ORACLE-ALERT] CRITICAL |") || !strings.Contains(alerts[0], "| VERDICT_QUARANTINED |") ||
				!strings.Contains(alerts[0], tc.terms[0]) || strings.Contains(alerts[0], tc.query) || strings.Contains(alerts[0], id) {
				t.Fatalf("alerts %q", alerts)
			}
			rec := e.quarantineRecord(o.QuarantineRecord)
			if rec.SessionID != id || rec.Tier != string(tc.tier) || rec.Gate != "generator" || !slices.Equal(rec.Terms, tc.terms) || rec.QuarantinedAt.IsZero() ||
				!strings.Contains(string(rec.Raw), tc.leak[0]) || rec.Model == "" || rec.AmountTotal != tc.tier.PriceCents() {
				t.Fatalf("quarantine record %+v", rec)
			}
			// The health job re-alerts it; nothing waits on the generate queue.
			if next := e.generateJobs(); len(next) != 0 {
				t.Fatalf("generate jobs %+v, want none", next)
			}
			// A redelivery asks nothing of the model and queues the review
			// notice again, in case the first attempt died before: the mailer
			// sends it once.
			e.run(record("again", job(id), 2))
			mails = mailKinds(e.mailJobs())
			next := e.generateJobs()
			if o := e.order(id); o.Status != oracle.StatusQuarantined || len(e.model.Calls()) != 2 || !slices.Equal(mails, []oracle.MailKind{oracle.MailReview}) ||
				len(next) != 0 || len(e.alerts()) != 0 {
				t.Fatalf("after a redelivery: %s, %d model calls, mails %v, generate jobs %+v", o.Status, len(e.model.Calls()), mails, next)
			}
		})
	}
}

// Gate 1 reads the model's text without its markup, and stores it so: a
// term cut by a tag or written as a character reference is caught, and no
// tag reaches the customer as visible junk.
func TestGateOneReadsTheModelsTextWithoutMarkup(t *testing.T) {
	for _, tc := range []struct {
		name, leak, action string
		terms              []string
	}{
		{"a tag between letters", "AI<b></b>ON", "REPLACE", []string{"cat2.aion"}},
		{"a character reference for a letter", "CS&#68;M", "QUARANTINE", []string{"cat3.csdm"}},
		{"markup around plain words", "<b>strong</b> demand &amp; fair margins", "PASS", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			id := "cs_test_markup" + strings.ReplaceAll(tc.name, " ", "")
			e.paid(id, oracle.TierQuick, "Should I open a bakery on my street?")
			e.control(fakegemini.Scenario{LeakTerms: []string{tc.leak}, Calls: 2}) // in both writings
			if failed := e.run(record("g", job(id), 1)); len(failed) != 0 {
				t.Fatal("the generation failed")
			}
			var filter *audit.Filter
			for _, r := range testkit.AuditRecords(e.t, e.s3, e.f.Ref("AuditBucket")) {
				if r.Event == "sos_filter" {
					filter = r.Filter
				}
			}
			if filter == nil || filter.Action != tc.action || !slices.Equal(filter.TermIDs, orEmpty(tc.terms)) {
				t.Fatalf("filter record %+v, want %s %v", filter, tc.action, tc.terms)
			}
			o := e.order(id)
			if tc.action == "QUARANTINE" {
				if o.Status != oracle.StatusQuarantined || o.Verdict != "" {
					t.Fatalf("order %s with verdict %q, want QUARANTINED", o.Status, o.Verdict)
				}
				return
			}
			if o.Status != oracle.StatusReady || strings.ContainsAny(o.Verdict, "<>") || strings.Contains(o.Verdict, "&amp;") || strings.Contains(o.Verdict, "AION") {
				t.Fatalf("order %s, stored verdict %s", o.Status, o.Verdict)
			}
			if tc.action == "PASS" && !strings.Contains(o.Verdict, "strong demand & fair margins") {
				t.Fatalf("stored verdict %s, want the words without their markup", o.Verdict)
			}
		})
	}
}

// If the review record cannot be written, nothing is delivered or decided
// (fail closed, GAP-L): the generation is released for a retry and the
// operator is told.
func TestQuarantineFailsClosedWhenItsRecordCannotBeWritten(t *testing.T) {
	e := newEnv(t)
	e.h.Quarantine = quarantine.NewStore(e.s3, e.f.Ref("QuarantineBucket")+"-missing")
	id := "cs_test_gate1recordfails"
	e.paid(id, oracle.TierQuick, "Should I open a bakery on my street?")
	e.control(fakegemini.Scenario{LeakTerms: []string{"CSDM"}, Calls: 2})
	if failed := e.run(record("g", job(id), 1)); len(failed) != 1 {
		t.Fatal("the job did not fail for a retry")
	}
	if o := e.order(id); o.Status != oracle.StatusGenerating || o.Verdict != "" || e.leased(id) {
		t.Fatalf("order %+v, want nothing stored and the lease released", o)
	}
	if mails := e.mailJobs(); len(mails) != 0 {
		t.Fatalf("mail jobs %v", mails)
	}
	if alerts := e.alerts(); len(alerts) != 1 || !strings.Contains(alerts[0], "CRITICAL") || !strings.Contains(alerts[0], "| QUARANTINE_RECORD_FAILED |") {
		t.Fatalf("alerts %q", alerts)
	}
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// quarantineRecord reads a record from the quarantine bucket.
func (e *env) quarantineRecord(key string) quarantine.Record {
	e.t.Helper()
	out, err := e.s3.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(e.f.Ref("QuarantineBucket")), Key: aws.String(key)})
	if err != nil {
		e.t.Fatal(err)
	}
	defer out.Body.Close()
	var r quarantine.Record
	if err := json.NewDecoder(out.Body).Decode(&r); err != nil {
		e.t.Fatal(err)
	}
	return r
}

// A job redelivered after its order was settled without a verdict (the
// attempt that settled it may have died before queueing the notice) queues
// the notice again and asks nothing of the model.
func TestSettledOrderQueuesItsNoticeAgain(t *testing.T) {
	for _, tc := range []struct {
		name   string
		settle func(e *env, id, lease string) (bool, error)
		notice oracle.MailKind
	}{
		{"failed", func(e *env, id, _ string) (bool, error) {
			return e.orders.MarkFailed(context.Background(), id, "model_unavailable")
		}, oracle.MailFailed},
		{"held", func(e *env, id, lease string) (bool, error) {
			return e.orders.Hold(context.Background(), id, lease, "crosscheck_low_coherence")
		}, oracle.MailReview},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			id := "cs_test_settled" + tc.name
			e.paid(id, oracle.TierQuick, "Open a second bakery")
			_, lease, err := e.orders.StartGeneration(context.Background(), id, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if ok, err := tc.settle(e, id, lease); err != nil || !ok {
				t.Fatalf("settle: %v %v", ok, err)
			}
			if failed := e.run(record("again", job(id), 2)); len(failed) != 0 {
				t.Fatal("the redelivery failed")
			}
			if kinds := mailKinds(e.mailJobs()); !slices.Equal(kinds, []oracle.MailKind{tc.notice}) || len(e.model.Calls()) != 0 || len(e.generateJobs()) != 0 {
				t.Fatalf("mail jobs %v, %d model calls: want the %s notice only", kinds, len(e.model.Calls()), tc.notice)
			}
		})
	}
}

// TestASmokeVerdictExpiresWithinADay: a smoke order's verdict is kept a
// day at most, so a smoke run whose cleanup failed leaves nothing for
// long; a customer's is kept the whole retention.
func TestASmokeVerdictExpiresWithinADay(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	for _, c := range []struct {
		id     string
		smoke  bool
		expiry time.Duration
	}{
		{"cs_test_gensmoke", true, oracle.SmokeRetention},
		{"cs_test_gencustomer", false, e.h.Retention},
	} {
		claim, err := e.orders.ClaimOrder(ctx, oracle.Order{SessionID: c.id, Status: oracle.StatusPaid, Tier: oracle.TierQuick, Query: "Is the pipeline up?",
			Smoke: c.smoke, AmountTotal: 100, Currency: "cad", Source: oracle.SourceWebhook, SessionCreated: time.Now().UTC()}, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.orders.JobEnqueued(ctx, c.id, claim.Lease); err != nil {
			t.Fatal(err)
		}
		if failed := e.run(record("m"+c.id, job(c.id), 1)); len(failed) != 0 {
			t.Fatalf("%s failed", c.id)
		}
		o := e.order(c.id)
		// The expiry is stored in whole seconds.
		if off := o.Expires.Sub(e.clock.Now().Add(c.expiry)); o.Status != oracle.StatusReady || off < -time.Second || off > time.Second {
			t.Errorf("%s: %s expiring in %v, want READY expiring in %v", c.id, o.Status, o.Expires.Sub(e.clock.Now()), c.expiry)
		}
	}
}

// testAlertTimeout is a test's budget for an alert, not Lambda's: the
// alert's Ledger dedupe gets a third of it, and make test's shared moto
// can take over a second to answer under load.
const testAlertTimeout = 30 * time.Second

// The model's usage metadata (its tokens in, out and thinking) is logged
// with the tier when a verdict is stored, so an operator can sum a tier's
// model cost from the logs as make cost sums the fake's.
func TestTheModelsTokensAreLoggedWithTheVerdict(t *testing.T) {
	e := newEnv(t)
	const id = "cs_test_genTokensLogged"
	e.paid(id, oracle.TierFull, "Should I open a bakery on my street?")
	e.control(fakegemini.Scenario{Verdict: oracle.VerdictGreen})
	if failed := e.run(record("m"+id, job(id), 1)); len(failed) != 0 {
		t.Fatal("the job failed")
	}
	var stored []map[string]any
	for _, l := range strings.Split(e.logs.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["msg"] == "verdict stored" {
			stored = append(stored, m)
		}
	}
	if len(stored) != 1 {
		t.Fatalf("%d verdict stored lines:\n%s", len(stored), e.logs.String())
	}
	l := stored[0]
	in, _ := l["prompt_tokens"].(float64)
	out, _ := l["output_tokens"].(float64)
	if l["tier"] != string(oracle.TierFull) || in < 100 || out < 10 || l["thought_tokens"] != float64(0) {
		t.Errorf("the line %v, want the tier and the fake's tokens in and out (no thinking)", l)
	}
}

// A verdict gate 1 would repair or hold is written again once, the model
// told which words to avoid, and only a second failure is held (issue 41):
// the rewrite is the model call's one stricter retry, so it stays within
// its attempts, and both writings' decisions are audited (entries only).
func TestAFilteredVerdictIsWrittenAgainBeforeItIsHeld(t *testing.T) {
	for i, tc := range []struct {
		name     string
		scenario fakegemini.Scenario
		calls    int
		status   oracle.Status
		decided  string // gate 1's decision on the writing kept
		named    string // the word the correction names
	}{
		{"a held word, written again without it", fakegemini.Scenario{LeakTerms: []string{"CSDM"}}, 2, oracle.StatusReady, "PASS", `"CSDM"`},
		{"a repaired word, written again without it", fakegemini.Scenario{LeakTerms: []string{"TMM"}}, 2, oracle.StatusReady, "PASS", `"TMM"`},
		{"an everyday word in a crew's spelling", fakegemini.Scenario{LeakTerms: []string{"Gamma"}}, 2, oracle.StatusReady, "PASS", `"Gamma"`},
		{"held again: held", fakegemini.Scenario{LeakTerms: []string{"CSDM"}, Calls: 2}, 2, oracle.StatusQuarantined, "QUARANTINE", `"CSDM"`},
		{"the second writing malformed: the first is held", fakegemini.Scenario{LeakTerms: []string{"CSDM"}, Then: &fakegemini.Scenario{Incomplete: true}},
			2, oracle.StatusQuarantined, "QUARANTINE", `"CSDM"`},
		{"the model down for the second: the first is held", fakegemini.Scenario{LeakTerms: []string{"CSDM"}, Then: &fakegemini.Scenario{Status: 503, Calls: 5}},
			3, oracle.StatusQuarantined, "QUARANTINE", `"CSDM"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			id := fmt.Sprintf("cs_test_rewrite%d", i)
			e.paid(id, oracle.TierFull, "Should I open a bakery on my street?")
			e.control(tc.scenario)
			if failed := e.run(record("g", job(id), 1)); len(failed) != 0 {
				t.Fatal("the generation failed")
			}
			o := e.order(id)
			if o.Status != tc.status {
				t.Fatalf("order %s, want %s", o.Status, tc.status)
			}
			if o.Status == oracle.StatusReady && strings.Contains(o.Verdict, tc.scenario.LeakTerms[0]) {
				t.Fatalf("stored verdict %s", o.Verdict)
			}
			calls := e.model.Calls()
			if len(calls) != tc.calls {
				t.Fatalf("%d model calls, want %d", len(calls), tc.calls)
			}
			if strings.Contains(calls[0].SystemInstruction, "CANNOT BE PUBLISHED") || !strings.Contains(calls[1].SystemInstruction, "CANNOT BE PUBLISHED") ||
				!strings.Contains(calls[1].SystemInstruction, "It contained "+tc.named) {
				t.Fatalf("the second call's instruction does not name %s: %s", tc.named, calls[1].SystemInstruction[max(0, len(calls[1].SystemInstruction)-600):])
			}
			var actions []string
			for _, r := range testkit.AuditRecords(e.t, e.s3, e.f.Ref("AuditBucket")) {
				if r.Event == "sos_filter" {
					actions = append(actions, r.Filter.Action+" "+strings.Join(r.Filter.TermIDs, ","))
					if r.Filter.Action == audit.FilterRewrite && !strings.HasPrefix(r.Filter.Reason, "it would have ") {
						t.Errorf("rewrite record's reason %q", r.Filter.Reason)
					}
				}
			}
			slices.Sort(actions)
			if len(actions) != 2 || !strings.HasPrefix(actions[1], "REWRITE ") || !strings.HasPrefix(actions[0], tc.decided) {
				t.Fatalf("gate 1's records %q, want a REWRITE and then %s", actions, tc.decided)
			}
			mails := mailKinds(e.mailJobs())
			want := []oracle.MailKind{oracle.MailVerdict}
			if tc.status == oracle.StatusQuarantined {
				want = []oracle.MailKind{oracle.MailReview}
			}
			if !slices.Equal(mails, want) {
				t.Fatalf("mail jobs %v, want %v", mails, want)
			}
			// A redelivery asks the model nothing more.
			e.run(record("again", job(id), 2))
			if n := len(e.model.Calls()); n != tc.calls {
				t.Fatalf("after a redelivery, %d model calls", n)
			}
		})
	}
}
