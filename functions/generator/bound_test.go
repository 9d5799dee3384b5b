package main

import (
	"fmt"
	"testing"
	"time"

	fakegemini "42sisters.ai/oracle/infra/fakes/fakegemini"
	"42sisters.ai/oracle/shared/gemini"
	"42sisters.ai/oracle/shared/oracle"
)

// maxModelCallsPerOrder is the bound docs/verification.md states for
// GEMINI_TIMEOUT INV-2 with the default windows: three attempts per model
// call (the ceiling holds per call), one call per delivery, and at most 53
// deliveries that call the model within the 6-hour parking budget. The
// retries after a failure wait at least half of 30 s doubled per retry,
// capped at 15 min (7.5 min), so that 52 retries fit in the budget, the
// last one at its end: 53 × 3 = 159.
const maxModelCallsPerOrder = 159

// Every model call made for one order, through parking until it succeeds
// or fails, counted at the fake Gemini with the default windows and the
// shortest jitter (the most retries): never more than the stated bound,
// and the whole bound when the model is down for the whole budget.
func TestModelCallsPerOrderAreBounded(t *testing.T) {
	for _, tc := range []struct {
		name    string
		downFor time.Duration // the model answers 500 this long after the first call
		want    oracle.Status
	}{
		{"the model is down past the budget", 7 * time.Hour, oracle.StatusFailed},
		{"the model comes back after 5 hours", 5 * time.Hour, oracle.StatusReady},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.h.Rand = func() float64 { return 0 }
			e.caller.Rand = func() float64 { return 0 }
			if e.h.ParkingBudget != 6*time.Hour || e.h.RetryBase != 30*time.Second || e.caller.Policy.Attempts != 0 {
				t.Fatal("the test runs with the default windows")
			}
			id := "cs_test_boundedCalls01"
			e.paid(id, oracle.TierFull, "Should I open a bakery?")
			e.control(fakegemini.Scenario{Status: 500, Calls: 10000})
			start := e.clock.Now()
			body, deliveries := job(id), 0
			for {
				if deliveries++; deliveries > 1000 {
					t.Fatal("the order never settled")
				}
				if e.clock.Now().Sub(start) >= tc.downFor {
					e.control(fakegemini.Scenario{})
				}
				before := len(e.model.Calls())
				if failed := e.run(record(fmt.Sprint("d", deliveries), body, 1)); len(failed) != 0 {
					t.Fatal("the item failed")
				}
				if n := len(e.model.Calls()) - before; n > gemini.MaxAttempts {
					t.Fatalf("delivery %d made %d model calls", deliveries, n)
				}
				if o := e.order(id); o.Status != oracle.StatusPaid && o.Status != oracle.StatusGenerating {
					if o.Status != tc.want {
						t.Fatalf("order %s, want %s", o.Status, tc.want)
					}
					break
				}
				jobs := e.generateJobs()
				if len(jobs) != 1 || jobs[0].NotBefore == nil {
					t.Fatalf("parked jobs %+v, want one", jobs)
				}
				if d := jobs[0].NotBefore.Sub(e.clock.Now()); d > 0 {
					e.clock.Add(d)
				}
				body = mustJSON(t, jobs[0])
			}
			calls := len(e.model.Calls())
			t.Logf("%d model calls over %s", calls, e.clock.Now().Sub(start).Round(time.Minute))
			if calls > maxModelCallsPerOrder {
				t.Fatalf("%d model calls for one order, more than the bound %d", calls, maxModelCallsPerOrder)
			}
			if tc.want == oracle.StatusFailed && calls != maxModelCallsPerOrder {
				t.Fatalf("%d model calls through the whole budget, want the bound %d: the bound is not the one stated", calls, maxModelCallsPerOrder)
			}
		})
	}
}
