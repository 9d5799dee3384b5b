package main

import (
	"context"
	"crypto/rand"
	"net/http"
	"sync"
	"testing"
	"time"

	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/fulfil"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/x402"
)

// BenchmarkAgentPaidRequest is one new paid request per iteration through
// the real handler, against moto and the fake facilitator over HTTP, with
// no wait for the verdict: own-% is the time of Handle less the time in
// its calls (the authorization's claim, the order's writes, /verify,
// /settle, the paid claim with its job, the audit record), as a
// percentage of those calls. The local check (base64, JSON, EIP-712,
// secp256k1 recovery) is most of the own work.
func BenchmarkAgentPaidRequest(b *testing.B) {
	e := newEnvB(b)
	t := &callTimer{}
	e.h.Authorizations = timedAuthorizations{e.h.Authorizations, t}
	e.h.Orders = timedOrders{e.h.Orders, t}
	e.h.Facilitator = timedFacilitator{e.h.Facilitator, t}
	e.h.Payer = timedPayer{e.h.Payer, t}
	e.h.Audit = timedAuditor{e.h.Audit, t}
	// Real time for the handler and the fake facilitator's chain alike.
	e.h.Now = time.Now
	e.clock.Add(time.Until(e.clock.Now()) * -1)
	ctx := context.Background()
	sepolia, _ := x402.LookupNetwork(x402.NetworkBaseSepolia)
	req := x402.Requirement(sepolia, oracle.TierQuick.PriceUSDCAtomic(), payTo, e.h.MaxTimeout)
	key := wallet(b)
	var handled time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		p, err := x402.NewPayment(key, req, nil, time.Now(), rand.Reader)
		if err != nil {
			b.Fatal(err)
		}
		header, _ := x402.EncodeHeader(p)
		r := request("/x402/query", body, header)
		b.StartTimer()
		start := time.Now()
		resp, err := e.h.Handle(ctx, r)
		handled += time.Since(start)
		if err != nil || resp.StatusCode != http.StatusAccepted {
			b.Fatalf("%v %d %s", err, resp.StatusCode, resp.Body)
		}
	}
	b.StopTimer()
	calls, n := t.total(), float64(b.N)
	own := handled - calls
	b.ReportMetric(float64(own.Microseconds())/n, "own-µs/op")
	b.ReportMetric(float64(calls.Microseconds())/n, "calls-µs/op")
	b.ReportMetric(100*float64(own)/float64(calls), "own-%")
}

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

// callTimer sums the time spent in the handler's calls.
type callTimer struct {
	mu sync.Mutex
	d  time.Duration
}

func (t *callTimer) since(start time.Time) {
	d := time.Since(start)
	t.mu.Lock()
	t.d += d
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
	defer a.t.since(time.Now())
	return a.Authorizations.ClaimAuthorization(ctx, key, order, ttl)
}

type timedOrders struct {
	Orders
	t *callTimer
}

func (o timedOrders) ClaimOrder(ctx context.Context, want oracle.Order, lease time.Duration) (oracle.Claim, error) {
	defer o.t.since(time.Now())
	return o.Orders.ClaimOrder(ctx, want, lease)
}

func (o timedOrders) Get(ctx context.Context, id string) (oracle.Order, bool, error) {
	defer o.t.since(time.Now())
	return o.Orders.Get(ctx, id)
}

type timedFacilitator struct {
	Facilitator
	t *callTimer
}

func (f timedFacilitator) Verify(ctx context.Context, p x402.PaymentPayload, r x402.PaymentRequirements) (x402.VerifyResponse, error) {
	defer f.t.since(time.Now())
	return f.Facilitator.Verify(ctx, p, r)
}

func (f timedFacilitator) Settle(ctx context.Context, p x402.PaymentPayload, r x402.PaymentRequirements) (x402.SettleResponse, error) {
	defer f.t.since(time.Now())
	return f.Facilitator.Settle(ctx, p, r)
}

type timedPayer struct {
	Payer
	t *callTimer
}

func (p timedPayer) ClaimPaid(ctx context.Context, want oracle.Order) (fulfil.Result, error) {
	defer p.t.since(time.Now())
	return p.Payer.ClaimPaid(ctx, want)
}

type timedAuditor struct {
	Auditor
	t *callTimer
}

func (a timedAuditor) Record(ctx context.Context, r audit.Record, id string) {
	defer a.t.since(time.Now())
	a.Auditor.Record(ctx, r, id)
}
