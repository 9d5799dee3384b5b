package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	fakestripe "42sisters.ai/oracle/infra/fakes/fakestripe"
	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/fulfil"
	"42sisters.ai/oracle/shared/obs"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/queue"
	"42sisters.ai/oracle/shared/repair"
	"42sisters.ai/oracle/shared/store"
	"42sisters.ai/oracle/shared/stripex"
)

type env struct {
	t      *testing.T
	f      *provision.Fixture
	h      *Handler
	svc    *fulfil.Service
	orders *store.Orders
	stripe string
	sqs    *sqs.Client
	queues *queue.Client
	s3     *s3.Client
	logs   *testkit.Buffer
	clock  *testkit.Clock
	counts counts
}

// counts records the handler's metrics by name.
type counts map[string]float64

func (c counts) Count(name string, n float64) { c[name] += n }

func newEnv(t *testing.T) *env {
	t.Helper()
	f := provision.ForTest(t, nil)
	srv := httptest.NewServer(fakestripe.New(fakestripe.Options{}))
	t.Cleanup(srv.Close)
	e := &env{t: t, f: f, stripe: srv.URL, sqs: sqs.NewFromConfig(f.AWS), queues: queue.NewClient(f.AWS), s3: awsenv.S3(f.AWS), logs: &testkit.Buffer{}, clock: testkit.NewClock(time.Now()), counts: counts{}}
	db := awsenv.NewTables(f.AWS)
	hasher, _ := audit.NewHasher("verdict-test-pepper-0123456789")
	log := obs.NewLogger(e.logs, "DEBUG")
	ledger := store.NewLedger(db, f.Ref("LedgerTable"), e.clock.Now)
	alerts := &alert.Alerter{SNS: awsenv.NewTopics(f.AWS), Topic: f.Ref("AlertsTopic"), Timeout: testAlertTimeout, Dedupe: ledger, Log: log, Now: e.clock.Now}
	metrics := obs.NewMetrics(io.Discard, "Oracle", e.clock.Now)
	e.orders = store.NewOrders(db, f.Ref("OrdersTable"), e.clock.Now)
	auditor := &audit.Recorder{Writer: audit.NewWriter(e.s3, f.Ref("AuditBucket")), Alerts: alerts, Log: log}
	generate := queue.NewSender(e.queues, f.Ref("GenerateQueue"), e.clock.Now)
	e.svc = &fulfil.Service{Orders: e.orders, Generate: generate, Mail: queue.NewSender(e.queues, f.Ref("MailQueue"), e.clock.Now),
		Audit: auditor, Alerts: alerts, Metrics: metrics, Hasher: hasher, Log: log, Now: e.clock.Now, Lease: 30 * time.Second, Retention: 90 * 24 * time.Hour}
	e.h = &Handler{Orders: e.orders, Test: stripex.New("sk_test_verdict", stripex.Options{BaseURL: srv.URL}), Fulfil: e.svc,
		Regen: ledger, Originals: ledger, Generate: generate, Audit: auditor, Alerts: alerts, Metrics: e.counts, Hasher: hasher, Log: log, Now: e.clock.Now,
		Support: "oracle@42sisters.ai", Retention: 90 * 24 * time.Hour,
		Verdicts: &repair.Guard{Orders: e.orders, Hash: hasher.Hash, Generate: generate, Alerts: alerts, Log: log}}
	return e
}

// session creates a Checkout Session at the fake Stripe, paid or not.
func (e *env) session(tier oracle.Tier, query string, paid bool) string {
	e.t.Helper()
	s, err := stripex.New("sk_test_verdict", stripex.Options{BaseURL: e.stripe}).CreateCheckoutSession(context.Background(), stripex.CheckoutRequest{
		Tier: tier, Query: query, SuccessURL: "http://localhost:3000/oracle/result?session_id={CHECKOUT_SESSION_ID}", CancelURL: "http://localhost:3000/",
	})
	if err != nil {
		e.t.Fatal(err)
	}
	if paid {
		c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := c.PostForm(e.stripe+"/pay/"+s.ID, url.Values{"email": {"customer@example.com"}})
		if err != nil {
			e.t.Fatal(err)
		}
		resp.Body.Close()
	}
	return s.ID
}

func (e *env) get(id string) (int, map[string]any) {
	e.t.Helper()
	req := events.APIGatewayV2HTTPRequest{QueryStringParameters: map[string]string{"session_id": id}}
	req.RequestContext.RequestID = "req-" + time.Now().Format("150405.000000000")
	resp, err := e.h.Handle(context.Background(), req)
	if err != nil {
		e.t.Fatal(err)
	}
	var body map[string]any
	if err := json.Unmarshal([]byte(resp.Body), &body); err != nil {
		e.t.Fatalf("body %q: %v", resp.Body, err)
	}
	return resp.StatusCode, body
}

func (e *env) jobs(queueID string) []queue.Job {
	e.t.Helper()
	var out []queue.Job
	for _, b := range testkit.Drain(e.t, e.sqs, e.f.Ref(queueID)) {
		j, err := queue.Parse(b)
		if err != nil {
			e.t.Fatal(err)
		}
		out = append(out, j)
	}
	return out
}

// ready makes the session's order READY with a GREEN verdict expiring at exp.
func (e *env) ready(id string, exp time.Time) {
	e.t.Helper()
	e.readyAs(id, oracle.VerdictGreen, exp)
}

// readyAs is ready with the verdict's label as stored ("" for an order
// stored before labels were kept).
func (e *env) readyAs(id string, label oracle.Verdict, exp time.Time) {
	e.t.Helper()
	ctx := context.Background()
	if code, _ := e.get(id); code != http.StatusAccepted {
		e.t.Fatalf("claim: %d", code)
	}
	_, tok, err := e.orders.StartGeneration(ctx, id, time.Minute)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.orders.StoreVerdict(ctx, id, tok, store.StoredVerdict{Canonical: canonicalGreen, Hash: e.h.Hasher.Hash(canonicalGreen), Label: label, ExpiresAt: exp}); err != nil {
		e.t.Fatal(err)
	}
	e.jobs("GenerateQueue") // drain the claim's job
}

// canonicalGreen is the verdict readyAs stores.
const canonicalGreen = `{"summary":"Go.","verdict":"GREEN"}`

func TestBadAndUnknownSessions(t *testing.T) {
	e := newEnv(t)
	unpaid := e.session(oracle.TierQuick, "q", false)
	cases := []struct {
		name string
		id   string
		want int
	}{
		{"missing", "", http.StatusBadRequest},
		{"malformed", "pi_123", http.StatusBadRequest},
		{"injection", "cs_test_x' OR 1=1", http.StatusBadRequest},
		{"unknown at Stripe", "cs_test_doesnotexist", http.StatusNotFound},
		{"unpaid", unpaid, http.StatusPaymentRequired},
	}
	for _, c := range cases {
		if code, body := e.get(c.id); code != c.want {
			t.Errorf("%s: %d %v, want %d", c.name, code, body, c.want)
		}
	}
	if _, found, _ := e.orders.Get(context.Background(), unpaid); found {
		t.Fatal("an unpaid session left an order behind")
	}
}

func TestLandingFirstThenTheLateWebhook(t *testing.T) {
	e := newEnv(t)
	id := e.session(oracle.TierFull, "Launch a newsletter", true)
	for i := 0; i < 3; i++ {
		if code, body := e.get(id); code != http.StatusAccepted || body["status"] != "pending" {
			t.Fatalf("poll %d: %d %v", i, code, body)
		}
	}
	// The generator takes the job, which records its arrival; the webhook
	// arrives late: the same claim, nothing new. (Before the generator's
	// claim the landing's lease keeps it in flight, answered 409 for
	// Stripe to retry: shared/store's TestTheGeneratorsClaimRecordsTheGenerationJob.)
	if _, _, err := e.orders.StartGeneration(context.Background(), id, time.Minute); err != nil {
		t.Fatal(err)
	}
	s, err := stripex.New("sk_test_verdict", stripex.Options{BaseURL: e.stripe}).RetrieveSession(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Fulfil(context.Background(), s, fulfil.Trigger{Source: oracle.SourceWebhook, Event: audit.EventCheckoutCompleted, EventID: "evt_late", ReceivedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if jobs := e.jobs("GenerateQueue"); len(jobs) != 1 {
		t.Fatalf("%d generation jobs, want 1", len(jobs))
	}
	if o, _, _ := e.orders.Get(context.Background(), id); o.Status != oracle.StatusGenerating || o.Source != oracle.SourceResultPage {
		t.Fatalf("order %+v", o)
	}
}

// TestALandingOfAMisPricedSessionIsUnderReview: a customer who reaches the
// page first for a session not priced as its tier claims it HELD and is
// told at once that it is under review, as every later poll tells them.
func TestALandingOfAMisPricedSessionIsUnderReview(t *testing.T) {
	e := newEnv(t)
	form := url.Values{
		"mode": {"payment"}, "success_url": {"http://localhost:3000/oracle/result?session_id={CHECKOUT_SESSION_ID}"},
		"line_items[0][price_data][currency]": {"cad"}, "line_items[0][price_data][unit_amount]": {"100"},
		"line_items[0][price_data][product_data][name]": {"Strategy Session"}, "line_items[0][quantity]": {"1"},
		"metadata[tier]": {"strategy"}, "metadata[q0]": {"Should I open a board game cafe?"}, "metadata[qn]": {"1"},
	}
	req, _ := http.NewRequest("POST", e.stripe+"/v1/checkout/sessions", strings.NewReader(form.Encode()))
	req.Header.Set("Authorization", "Bearer sk_test_verdict")
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var created struct{ ID string }
	err = json.NewDecoder(resp.Body).Decode(&created)
	resp.Body.Close()
	if err != nil || created.ID == "" {
		t.Fatalf("create the session: %d %v", resp.StatusCode, err)
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if resp, err := c.PostForm(e.stripe+"/pay/"+created.ID, url.Values{"email": {"customer@example.com"}}); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
	}
	for i := 0; i < 2; i++ {
		if code, body := e.get(created.ID); code != http.StatusAccepted || body["status"] != "under_review" {
			t.Fatalf("poll %d: %d %v, want 202 under_review", i, code, body)
		}
	}
	if jobs := e.jobs("GenerateQueue"); len(jobs) != 0 {
		t.Fatalf("generation jobs %+v for a mis-priced session", jobs)
	}
}

// Every load is served and counted on the metric; the audit log keeps one
// CACHED record per session and hour, so reloading the page, a hundred
// times or a thousand, never grows the locked audit bucket beyond that.
func TestStoredVerdictIsServedAndAudited(t *testing.T) {
	e := newEnv(t)
	id := e.session(oracle.TierQuick, "Should I open a bakery?", true)
	e.ready(id, time.Now().Add(3*time.Hour))
	load := func(n int) {
		t.Helper()
		for i := 0; i < n; i++ {
			code, body := e.get(id)
			if code != http.StatusOK || body["status"] != "ready" || body["tier"] != "quick" || body["query"] != "Should I open a bakery?" || body["cached_at"] == nil {
				t.Fatalf("load %d: %d %v", i, code, body)
			}
			if v, _ := body["verdict"].(map[string]any); v["verdict"] != "GREEN" {
				t.Fatalf("verdict %v", body["verdict"])
			}
			if body["retention_days"] != float64(90) {
				t.Fatalf("retention %v", body["retention_days"])
			}
		}
	}
	cached := func() int {
		n := 0
		for _, r := range testkit.AuditRecords(e.t, e.s3, e.f.Ref("AuditBucket")) {
			if r.Status == audit.StatusCached && r.Source == audit.SourceCacheHit {
				n++
			}
		}
		return n
	}
	load(20)
	if n := cached(); n != 1 || e.counts["CacheHits"] != 20 || e.counts["Regenerations"] != 0 {
		t.Fatalf("%d CACHED records, metrics %v; want one record and a cache hit per load", n, e.counts)
	}
	e.clock.Add(time.Hour)
	load(5)
	if n := cached(); n != 2 || e.counts["CacheHits"] != 25 {
		t.Fatalf("%d CACHED records, metrics %v; want a second record in the next hour", n, e.counts)
	}
}

// VC-5: a failed audit write alerts and the customer still gets the
// verdict. The audit bucket does not exist, so moto refuses the write as S3
// would; the page is answered all the same.
func TestFailedAuditWriteAlertsAndTheVerdictIsStillServed(t *testing.T) {
	e := newEnv(t)
	alerts := testkit.AlertTap(t, e.f.AWS, e.f.Ref("AlertsTopic"), provision.TestRegion, provision.Account)
	query := "Should I sell my grandmother's recipe book?"
	id := e.session(oracle.TierQuick, query, true)
	e.ready(id, time.Now().Add(time.Hour))
	// Only the serve's write fails (the claim above audited normally); a
	// bucket name no test creates: the fixture's own, suffixed.
	e.h.Audit = &audit.Recorder{Writer: audit.NewWriter(e.s3, e.f.Ref("AuditBucket")+"-missing"), Alerts: e.h.Alerts, Log: e.h.Log}

	code, body := e.get(id)
	if code != http.StatusOK || body["status"] != "ready" || body["query"] != query {
		t.Fatalf("%d %v, want 200 with the ready verdict", code, body)
	}
	if v, _ := body["verdict"].(map[string]any); v["verdict"] != "GREEN" {
		t.Fatalf("verdict %v", body["verdict"])
	}
	got := alerts()
	if len(got) != 1 || !strings.HasPrefix(got[0], "[ORACLE-ALERT] ERROR |") || !strings.Contains(got[0], "| AUDIT_WRITE_FAILED |") {
		t.Fatalf("alerts %q, want one ERROR AUDIT_WRITE_FAILED", got)
	}
	// Neither the alert nor the log may quote the customer's query or address.
	logs := e.logs.String()
	if !strings.Contains(logs, "audit write failed") {
		t.Fatal("the failed audit write was not logged")
	}
	for _, secret := range []string{query, "customer@example.com"} {
		if strings.Contains(got[0], secret) || strings.Contains(logs, secret) {
			t.Fatalf("%q leaked into the alert or the log", secret)
		}
	}
	// The failure seen is the one injected: no CACHED record reached the real bucket.
	for _, r := range testkit.AuditRecords(e.t, e.s3, e.f.Ref("AuditBucket")) {
		if r.Status == audit.StatusCached {
			t.Fatalf("a CACHED record reached the real bucket: %+v", r)
		}
	}
}

func TestStates(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	failed := e.session(oracle.TierQuick, "q", true)
	e.get(failed)
	e.jobs("GenerateQueue")
	if _, _, err := e.orders.StartGeneration(ctx, failed, time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := e.orders.MarkFailed(ctx, failed, "model_server_error"); err != nil {
		t.Fatal(err)
	}
	// GEMINI_TIMEOUT VC-5: retries exhausted, the order is FAILED: 500
	// with the refund text (and the state the page reads), no verdict.
	code, body := e.get(failed)
	if code != http.StatusInternalServerError || body["error"] != "Analysis failed. Please contact oracle@42sisters.ai for a refund." ||
		body["status"] != "failed" || body["verdict"] != nil {
		t.Fatalf("failed: %d %v", code, body)
	}
	if o, _, _ := e.orders.Get(ctx, failed); o.Verdict != "" {
		t.Fatalf("a failed order holds a verdict: %q", o.Verdict)
	}
	dropped := "cs_test_droppedstatexxxxx"
	if _, err := e.orders.ClaimOrder(ctx, oracle.Order{SessionID: dropped, Status: oracle.StatusDropped, Currency: "cad", Source: oracle.SourceWebhook}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if code, body := e.get(dropped); code != http.StatusOK || body["status"] != "dropped" || !strings.Contains(body["message"].(string), "reply") {
		t.Fatalf("dropped: %d %v", code, body)
	}
}

func TestExpiredVerdictIsRegeneratedAtMostEveryFiveMinutes(t *testing.T) {
	e := newEnv(t)
	id := e.session(oracle.TierQuick, "q", true)
	e.ready(id, time.Now().Add(time.Hour))
	e.clock.Add(2 * time.Hour)
	for i := 0; i < 3; i++ {
		if code, body := e.get(id); code != http.StatusAccepted || body["status"] != "pending" {
			t.Fatalf("poll %d: %d %v", i, code, body)
		}
	}
	jobs := e.jobs("GenerateQueue")
	if len(jobs) != 1 || jobs[0].Reason != queue.ReasonRegenerate || e.counts["Regenerations"] != 1 {
		t.Fatalf("jobs %+v, metrics %v, want one regeneration", jobs, e.counts)
	}
	// A regeneration whose job could not be queued holds nothing back: the
	// next load queues it at once.
	failing := e.session(oracle.TierQuick, "q", true)
	e.ready(failing, time.Now().Add(time.Hour))
	good := e.h.Generate
	e.h.Generate = queue.NewSender(e.queues, e.f.Ref("GenerateQueue")+"-missing", e.clock.Now)
	if code, _ := e.get(failing); code != http.StatusInternalServerError {
		t.Fatalf("a failed send answered %d, want 500", code)
	}
	e.h.Generate = good
	if code, _ := e.get(failing); code != http.StatusAccepted {
		t.Fatal("the retry was not accepted")
	}
	if jobs := e.jobs("GenerateQueue"); len(jobs) != 1 || jobs[0].SessionID != failing {
		t.Fatalf("jobs %+v, want the retried regeneration at once", jobs)
	}
	e.clock.Add(RegenWindow + time.Second)
	e.get(id)
	if jobs := e.jobs("GenerateQueue"); len(jobs) != 1 {
		t.Fatalf("after the window: %d jobs, want 1 more", len(jobs))
	}
}

// A regenerated verdict is answered with its flags and when it was
// generated again; the verdict delivered before comes with every change of
// colour, and the page's disclaimer only with a divergence that owes the
// customer the notice (REGEN_CONSISTENCY invariant 4, VC-5).
func TestRegeneratedVerdictCarriesItsFlags(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	tests := []struct {
		name            string
		original, regen oracle.Verdict
		divergence      string
		notice          bool
	}{
		{name: "none", original: oracle.VerdictGreen, regen: oracle.VerdictGreen, divergence: oracle.DivergenceNone},
		{name: "minor", original: oracle.VerdictGreen, regen: oracle.VerdictAmber, divergence: oracle.DivergenceMinor},
		{name: "significant", original: oracle.VerdictGreen, regen: oracle.VerdictRed, divergence: oracle.DivergenceSignificant, notice: true},
		{name: "to null", original: oracle.VerdictAmber, regen: oracle.VerdictNull, divergence: oracle.DivergenceSignificant, notice: true},
		{name: "original unknown", regen: oracle.VerdictRed, divergence: oracle.DivergenceUnknown, notice: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			id := e.session(oracle.TierQuick, "Should I open a bakery?", true)
			e.readyAs(id, tc.original, e.clock.Now().Add(time.Hour))
			if code, body := e.get(id); code != http.StatusOK || body["regen"] != nil || body["divergence_notice"] != nil {
				t.Fatalf("first verdict: %d %v, want no regen fields", code, body)
			}
			e.clock.Add(2 * time.Hour)
			if ok, err := e.orders.ResetForRegeneration(ctx, id, time.Hour); err != nil || !ok {
				t.Fatalf("reset: %v %v", ok, err)
			}
			_, lease, err := e.orders.StartGeneration(ctx, id, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			again := `{"summary":"Again.","verdict":"` + string(tc.regen) + `"}`
			if _, err := e.orders.StoreVerdict(ctx, id, lease, store.StoredVerdict{
				Canonical: again, Hash: e.h.Hasher.Hash(again),
				Label: tc.regen, Divergence: oracle.Diverge(tc.original, tc.regen), ExpiresAt: e.clock.Now().Add(time.Hour),
			}); err != nil {
				t.Fatal(err)
			}
			code, body := e.get(id)
			if code != http.StatusOK || body["status"] != "ready" || body["regen"] != true || body["regen_reason"] != "expired" || body["divergence"] != tc.divergence {
				t.Fatalf("%d %v, want a ready regenerated verdict with divergence %s", code, body, tc.divergence)
			}
			if v, _ := body["verdict"].(map[string]any); v["verdict"] != string(tc.regen) {
				t.Fatalf("verdict %v, want the regenerated %s", body["verdict"], tc.regen)
			}
			// Serving it is a cache hit; the regeneration is counted once,
			// by the generator, not on every load.
			for _, r := range testkit.AuditRecords(e.t, e.s3, e.f.Ref("AuditBucket")) {
				if r.SessionID == id && r.Event == "verdict_served" && r.Status != audit.StatusCached {
					t.Fatalf("served record %s, want CACHED", r.Status)
				}
			}
			// Every regenerated verdict says when it was generated again;
			// a change of colour always says what was delivered before.
			if at, _ := body["regenerated_at"].(string); at == "" || at != body["cached_at"] {
				t.Fatalf("regenerated_at %v, want when it was generated again (%v)", body["regenerated_at"], body["cached_at"])
			}
			notice, _ := body["divergence_notice"].(bool)
			original, hasOriginal := body["original_verdict"]
			moved := tc.original != "" && tc.original != tc.regen
			if notice != tc.notice || hasOriginal != moved || (hasOriginal && original != string(tc.original)) {
				t.Fatalf("divergence_notice %v original_verdict %v, want the notice %v and the original %q whenever the colour moved", body["divergence_notice"], original, tc.notice, tc.original)
			}
		})
	}
}

// A customer back after the order was deleted at the end of its retention
// gets a regeneration compared with the kept first verdict (REGEN-GAP-02):
// no second payment record, and the job is a regeneration, which the
// generator never emails.
func TestDeletedOrderComesBackAsARegeneration(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	id := e.session(oracle.TierQuick, "Should I open a bakery?", true)
	e.ready(id, e.clock.Now().Add(time.Hour))
	ledger := store.NewLedger(awsenv.NewTables(e.f.AWS), e.f.Ref("LedgerTable"), e.clock.Now)
	original := oracle.Original{Verdict: oracle.VerdictGreen, Hash: "hmac-sha256:0123456789abcdef0123456789abcdef"}
	if err := ledger.KeepOriginal(ctx, id, original, 730*24*time.Hour); err != nil {
		t.Fatal(err)
	}
	payments := func() int {
		n := 0
		for _, r := range testkit.AuditRecords(e.t, e.s3, e.f.Ref("AuditBucket")) {
			if r.SessionID == id && r.Status == audit.StatusOK && r.Event == "landing" {
				n++
			}
		}
		return n
	}
	if n := payments(); n != 1 {
		t.Fatalf("%d payment records before, want 1", n)
	}
	e.clock.Add(100 * 24 * time.Hour)
	// What DynamoDB's TTL does in the end.
	if _, err := dynamodb.NewFromConfig(e.f.AWS).DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(e.f.Ref("OrdersTable")),
		Key: map[string]ddbtypes.AttributeValue{"session_id": &ddbtypes.AttributeValueMemberS{Value: id}}}); err != nil {
		t.Fatal(err)
	}
	if code, body := e.get(id); code != http.StatusAccepted || body["status"] != "pending" {
		t.Fatalf("%d %v, want 202 pending", code, body)
	}
	jobs := e.jobs("GenerateQueue")
	if len(jobs) != 1 || jobs[0].Reason != queue.ReasonRegenerate || e.counts["Regenerations"] != 1 {
		t.Fatalf("jobs %+v, metrics %v, want one regeneration", jobs, e.counts)
	}
	o, found, err := e.orders.Get(ctx, id)
	if err != nil || !found || o.Status != oracle.StatusPaid || !o.Regen || o.RegenReason != oracle.RegenExpired ||
		o.OriginalVerdict != original.Verdict || o.OriginalVerdictHash != original.Hash {
		t.Fatalf("restored order %+v (%v %v)", o, found, err)
	}
	if n := payments(); n != 1 {
		t.Fatalf("%d payment records after the restore, want still 1", n)
	}
}

// A paid session whose order is gone after its retention, with no verdict
// kept (it failed, was held, quarantined or refunded, or the kept verdict
// expired too), is not claimed again: that would count the payment twice
// and could email a verdict the customer was told they would not get.
func TestOrderGoneAfterItsRetentionIsNotClaimedAgain(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	id := e.session(oracle.TierQuick, "Should I open a bakery?", true)
	if code, _ := e.get(id); code != http.StatusAccepted {
		t.Fatalf("claim: %d", code)
	}
	e.jobs("GenerateQueue")
	if ok, err := e.orders.MarkFailed(ctx, id, "model_unavailable"); err != nil || !ok {
		t.Fatalf("mark failed: %v %v", ok, err)
	}
	records := func() int { return len(testkit.AuditRecords(e.t, e.s3, e.f.Ref("AuditBucket"))) }
	before := records()
	e.clock.Add(91 * 24 * time.Hour)
	if _, err := dynamodb.NewFromConfig(e.f.AWS).DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(e.f.Ref("OrdersTable")),
		Key: map[string]ddbtypes.AttributeValue{"session_id": &ddbtypes.AttributeValueMemberS{Value: id}}}); err != nil {
		t.Fatal(err)
	}
	code, body := e.get(id)
	if code != http.StatusGone || body["status"] != "expired" || !strings.Contains(fmt.Sprint(body["message"]), "oracle@42sisters.ai") {
		t.Fatalf("%d %v, want 410 expired naming the support address", code, body)
	}
	if _, found, _ := e.orders.Get(ctx, id); found {
		t.Fatal("the order was claimed again")
	}
	if jobs := e.jobs("GenerateQueue"); len(jobs) != 0 {
		t.Fatalf("jobs %+v", jobs)
	}
	if n := records(); n != before {
		t.Fatalf("%d audit records written", n-before)
	}
}

// The samples in events/verdict stay valid: the poll asks about a session
// the fake Stripe does not know, which is answered 404, as is an agent's
// poll for an order there is none of; the health check, before any run of
// the health job, is answered 503.
func TestSampleEvent(t *testing.T) {
	e := newEnv(t)
	e.withHealth()
	for file, want := range map[string]int{"poll.json": http.StatusNotFound, "poll-agent.json": http.StatusNotFound, "health.json": http.StatusServiceUnavailable} {
		b, err := os.ReadFile("../../events/verdict/" + file)
		if err != nil {
			t.Fatal(err)
		}
		var req events.APIGatewayV2HTTPRequest
		if err := json.Unmarshal(b, &req); err != nil {
			t.Fatal(err)
		}
		resp, err := e.h.Handle(context.Background(), req)
		if err != nil || resp.StatusCode != want {
			t.Errorf("%s: %d %v, want %d", file, resp.StatusCode, err, want)
		}
	}
}

// mailStates stands in for the store's reading of an order's mail states:
// it sets Mail on the orders the real store returns, by session.
type mailStates struct {
	Orders
	mail map[string]map[oracle.MailKind]oracle.MailState
}

func (m mailStates) Get(ctx context.Context, id string) (oracle.Order, bool, error) {
	o, found, err := m.Orders.Get(ctx, id)
	if s, ok := m.mail[id]; ok {
		o.Mail = s
	}
	return o, found, err
}

// A served verdict whose email is known not to have reached the customer
// says so in one plain state, email "undelivered", which the page shows;
// any other state of it, or an undelivered email of another kind, leaves
// the field out. Which reason it was never reaches the answer, and the
// answer is otherwise the one it was.
func TestUndeliveredVerdictEmailIsSaid(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	states := mailStates{Orders: e.orders, mail: map[string]map[oracle.MailKind]oracle.MailState{}}
	e.h.Orders = states
	verdictMail := func(s oracle.MailState) map[oracle.MailKind]oracle.MailState {
		return map[oracle.MailKind]oracle.MailState{oracle.MailVerdict: s}
	}
	tests := []struct {
		name  string
		mail  map[oracle.MailKind]oracle.MailState
		regen bool
		want  bool
	}{
		{name: "not sent yet"},
		{name: "sent", mail: verdictMail(oracle.MailSent)},
		{name: "delivered", mail: verdictMail(oracle.MailDelivered)},
		{name: "bounced", mail: verdictMail(oracle.MailBounced), want: true},
		{name: "complained", mail: verdictMail(oracle.MailComplained)},
		{name: "undeliverable", mail: verdictMail(oracle.MailUndeliverable), want: true},
		{name: "suppressed", mail: verdictMail(oracle.MailSuppressed), want: true},
		{name: "another mail undelivered", mail: map[oracle.MailKind]oracle.MailState{
			oracle.MailVerdict: oracle.MailDelivered, oracle.MailReview: oracle.MailBounced, oracle.MailDivergence: oracle.MailSuppressed}},
		{name: "regenerated, delivered", mail: verdictMail(oracle.MailDelivered), regen: true},
		{name: "regenerated, bounced", mail: verdictMail(oracle.MailBounced), regen: true, want: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			id := e.session(oracle.TierQuick, "Should I open a bakery?", true)
			e.ready(id, e.clock.Now().Add(time.Hour))
			want := []string{"cached_at", "query", "retention_days", "status", "tier", "tier_name", "verdict"}
			if tc.regen {
				e.clock.Add(2 * time.Hour)
				if ok, err := e.orders.ResetForRegeneration(ctx, id, time.Hour); err != nil || !ok {
					t.Fatalf("reset: %v %v", ok, err)
				}
				_, lease, err := e.orders.StartGeneration(ctx, id, time.Minute)
				if err != nil {
					t.Fatal(err)
				}
				again := `{"summary":"Again.","verdict":"GREEN"}`
				if _, err := e.orders.StoreVerdict(ctx, id, lease, store.StoredVerdict{
					Canonical: again, Hash: e.h.Hasher.Hash(again),
					Label: oracle.VerdictGreen, Divergence: oracle.DivergenceNone, ExpiresAt: e.clock.Now().Add(time.Hour),
				}); err != nil {
					t.Fatal(err)
				}
				want = append(want, "divergence", "regen", "regen_reason", "regenerated_at")
			}
			states.mail[id] = tc.mail
			code, body := e.get(id)
			if v, _ := body["verdict"].(map[string]any); code != http.StatusOK || body["status"] != "ready" || v["verdict"] != "GREEN" || (body["regen"] == true) != tc.regen {
				t.Fatalf("%d %v, want the ready verdict", code, body)
			}
			email, has := body["email"]
			if has != tc.want || (has && email != "undelivered") {
				t.Fatalf("email %v (present %v), want undelivered present: %v", email, has, tc.want)
			}
			if tc.want {
				want = append(want, "email")
			}
			if got := slices.Sorted(maps.Keys(body)); !slices.Equal(got, slices.Sorted(slices.Values(want))) {
				t.Fatalf("answer fields %v, want %v", got, slices.Sorted(slices.Values(want)))
			}
			for k, v := range body {
				for _, s := range tc.mail {
					if v == string(s) {
						t.Errorf("%s is %q: the mail state reached the answer", k, v)
					}
				}
			}
		})
	}
}

// The verdict email's state as the store keeps it, an attribute of the
// order item, reaches the answer through the real store.
func TestVerdictEmailStateOnTheOrderItemReachesTheAnswer(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	id := e.session(oracle.TierQuick, "Should I open a bakery?", true)
	e.ready(id, e.clock.Now().Add(time.Hour))
	db := dynamodb.NewFromConfig(e.f.AWS)
	setState := func(s oracle.MailState) {
		t.Helper()
		if _, err := db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(e.f.Ref("OrdersTable")),
			Key:                       map[string]ddbtypes.AttributeValue{"session_id": &ddbtypes.AttributeValueMemberS{Value: id}},
			UpdateExpression:          aws.String("SET mail_verdict_state = :s"),
			ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":s": &ddbtypes.AttributeValueMemberS{Value: string(s)}},
		}); err != nil {
			t.Fatal(err)
		}
	}
	setState(oracle.MailBounced)
	if o, _, err := e.orders.Get(ctx, id); err != nil || o.Mail[oracle.MailVerdict] != oracle.MailBounced {
		t.Fatalf("the store read mail state %q %v, want bounced", o.Mail[oracle.MailVerdict], err)
	}
	if code, body := e.get(id); code != http.StatusOK || body["status"] != "ready" || body["email"] != "undelivered" {
		t.Fatalf("bounced: %d %v, want the ready verdict with email undelivered", code, body)
	}
	setState(oracle.MailDelivered)
	if code, body := e.get(id); code != http.StatusOK || body["status"] != "ready" || body["email"] != nil {
		t.Fatalf("delivered: %d %v, want the ready verdict without email", code, body)
	}
}

// testAlertTimeout is a test's budget for an alert, not Lambda's: the
// alert's Ledger dedupe gets a third of it, and make test's shared moto
// can take over a second to answer under load.
const testAlertTimeout = 30 * time.Second
