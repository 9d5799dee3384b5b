package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/store"
)

// A refused claim tells the generator why without a read of its own: no
// such order, or the order as the refused condition found it, whole.
func TestRefusedClaimReturnsTheOrder(t *testing.T) {
	ctx := context.Background()
	orders, _, clk := newOrders(t)
	cases := []struct {
		name    string
		prepare func(id string) // nil: no order
		missing bool
		status  oracle.Status
	}{
		{"no such order", nil, true, ""},
		{"a live lease of another generator", func(id string) {
			paidOrder(t, orders, id)
			if _, _, err := orders.StartGeneration(ctx, id, time.Minute); err != nil {
				t.Fatal(err)
			}
		}, false, oracle.StatusGenerating},
		{"a stored verdict, with the records it carries", func(id string) {
			paidOrder(t, orders, id)
			_, lease, err := orders.StartGeneration(ctx, id, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			v := verdict
			v.ExpiresAt, v.Audit = clk.Now().Add(time.Hour), `[{"id":"x"}]`
			if _, err := orders.StoreVerdict(ctx, id, lease, v); err != nil {
				t.Fatal(err)
			}
		}, false, oracle.StatusReady},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id := "cs_test_claimread" + string(rune('a'+i))
			if c.prepare != nil {
				c.prepare(id)
			}
			_, _, err := orders.StartGeneration(ctx, id, time.Minute)
			var e *store.ErrNotOwed
			if !errors.As(err, &e) {
				t.Fatalf("claim: %v, want *ErrNotOwed", err)
			}
			if e.Missing != c.missing || e.Order.Status != c.status || e.Order.SessionID != id {
				t.Fatalf("refused with %+v (missing %v), want status %q, missing %v", e.Order, e.Missing, c.status, c.missing)
			}
			if c.status == oracle.StatusReady {
				stored, _, err := orders.Get(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				if e.Order.Verdict != stored.Verdict || e.Order.GenAudit != `[{"id":"x"}]` || e.Order.GeneratedAt == nil || e.Order.Attempts != 1 {
					t.Fatalf("the refusing order %+v is not the stored one %+v", e.Order, stored)
				}
			}
		})
	}
}

// A verdict stored without records to carry leaves none of an earlier
// generation's on the order.
func TestStoredVerdictCarriesOnlyItsOwnRecords(t *testing.T) {
	ctx := context.Background()
	orders, _, clk := newOrders(t)
	id := "cs_test_carried"
	paidOrder(t, orders, id)
	_, lease, err := orders.StartGeneration(ctx, id, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	v := verdict
	v.ExpiresAt = clk.Now().Add(-time.Minute) // expired at once: regenerated below
	v.Audit = `[{"id":"first"}]`
	if _, err := orders.StoreVerdict(ctx, id, lease, v); err != nil {
		t.Fatal(err)
	}
	if ok, err := orders.ResetForRegeneration(ctx, id, time.Hour); err != nil || !ok {
		t.Fatalf("reset: %v %v", ok, err)
	}
	if _, lease, err = orders.StartGeneration(ctx, id, time.Minute); err != nil {
		t.Fatal(err)
	}
	v.Audit, v.ExpiresAt = "", clk.Now().Add(time.Hour)
	stored, err := orders.StoreVerdict(ctx, id, lease, v)
	if err != nil || stored.GenAudit != "" {
		t.Fatalf("regenerated: %q %v, want no records carried", stored.GenAudit, err)
	}
}

// ParkLeased gives back an attempt that never asked the model: the lease
// and the attempt's count, in the write that parks the order; the first
// park's time stands.
func TestParkLeasedGivesTheAttemptBack(t *testing.T) {
	ctx := context.Background()
	orders, _, clk := newOrders(t)
	id := "cs_test_parkleased"
	paidOrder(t, orders, id)
	var first time.Time
	for round := range 2 {
		o, lease, err := orders.StartGeneration(ctx, id, time.Minute)
		if err != nil || o.Attempts != 1 {
			t.Fatalf("round %d: claim %+v %v", round, o, err)
		}
		due := clk.Now().Add(time.Minute)
		since, err := orders.ParkLeased(ctx, o, lease, due)
		if err != nil {
			t.Fatalf("round %d: park: %v", round, err)
		}
		if round == 0 {
			first = since
		} else if !since.Equal(first) {
			t.Fatalf("round %d: parked since %s, want the first park's %s", round, since, first)
		}
		got, _, err := orders.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if got.Attempts != 0 || got.Status != oracle.StatusPaid || got.JobDueAt == nil || !got.JobDueAt.Equal(due) || store.GenLease(t, orders, id) != "" {
			t.Fatalf("round %d: parked order %+v, want PAID, no attempt counted, due %s, no lease", round, got, due)
		}
		// A lease no longer held parks nothing.
		if _, err := orders.ParkLeased(ctx, o, lease, due); err == nil {
			t.Fatalf("round %d: a lease given back parked the order again", round)
		} else if s, ok := notOwed(err); !ok || s != oracle.StatusPaid {
			t.Fatalf("round %d: %v, want *ErrNotOwed", round, err)
		}
		clk.Add(time.Minute)
	}
}

// An order parked after an earlier attempt asked the model stays
// GENERATING, with that attempt still counted.
func TestParkLeasedAfterAnAttemptKeepsIt(t *testing.T) {
	ctx := context.Background()
	orders, _, clk := newOrders(t)
	id := "cs_test_parkleased2"
	paidOrder(t, orders, id)
	_, lease, err := orders.StartGeneration(ctx, id, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := orders.AbandonGeneration(ctx, id, lease); err != nil {
		t.Fatal(err)
	}
	o, lease, err := orders.StartGeneration(ctx, id, time.Minute)
	if err != nil || o.Attempts != 2 {
		t.Fatalf("second claim %+v %v", o, err)
	}
	if _, err := orders.ParkLeased(ctx, o, lease, clk.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	got, _, err := orders.Get(ctx, id)
	if err != nil || got.Attempts != 1 || got.Status != oracle.StatusGenerating {
		t.Fatalf("parked %+v %v, want GENERATING with the first attempt counted", got, err)
	}
}
