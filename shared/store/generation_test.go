package store_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/store"
)

func paidOrder(t *testing.T, orders *store.Orders, id string) {
	t.Helper()
	c, err := orders.ClaimOrder(context.Background(), order(id, oracle.StatusPaid), lease)
	if err != nil {
		t.Fatal(err)
	}
	if err := orders.JobEnqueued(context.Background(), id, c.Lease); err != nil {
		t.Fatal(err)
	}
}

var verdict = store.StoredVerdict{Canonical: `{"summary":"s","verdict":"GREEN"}`, Hash: "hmac-sha256:00", PromptVersion: "v1", Model: "m",
	Label: oracle.VerdictGreen, CoherenceScore: 1}

func notOwed(err error) (oracle.Status, bool) {
	var e *store.ErrNotOwed
	if errors.As(err, &e) {
		return e.Order.Status, true
	}
	return "", false
}

func TestGenerationLeaseStoresOneVerdict(t *testing.T) {
	ctx := context.Background()
	orders, _, clk := newOrders(t)
	id := "cs_test_gen"
	paidOrder(t, orders, id)

	o, token, err := orders.StartGeneration(ctx, id, time.Minute)
	if err != nil || o.Status != oracle.StatusGenerating || o.Attempts != 1 {
		t.Fatalf("start: %+v %v", o, err)
	}
	// A duplicate job while the lease is live is not owed the work.
	if _, _, err := orders.StartGeneration(ctx, id, time.Minute); err == nil {
		t.Fatal("a second generator started while the lease was live")
	} else if s, ok := notOwed(err); !ok || s != oracle.StatusGenerating {
		t.Fatalf("duplicate: %v", err)
	}
	v := verdict
	v.ExpiresAt = clk.Now().Add(90 * 24 * time.Hour)
	stored, err := orders.StoreVerdict(ctx, id, token, v)
	if err != nil || stored.Status != oracle.StatusReady || stored.Verdict != v.Canonical || store.GenLease(t, orders, id) != "" || stored.GeneratedAt == nil {
		t.Fatalf("store: %+v %v", stored, err)
	}
	if !stored.Expires.Equal(v.ExpiresAt.Truncate(time.Second)) {
		t.Fatal("retention not restarted from the verdict")
	}
	// Nothing can replace it, not even the same holder.
	if _, err := orders.StoreVerdict(ctx, id, token, verdict); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("second store: %v", err)
	}
	if _, _, err := orders.StartGeneration(ctx, id, time.Minute); err == nil {
		t.Fatal("a READY order was generated again")
	} else if s, _ := notOwed(err); s != oracle.StatusReady {
		t.Fatalf("after READY: %v", err)
	}
}

func TestGenerationTakeoverAfterCrashOrFailure(t *testing.T) {
	ctx := context.Background()
	orders, _, clk := newOrders(t)
	id := "cs_test_gencrash"
	paidOrder(t, orders, id)
	_, dead, err := orders.StartGeneration(ctx, id, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	// The holder died; after its lease another takes over.
	clk.Add(time.Minute + time.Second)
	o, token, err := orders.StartGeneration(ctx, id, time.Minute)
	if err != nil || o.Attempts != 2 {
		t.Fatalf("takeover: %+v %v", o, err)
	}
	// The dead holder wakes up: it can store nothing.
	if _, err := orders.StoreVerdict(ctx, id, dead, verdict); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("stale store: %v", err)
	}
	// A failed attempt gives its lease up: the next starts at once.
	if err := orders.AbandonGeneration(ctx, id, token); err != nil {
		t.Fatal(err)
	}
	o, _, err = orders.StartGeneration(ctx, id, time.Minute)
	if err != nil || o.Attempts != 3 || o.Verdict != "" {
		t.Fatalf("after abandon: %+v %v", o, err)
	}
}

func TestGenerationIsOnlyForPaidOrders(t *testing.T) {
	ctx := context.Background()
	orders, _, _ := newOrders(t)
	for _, s := range []oracle.Status{oracle.StatusAwaitingPayment, oracle.StatusDropped, oracle.StatusPaymentFailed} {
		id := "cs_test_gennot" + string(s)[:4]
		if _, err := orders.ClaimOrder(ctx, order(id, s), lease); err != nil {
			t.Fatal(err)
		}
		if _, _, err := orders.StartGeneration(ctx, id, time.Minute); err == nil {
			t.Fatalf("%s order was generated", s)
		} else if got, ok := notOwed(err); !ok || got != s {
			t.Fatalf("%s: %v", s, err)
		}
	}
	if _, _, err := orders.StartGeneration(ctx, "cs_test_unknown", time.Minute); err == nil {
		t.Fatal("an unknown order was generated")
	} else if _, ok := notOwed(err); !ok {
		t.Fatalf("unknown: %v", err)
	}
}

func TestConcurrentGeneratorsOneWins(t *testing.T) {
	ctx := context.Background()
	orders, _, _ := newOrders(t)
	id := "cs_test_genrace"
	paidOrder(t, orders, id)
	var wg sync.WaitGroup
	wins := make(chan string, 10)
	for i := 0; i < 10; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, token, err := orders.StartGeneration(ctx, id, time.Minute); err == nil {
				wins <- token
			}
		}()
	}
	wg.Wait()
	close(wins)
	if len(wins) != 1 {
		t.Fatalf("%d generators started, want 1", len(wins))
	}
}

func TestMarkFailed(t *testing.T) {
	ctx := context.Background()
	orders, _, _ := newOrders(t)
	id := "cs_test_genfail"
	paidOrder(t, orders, id)
	if _, _, err := orders.StartGeneration(ctx, id, time.Minute); err != nil {
		t.Fatal(err)
	}
	if changed, err := orders.MarkFailed(ctx, id, "model_unavailable"); err != nil || !changed {
		t.Fatalf("mark failed: %v %v", changed, err)
	}
	o, _, _ := orders.Get(ctx, id)
	if o.Status != oracle.StatusFailed || o.Failure != "model_unavailable" || store.GenLease(t, orders, id) != "" {
		t.Fatalf("order %+v", o)
	}
	if changed, _ := orders.MarkFailed(ctx, id, "again"); changed {
		t.Fatal("marked twice")
	}
	ready := "cs_test_genfailready"
	paidOrder(t, orders, ready)
	_, token, _ := orders.StartGeneration(ctx, ready, time.Minute)
	if _, err := orders.StoreVerdict(ctx, ready, token, verdict); err != nil {
		t.Fatal(err)
	}
	if changed, _ := orders.MarkFailed(ctx, ready, "late"); changed {
		t.Fatal("an order with a verdict was marked failed")
	}
}

func TestResetForRegenerationOnlyOnceExpired(t *testing.T) {
	ctx := context.Background()
	orders, _, clk := newOrders(t)
	id := "cs_test_regen"
	paidOrder(t, orders, id)
	_, token, err := orders.StartGeneration(ctx, id, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	v := verdict
	v.ExpiresAt = clk.Now().Add(time.Hour)
	if _, err := orders.StoreVerdict(ctx, id, token, v); err != nil {
		t.Fatal(err)
	}
	if reset, _ := orders.ResetForRegeneration(ctx, id, time.Hour); reset {
		t.Fatal("a live verdict was reset")
	}
	clk.Add(2 * time.Hour)
	if reset, err := orders.ResetForRegeneration(ctx, id, time.Hour); err != nil || !reset {
		t.Fatalf("expired verdict not reset: %v %v", reset, err)
	}
	o, _, _ := orders.Get(ctx, id)
	if o.Status != oracle.StatusPaid || o.Verdict != "" || !o.Regen || o.OriginalVerdictHash != verdict.Hash || o.OriginalVerdict != oracle.VerdictGreen ||
		o.VerdictLabel != "" || !o.Expires.After(clk.Now()) {
		t.Fatalf("after reset: %+v", o)
	}
	if reset, _ := orders.ResetForRegeneration(ctx, id, time.Hour); reset {
		t.Fatal("reset twice")
	}
	if _, _, err := orders.StartGeneration(ctx, id, time.Minute); err != nil {
		t.Fatalf("the reset order cannot be generated: %v", err)
	}
}

func TestRegeneratedVerdictKeepsItsDivergence(t *testing.T) {
	ctx := context.Background()
	orders, _, clk := newOrders(t)
	id := "cs_test_regendiv"
	paidOrder(t, orders, id)
	_, token, _ := orders.StartGeneration(ctx, id, time.Minute)
	v := verdict
	v.ExpiresAt = clk.Now().Add(time.Hour)
	if _, err := orders.StoreVerdict(ctx, id, token, v); err != nil {
		t.Fatal(err)
	}
	clk.Add(2 * time.Hour)
	if _, err := orders.ResetForRegeneration(ctx, id, time.Hour); err != nil {
		t.Fatal(err)
	}
	_, token, _ = orders.StartGeneration(ctx, id, time.Minute)
	again := v
	again.Label, again.Divergence, again.CoherenceScore = oracle.VerdictRed, oracle.DivergenceSignificant, 0.98
	stored, err := orders.StoreVerdict(ctx, id, token, again)
	if err != nil || stored.VerdictLabel != oracle.VerdictRed || stored.OriginalVerdict != oracle.VerdictGreen ||
		stored.Divergence != oracle.DivergenceSignificant || stored.CoherenceScore != 0.98 || !stored.Regen {
		t.Fatalf("regenerated: %+v %v", stored, err)
	}
}

func TestParkKeepsTheFirstTimeAndTheAttempts(t *testing.T) {
	ctx := context.Background()
	orders, _, clk := newOrders(t)
	id := "cs_test_park"
	paidOrder(t, orders, id)
	first, err := orders.Park(ctx, id, clk.Now().Add(time.Minute))
	if err != nil || !first.Equal(clk.Now().UTC()) {
		t.Fatalf("park: %v %v", first, err)
	}
	clk.Add(time.Hour)
	due := clk.Now().Add(10 * time.Minute).UTC()
	again, err := orders.Park(ctx, id, due)
	if err != nil || !again.Equal(first) {
		t.Fatalf("second park moved the budget's start: %v, want %v (%v)", again, first, err)
	}
	o, _, _ := orders.Get(ctx, id)
	if o.Status != oracle.StatusPaid || o.Attempts != 0 {
		t.Fatalf("parking changed the order: %+v", o)
	}
	if o.JobDueAt == nil || !o.JobDueAt.Equal(due) {
		t.Fatalf("the job's return is %v, want the last park's %v", o.JobDueAt, due)
	}
	// The verdict clears the parked time; a READY order is not parked.
	_, token, _ := orders.StartGeneration(ctx, id, time.Minute)
	if stored, err := orders.StoreVerdict(ctx, id, token, verdict); err != nil || stored.ParkedSince != nil || stored.JobDueAt != nil {
		t.Fatalf("store: %+v %v", stored, err)
	}
	if _, err := orders.Park(ctx, id, due); err == nil {
		t.Fatal("a READY order was parked")
	} else if s, ok := notOwed(err); !ok || s != oracle.StatusReady {
		t.Fatalf("park READY: %v", err)
	}
	if _, err := orders.Park(ctx, "cs_test_parknoorder", due); err == nil {
		t.Fatal("an unknown order was parked")
	}
}

func TestHoldNeedsTheLease(t *testing.T) {
	ctx := context.Background()
	orders, _, _ := newOrders(t)
	id := "cs_test_hold"
	paidOrder(t, orders, id)
	_, token, _ := orders.StartGeneration(ctx, id, time.Minute)
	if held, err := orders.Hold(ctx, id, "not-the-lease", "crosscheck"); err != nil || held {
		t.Fatalf("held without the lease: %v %v", held, err)
	}
	if held, err := orders.Hold(ctx, id, token, "crosscheck_low_coherence"); err != nil || !held {
		t.Fatalf("hold: %v %v", held, err)
	}
	o, _, _ := orders.Get(ctx, id)
	if o.Status != oracle.StatusHeld || o.Failure != "crosscheck_low_coherence" || store.GenLease(t, orders, id) != "" {
		t.Fatalf("held order: %+v", o)
	}
	if _, _, err := orders.StartGeneration(ctx, id, time.Minute); err == nil {
		t.Fatal("a HELD order was generated again")
	}
}

func TestQuarantineAtEitherGate(t *testing.T) {
	ctx := context.Background()
	orders, _, _ := newOrders(t)
	q := store.Quarantine{Gate: "generator", Terms: []string{"cat3.csdm", "cat2.aion"}, Record: "quarantine/cs_test_q1.json", FilterVersion: "2026-11-21.1"}

	// Gate 1: only the lease holder, and the verdict is never stored.
	gen := "cs_test_quarantinegen"
	paidOrder(t, orders, gen)
	_, token, _ := orders.StartGeneration(ctx, gen, time.Minute)
	if ok, err := orders.QuarantineGeneration(ctx, gen, "not-the-lease", q); err != nil || ok {
		t.Fatalf("quarantined without the lease: %v %v", ok, err)
	}
	if ok, err := orders.QuarantineGeneration(ctx, gen, token, q); err != nil || !ok {
		t.Fatalf("quarantine: %v %v", ok, err)
	}
	o, _, _ := orders.Get(ctx, gen)
	if o.Status != oracle.StatusQuarantined || o.QuarantineGate != "generator" || !slices.Equal(o.QuarantineTerms, q.Terms) ||
		o.QuarantineRecord != q.Record || o.FilterVersion != q.FilterVersion || o.QuarantinedAt == nil || store.GenLease(t, orders, gen) != "" || o.Verdict != "" {
		t.Fatalf("quarantined order: %+v", o)
	}
	if _, err := orders.StoreVerdict(ctx, gen, token, store.StoredVerdict{Canonical: "{}", Hash: "h"}); err == nil {
		t.Fatal("a verdict was stored on a quarantined order")
	}

	// Gate 2: only a READY order; twice is once.
	ready := "cs_test_quarantineready"
	paidOrder(t, orders, ready)
	if ok, err := orders.QuarantineReady(ctx, ready, q); err != nil || ok {
		t.Fatalf("a PAID order was quarantined at gate 2: %v %v", ok, err)
	}
	_, token, _ = orders.StartGeneration(ctx, ready, time.Minute)
	if _, err := orders.StoreVerdict(ctx, ready, token, store.StoredVerdict{Canonical: "{}", Hash: "h", FilterVersion: "2026-11-21.1"}); err != nil {
		t.Fatal(err)
	}
	q.Gate = "mailer"
	if ok, err := orders.QuarantineReady(ctx, ready, q); err != nil || !ok {
		t.Fatalf("quarantine ready: %v %v", ok, err)
	}
	if ok, err := orders.QuarantineReady(ctx, ready, q); err != nil || ok {
		t.Fatalf("quarantined twice: %v %v", ok, err)
	}
	if o, _, _ := orders.Get(ctx, ready); o.Status != oracle.StatusQuarantined || o.QuarantineGate != "mailer" || o.Verdict != "{}" {
		t.Fatalf("quarantined ready order: %+v", o)
	}
}
