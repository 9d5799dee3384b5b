package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/fulfil"
	"42sisters.ai/oracle/shared/httpapi"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/tracing"
	"42sisters.ai/oracle/shared/x402"
)

// BenchmarkAgentPaidRequest is one new paid request per iteration through
// the real handler, against moto and the fake facilitator over HTTP, with
// no wait for the verdict: own-% is the time of Handle less the time in
// its calls (the authorization's claim, the order's writes, /verify,
// /settle, the paid claim with its job, the audit record; calls in flight
// together counted once), as a percentage of those calls. The local check (base64, JSON, EIP-712,
// secp256k1 recovery) is most of the own work. The function runs as
// deployed: the collector as the template sets it, traced as in Lambda (an
// invocation span, a span per AWS and facilitator call, exported by the
// traces extension after the answer, which the next request waits for,
// untimed). after-µs/op is that work after the answer.
func BenchmarkAgentPaidRequest(b *testing.B) {
	benchPaidRequests(b, func(_ int, p x402.PaymentPayload) httpapi.Request {
		header, _ := x402.EncodeHeader(p)
		return request("/x402/query", body, header)
	}, func(resp httpapi.Response) bool { return resp.StatusCode == http.StatusAccepted })
}

// benchPaidRequests measures one new paid request per iteration, made by
// build from a fresh payment of the quick tier and answered as ok says,
// reporting own-%, own-µs/op, calls-µs/op and after-µs/op.
func benchPaidRequests(b *testing.B, build func(i int, p x402.PaymentPayload) httpapi.Request, ok func(httpapi.Response) bool) {
	provision.AsDeployed(b, "AgentFunction")
	e := newEnvWith(b, func(cfg *aws.Config) { cfg.APIOptions = append(cfg.APIOptions, tracing.AWS) })
	t := &callTimer{}
	e.h.Authorizations = timedAuthorizations{e.h.Authorizations, t}
	e.h.Orders = timedOrders{e.h.Orders, t}
	e.h.Facilitator = timedFacilitator{e.h.Facilitator, t}
	e.h.Payer = timedPayer{e.h.Payer, t}
	e.h.Audit = timedAuditor{e.h.Audit, t}
	// Real time for the handler and the fake facilitator's chain alike.
	e.h.Now = time.Now
	e.clock.Add(time.Until(e.clock.Now()) * -1)
	rx := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.Copy(io.Discard, r.Body) }))
	b.Cleanup(rx.Close)
	api := testkit.NewExtensionsAPI(b)
	p := tracing.Start(tracing.Settings{Service: "agent", URL: rx.URL + "/v1/traces", Timeout: tracing.DefaultTimeout, RuntimeAPI: api.Addr()}, aws.Config{}, e.h.Log)
	api.WaitNext(b) // its init
	handle := tracing.Invocations(p, e.h.Handle)
	ctx := context.Background()
	sepolia, _ := x402.LookupNetwork(x402.NetworkBaseSepolia)
	req := x402.Requirement(sepolia, oracle.TierQuick.PriceUSDCAtomic(), payTo, e.h.MaxTimeout)
	// pay makes the i-th paid request, timed from the handler's call to its
	// answer, and waits for the extension's work after it. Each payer is
	// new: the fake chain gives an address 10 USDC, 200 payments.
	pay := func(i int) (answer, after time.Duration) {
		payment, err := x402.NewPayment(wallet(b), req, nil, time.Now(), rand.Reader)
		if err != nil {
			b.Fatal(err)
		}
		r := build(i, payment)
		api.Invoke(b, fmt.Sprint("req-", i))
		b.StartTimer()
		start := time.Now()
		resp, err := handle(ctx, r)
		answered := time.Now()
		b.StopTimer()
		if err != nil || !ok(resp) {
			b.Fatalf("%v %d %s", err, resp.StatusCode, resp.Body)
		}
		api.WaitNext(b)
		return answered.Sub(start), time.Since(answered)
	}
	// A warm function is measured, as the budget means (BenchmarkColdStart
	// has the cold start's).
	b.StopTimer()
	for i := range warmPayments {
		pay(-1 - i)
	}
	t.reset()
	var handled, after time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		answer, tail := pay(i)
		handled += answer
		after += tail
	}
	calls, n := t.total(), float64(b.N)
	own := handled - calls
	b.ReportMetric(float64(own.Microseconds())/n, "own-µs/op")
	b.ReportMetric(float64(calls.Microseconds())/n, "calls-µs/op")
	b.ReportMetric(100*float64(own)/float64(calls), "own-%")
	b.ReportMetric(float64(after.Microseconds())/n, "after-µs/op")
}

// warmPayments is how many paid requests warm the handler before it is
// measured.
const warmPayments = 10

// BenchmarkPaymentRequired is the 402 answer: the body read and checked,
// the requirements built and encoded twice (header and body). No call.
func BenchmarkPaymentRequired(b *testing.B) {
	e := newEnvB(b)
	r := request("/x402/query/full", body, "")
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if resp, _ := e.h.Handle(ctx, r); resp.StatusCode != http.StatusPaymentRequired {
			b.Fatal(resp.StatusCode)
		}
	}
}

// newEnvB is newEnv for a benchmark.
func newEnvB(b *testing.B) *env { return newEnvTB(b) }

// callTimer sums the time the handler spends in its calls: the time while
// one or more is in flight, so that calls made together count once.
type callTimer struct {
	mu       sync.Mutex
	d        time.Duration
	inFlight int
	from     time.Time
}

// begin notes a call's start; the function it returns, its end.
func (t *callTimer) begin() func() {
	t.mu.Lock()
	if t.inFlight == 0 {
		t.from = time.Now()
	}
	t.inFlight++
	t.mu.Unlock()
	return func() {
		t.mu.Lock()
		if t.inFlight--; t.inFlight == 0 {
			t.d += time.Since(t.from)
		}
		t.mu.Unlock()
	}
}

// reset forgets what was timed so far.
func (t *callTimer) reset() {
	t.mu.Lock()
	t.d = 0
	t.mu.Unlock()
}

func (t *callTimer) total() time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.d
}

type timedAuthorizations struct {
	Authorizations
	t *callTimer
}

func (a timedAuthorizations) ClaimAuthorization(ctx context.Context, key, order string, ttl time.Duration) (string, bool, error) {
	defer a.t.begin()()
	return a.Authorizations.ClaimAuthorization(ctx, key, order, ttl)
}

type timedOrders struct {
	Orders
	t *callTimer
}

func (o timedOrders) ClaimOrder(ctx context.Context, want oracle.Order, lease time.Duration) (oracle.Claim, error) {
	defer o.t.begin()()
	return o.Orders.ClaimOrder(ctx, want, lease)
}

func (o timedOrders) Get(ctx context.Context, id string) (oracle.Order, bool, error) {
	defer o.t.begin()()
	return o.Orders.Get(ctx, id)
}

type timedFacilitator struct {
	Facilitator
	t *callTimer
}

func (f timedFacilitator) Verify(ctx context.Context, p x402.PaymentPayload, r x402.PaymentRequirements) (x402.VerifyResponse, error) {
	defer f.t.begin()()
	return f.Facilitator.Verify(ctx, p, r)
}

func (f timedFacilitator) Settle(ctx context.Context, p x402.PaymentPayload, r x402.PaymentRequirements) (x402.SettleResponse, error) {
	defer f.t.begin()()
	return f.Facilitator.Settle(ctx, p, r)
}

type timedPayer struct {
	Payer
	t *callTimer
}

func (p timedPayer) ClaimAwaited(ctx context.Context, a fulfil.Awaiter, want oracle.Order) (fulfil.Result, error) {
	defer p.t.begin()()
	return p.Payer.ClaimAwaited(ctx, a, want)
}

type timedAuditor struct {
	Auditor
	t *callTimer
}

func (a timedAuditor) Record(ctx context.Context, r audit.Record, id string) {
	defer a.t.begin()()
	a.Auditor.Record(ctx, r, id)
}
