package main

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/obs"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/stripex"
)

// The budget (docs/performance.md): the webhook's own work is at most 20% of the
// store and queue calls it cannot avoid. BenchmarkWebhookOwnWork is that own
// work (signature check, decoding, resolution, hashing);
// BenchmarkWebhookEndToEnd adds the real calls (moto locally, so the ratio
// measured here is an upper bound: DynamoDB and SQS are slower than moto on
// loopback).

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

func BenchmarkWebhookEndToEnd(b *testing.B) {
	e := newEnv(b, Secrets{Test: testSecret})
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s := paidSession(fmt.Sprintf("cs_test_bench%d", i), oracle.TierQuick, "Should I open a bakery?")
		body := e.event(fmt.Sprintf("evt_bench%d", i), audit.EventCheckoutCompleted, s)
		resp, err := e.h.Handle(context.Background(), request(body, sign(body, testSecret, time.Now())))
		if err != nil || resp.StatusCode != 200 {
			b.Fatalf("%v %d %s", err, resp.StatusCode, resp.Body)
		}
	}
}
