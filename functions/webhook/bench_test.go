package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/fulfil"
	"42sisters.ai/oracle/shared/obs"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/queue"
	"42sisters.ai/oracle/shared/stripex"
	"42sisters.ai/oracle/shared/tracing"
)

// The budget (docs/performance.md): the webhook's own work is at most 1% of
// the store and queue calls it cannot avoid. BenchmarkWebhookEndToEnd
// measures both in the same run, against moto; moto answers on loopback,
// about as fast as DynamoDB and SQS answer within a region, so the share
// measured here is about what Lambda sees. BenchmarkWebhookOwnWork is the
// handler's part that makes no call (signature check, decoding, hashing),
// for profiling it alone.

func BenchmarkWebhookOwnWork(b *testing.B) {
	e := &env{t: b, created: time.Now().Unix()}
	s := paidSession("cs_test_bench", oracle.TierStrategy, "Acquire a failing restaurant and convert to ghost kitchen")
	body := e.event("evt_bench", audit.EventCheckoutCompleted, s)
	sig := sign(body, testSecret, time.Now())
	h := &Handler{Secrets: Secrets{Live: liveSecret, Test: testSecret}, Metrics: obs.NewMetrics(&bytes.Buffer{}, "Oracle", time.Now), Log: obs.NewLogger(&bytes.Buffer{}, "ERROR"), Now: time.Now}
	hasher, _ := audit.NewHasher(pepper)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ev, err := h.verify(body, sig)
		if err != nil {
			b.Fatal(err)
		}
		sess, err := stripex.SessionFromJSON(ev.Data.Raw)
		if err != nil {
			b.Fatal(err)
		}
		_ = hasher.Hash(sess.Query)
		_ = hasher.Email(sess.Email)
	}
}

// BenchmarkWebhookEndToEnd handles one new paid event per iteration against
// moto and reports, besides the whole request's time: own-µs and calls-µs
// per event, and own-% (own work as a percentage of the calls' time), the
// figure the budget reads. The calls are the handler's store, queue and
// audit calls, timed where the handler makes them (its Ledger, and the
// claim's Orders, Sender and Auditor), as it waits for them: each with its
// request built, signed, sent and answered. Own work is the rest of the
// request: the signature check, decoding, the claim's logic, logging and
// metrics. wire-µs is the part of the calls spent on the network and in
// moto, and calls/op the AWS requests per event. after-µs is the traces
// extension's work once the answer has gone (the spans encoded and
// posted to a receiver), which no caller waits for.
func BenchmarkWebhookEndToEnd(b *testing.B) {
	// The collector as the template sets it for the function.
	provision.AsDeployed(b, "WebhookFunction")
	t := &callTimer{}
	e := newEnvWith(b, Secrets{Test: testSecret}, func(cfg *aws.Config) {
		cfg.HTTPClient = &http.Client{Transport: t}
		cfg.APIOptions = append(cfg.APIOptions, tracing.AWS)
	})
	e.h.Ledger = timedLedger{e.h.Ledger, t}
	e.svc.Orders = timedOrders{e.svc.Orders, t}
	e.svc.Generate = timedSender{e.svc.Generate, t}
	e.svc.Audit = timedAuditor{e.svc.Audit, t}
	// Traced as in Lambda: an invocation span, a span per AWS call and the
	// claim's, exported by the traces extension after the answer (the
	// Extensions API in process): the next event waits for it, untimed.
	var exports atomic.Int64
	rx := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		exports.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
	}))
	b.Cleanup(rx.Close)
	api := testkit.NewExtensionsAPI(b)
	p := tracing.Start(tracing.Settings{Service: "webhook", URL: rx.URL + "/v1/traces", Timeout: tracing.DefaultTimeout, RuntimeAPI: api.Addr()}, aws.Config{}, e.h.Log)
	api.WaitNext(b) // its init
	handle := tracing.Invocations(p, e.h.Handle)
	ctx := context.Background()
	// event handles the i-th event, timed from the handler's call to its
	// answer, and waits for the extension's export after it.
	event := func(name string) (answer, after time.Duration) {
		s := paidSession("cs_test_bench"+name, oracle.TierQuick, "Should I open a bakery?")
		body := e.event("evt_bench"+name, audit.EventCheckoutCompleted, s)
		req := request(body, sign(body, testSecret, time.Now()))
		api.Invoke(b, "req"+name)
		b.StartTimer()
		start := time.Now()
		resp, err := handle(ctx, req)
		answered := time.Now()
		b.StopTimer()
		if err != nil || resp.StatusCode != 200 {
			b.Fatalf("%v %d %s", err, resp.StatusCode, resp.Body)
		}
		api.WaitNext(b) // the extension's export is done
		return answered.Sub(start), time.Since(answered)
	}
	// A warm function is measured, as the budget means: the first events
	// of a process pay for its first connections and first use of code
	// (BenchmarkColdStart has the cold start's budget).
	b.StopTimer()
	for i := range warmEvents {
		event(fmt.Sprint("Warm", i))
	}
	t.reset()
	exports.Store(0)
	var handled, after time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		answer, tail := event(fmt.Sprint(i))
		handled += answer
		after += tail
	}
	if n := exports.Load(); n < int64(b.N) {
		b.Fatalf("%d exports of spans for %d events: the run was not traced", n, b.N)
	}
	requests, inCalls, onWire := t.totals()
	own := handled - inCalls
	n := float64(b.N)
	b.ReportMetric(float64(own.Microseconds())/n, "own-µs/op")
	b.ReportMetric(float64(inCalls.Microseconds())/n, "calls-µs/op")
	b.ReportMetric(float64(onWire.Microseconds())/n, "wire-µs/op")
	b.ReportMetric(float64(requests)/n, "calls/op")
	b.ReportMetric(100*float64(own)/float64(inCalls), "own-%")
	b.ReportMetric(float64(after.Microseconds())/n, "after-µs/op")
}

// callTimer sums the time spent in the handler's calls, and, as the
// transport of its AWS clients, the HTTP requests and their time on the
// wire (from the request written to the answer read to its end).
type callTimer struct {
	mu       sync.Mutex
	requests int
	inCalls  time.Duration
	onWire   time.Duration
}

// time adds the time since start to the calls' time.
func (t *callTimer) time(start time.Time) {
	d := time.Since(start)
	t.mu.Lock()
	t.inCalls += d
	t.mu.Unlock()
}

func (t *callTimer) RoundTrip(r *http.Request) (*http.Response, error) {
	start := time.Now()
	resp, err := awsTransport.RoundTrip(r)
	if err == nil {
		var body []byte
		body, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(body))
		if err != nil {
			resp = nil
		}
	}
	d := time.Since(start)
	t.mu.Lock()
	t.requests++
	t.onWire += d
	t.mu.Unlock()
	return resp, err
}

// awsTransport is what the AWS clients' requests go through.
var awsTransport = http.DefaultTransport

// warmEvents is how many events warm the handler before it is measured.
const warmEvents = 20

// reset forgets what was timed so far.
func (t *callTimer) reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.requests, t.inCalls, t.onWire = 0, 0, 0
}

func (t *callTimer) totals() (requests int, inCalls, onWire time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.requests, t.inCalls, t.onWire
}

type timedLedger struct {
	Ledger
	t *callTimer
}

func (l timedLedger) Seen(ctx context.Context, key string) (bool, error) {
	defer l.t.time(time.Now())
	return l.Ledger.Seen(ctx, key)
}

func (l timedLedger) Mark(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	defer l.t.time(time.Now())
	return l.Ledger.Mark(ctx, key, ttl)
}

type timedOrders struct {
	fulfil.Orders
	t *callTimer
}

func (o timedOrders) ClaimOrder(ctx context.Context, want oracle.Order, lease time.Duration) (oracle.Claim, error) {
	defer o.t.time(time.Now())
	return o.Orders.ClaimOrder(ctx, want, lease)
}

func (o timedOrders) JobEnqueued(ctx context.Context, sessionID, lease string) error {
	defer o.t.time(time.Now())
	return o.Orders.JobEnqueued(ctx, sessionID, lease)
}

func (o timedOrders) ReleaseJobLease(ctx context.Context, sessionID, lease string) error {
	defer o.t.time(time.Now())
	return o.Orders.ReleaseJobLease(ctx, sessionID, lease)
}

type timedSender struct {
	fulfil.Sender
	t *callTimer
}

func (s timedSender) Send(ctx context.Context, j queue.Job) error {
	defer s.t.time(time.Now())
	return s.Sender.Send(ctx, j)
}

type timedAuditor struct {
	fulfil.Auditor
	t *callTimer
}

func (a timedAuditor) Require(ctx context.Context, r audit.Record, id string) error {
	defer a.t.time(time.Now())
	return a.Auditor.Require(ctx, r, id)
}
