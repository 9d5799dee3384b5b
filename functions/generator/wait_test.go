package main

import (
	"context"
	"testing"
	"time"

	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/obs"
	"42sisters.ai/oracle/shared/oracle"
)

// TestTheCustomersWaitIsRecorded (AUDIT INV-6, VC-2): the first verdict's
// record carries the customer's wait, from the payment to the verdict
// stored, not the generator's own time; a wait over 60 s counts
// CustomerWaitsOverAMinute, which CustomerWaitAlarm watches.
func TestTheCustomersWaitIsRecorded(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	for _, c := range []struct {
		id    string
		wait  time.Duration
		slows float64
	}{
		{"cs_test_waitQuick000000001", 12 * time.Second, 0},
		{"cs_test_waitSlow0000000002", 75 * time.Second, 1},
	} {
		paidAt := e.clock.Now().UTC()
		cl, err := e.orders.ClaimOrder(ctx, oracle.Order{SessionID: c.id, Status: oracle.StatusPaid, Tier: oracle.TierQuick, Query: "Should I open a bakery?",
			AmountTotal: 100, Currency: "cad", Source: oracle.SourceWebhook, SessionCreated: paidAt, PaidAt: &paidAt}, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.orders.JobEnqueued(ctx, c.id, cl.Lease); err != nil {
			t.Fatal(err)
		}
		e.clock.Add(c.wait) // the job waited on its queue, or was parked
		if failed := e.run(record("m-"+c.id, job(c.id), 1)); len(failed) != 0 {
			t.Fatalf("%s failed", c.id)
		}
		var got *audit.Record
		for _, r := range testkit.AuditRecords(t, e.s3, e.f.Ref("AuditBucket")) {
			if r.SessionID == c.id && r.Event == audit.EventVerdictGenerated {
				got = &r
			}
		}
		if got == nil {
			t.Fatalf("%s: no verdict_generated record", c.id)
		}
		if got.WaitMS != c.wait.Milliseconds() || got.LatencyMS >= c.wait.Milliseconds() {
			t.Errorf("%s: wait_ms %d, latency_ms %d; want the wait %d from the payment, the latency the generator's own", c.id, got.WaitMS, got.LatencyMS, c.wait.Milliseconds())
		}
		if n := e.metrics.Counts()["CustomerWaitsOverAMinute"]; n != c.slows {
			t.Errorf("%s: CustomerWaitsOverAMinute %v, want %v", c.id, n, c.slows)
		}
		// The wait itself is the dashboard's VerdictWait, one value a verdict.
		if w := e.metrics.Values(obs.VerdictWait); len(w) == 0 || w[len(w)-1] != float64(c.wait.Milliseconds()) {
			t.Errorf("%s: VerdictWait %v, want %d last", c.id, w, c.wait.Milliseconds())
		}
	}
	if w := e.metrics.Values(obs.VerdictWait); len(w) != 2 {
		t.Errorf("VerdictWait %v, want one value for each verdict", w)
	}
}
