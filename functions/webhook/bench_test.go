package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/smithy-go/middleware"

	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/obs"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/stripex"
)

// The budget (docs/performance.md): the webhook's own work is at most 1% of
// the store and queue calls it cannot avoid. BenchmarkWebhookEndToEnd
// measures both in the same run: it times each paid event's Handle, and
// every AWS call the handler makes on the wire (request written, answer
// read to its end, moto's own time included); the own work is the rest
// (signature check, decoding, the claim's logic, building and signing the
// requests, logging). moto answers on loopback, as fast as or faster than
// DynamoDB and SQS answer in AWS, so the share measured here is an upper
// bound. BenchmarkWebhookOwnWork is the handler's part that makes no call
// (signature check, decoding, hashing), for profiling it alone.

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
// per event, the calls per event, and own-% (own work as a percentage of
// the calls' time), the figure the budget reads. A call is timed as the
// handler waits for it: from the SDK operation's start to its return
// (building, signing, sending the request and reading the answer); wire-µs
// is the part of that spent on the network and in moto.
func BenchmarkWebhookEndToEnd(b *testing.B) {
	t := &callTimer{}
	e := newEnvWith(b, Secrets{Test: testSecret}, t.instrument)
	ctx := context.Background()
	var handled time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		s := paidSession(fmt.Sprintf("cs_test_bench%d", i), oracle.TierQuick, "Should I open a bakery?")
		body := e.event(fmt.Sprintf("evt_bench%d", i), audit.EventCheckoutCompleted, s)
		req := request(body, sign(body, testSecret, time.Now()))
		b.StartTimer()
		start := time.Now()
		resp, err := e.h.Handle(ctx, req)
		handled += time.Since(start)
		if err != nil || resp.StatusCode != 200 {
			b.Fatalf("%v %d %s", err, resp.StatusCode, resp.Body)
		}
	}
	b.StopTimer()
	calls, inCalls, onWire := t.totals()
	own := handled - inCalls
	n := float64(b.N)
	b.ReportMetric(float64(own.Microseconds())/n, "own-µs/op")
	b.ReportMetric(float64(inCalls.Microseconds())/n, "calls-µs/op")
	b.ReportMetric(float64(onWire.Microseconds())/n, "wire-µs/op")
	b.ReportMetric(float64(calls)/n, "calls/op")
	b.ReportMetric(100*float64(own)/float64(inCalls), "own-%")
}

// callTimer times every AWS operation of the clients made from a
// configuration it instruments: each operation as a whole (a middleware
// first in the SDK's stack) and its HTTP exchanges on the wire (the
// transport, the answer read to its end).
type callTimer struct {
	mu      sync.Mutex
	calls   int
	inCalls time.Duration
	onWire  time.Duration
}

func (t *callTimer) instrument(cfg *aws.Config) {
	cfg.HTTPClient = &http.Client{Transport: t}
	cfg.APIOptions = append(cfg.APIOptions, func(s *middleware.Stack) error {
		return s.Initialize.Add(middleware.InitializeMiddlewareFunc("benchCallTimer", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			start := time.Now()
			out, md, err := next.HandleInitialize(ctx, in)
			t.add(&t.inCalls, time.Since(start), 1)
			return out, md, err
		}), middleware.Before)
	})
}

func (t *callTimer) RoundTrip(r *http.Request) (*http.Response, error) {
	start := time.Now()
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil {
		var body []byte
		body, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(body))
		if err != nil {
			resp = nil
		}
	}
	t.add(&t.onWire, time.Since(start), 0)
	return resp, err
}

func (t *callTimer) add(sum *time.Duration, d time.Duration, calls int) {
	t.mu.Lock()
	*sum += d
	t.calls += calls
	t.mu.Unlock()
}

func (t *callTimer) totals() (calls int, inCalls, onWire time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.calls, t.inCalls, t.onWire
}
