package main

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/store"
	"42sisters.ai/oracle/shared/stripex"
)

// A verdict's session event is marked in the Ledger exactly when a later
// delivery could read the mark: one at least the orders' retention less a
// day after the event's creation, before the mark's 30 days have passed.
// At the edge (the event OrderRetention - claimMargin - eventTTL old) the
// mark would end as the first delivery that reads the Ledger comes, so it
// is not written; a second later it is (TestAnEventWhoseOrderMayBeGoneIsReadInTheLedger
// reads it). Below the edge a delivery while the mark would have lived is
// still answered by the claim: the order is kept, no second job.
func TestAVerdictEventIsMarkedOnlyWhenTheMarkCanBeRead(t *testing.T) {
	const day = 24 * time.Hour
	for _, tc := range []struct {
		name      string
		retention time.Duration
		age       time.Duration
		smoke     bool
		wantMark  bool
	}{
		{"a new event, the default retention", 90 * day, time.Minute, false, false},
		{"at the edge, the default retention", 90 * day, 90*day - claimMargin - eventTTL, false, false},
		{"a second past the edge", 90 * day, 90*day - claimMargin - eventTTL + time.Second, false, true},
		{"a new event, a retention of 31 days (the edge at 0)", 31 * day, time.Second, false, true},
		{"a new event, the shortest retention", oracle.MinRetentionDays * day, time.Minute, false, true},
		{"the smoke test's, whose order it deletes", 90 * day, time.Minute, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, Secrets{Test: testSecret})
			e.svc.Retention, e.h.OrderRetention = tc.retention, tc.retention
			// Whole seconds, as Stripe's created is.
			now := e.clock.Now()
			e.clock.Add(now.Truncate(time.Second).Sub(now))
			e.created = e.clock.Now().Add(-tc.age).Unix()
			id := "cs_test_mark" + strings.ReplaceAll(tc.name[:8], " ", "")
			s := paidSession(id, oracle.TierQuick, "Should I open a bakery on the corner?")
			if tc.smoke {
				s.Meta[stripex.MetaSmoke] = "1"
			}
			body := e.event("evt_mark", audit.EventCheckoutCompleted, s)
			if resp := e.send(body); resp.StatusCode != http.StatusOK {
				t.Fatalf("got %s", status(resp))
			}
			if got := e.eventRecorded("evt_mark"); got != tc.wantMark {
				t.Fatalf("marked %v, want %v", got, tc.wantMark)
			}
			if jobs := e.jobs("GenerateQueue"); len(jobs) != 1 {
				t.Fatalf("%d generate jobs, want 1", len(jobs))
			}
			if tc.smoke {
				return
			}
			e.generating(s.ID)
			// The last delivery the claim answers: while a mark made at the
			// first could still live, had it been made.
			e.clock.Add(tc.retention - claimMargin - tc.age - time.Second)
			if resp := e.send(body); resp.StatusCode != http.StatusOK {
				t.Fatalf("sent again: %s", status(resp))
			}
			if jobs := e.jobs("GenerateQueue"); len(jobs) != 0 {
				t.Fatalf("%d generate jobs after the event came again, want none", len(jobs))
			}
			if !strings.Contains(e.logs.String(), "duplicate event done again") {
				t.Fatal("the event sent again was not counted a duplicate")
			}
		})
	}
}

// generating has the order's job taken as the generator takes it
// (StartGeneration), so that a later delivery finds the order past PAID.
func (e *env) generating(id string) {
	e.t.Helper()
	orders := store.NewOrders(e.db, e.f.Ref("OrdersTable"), e.clock.Now)
	if _, _, err := orders.StartGeneration(context.Background(), id, time.Minute); err != nil {
		e.t.Fatalf("the generator's claim: %v", err)
	}
}
