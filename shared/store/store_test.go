package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/store"
)

// newOrders returns the order and ledger stores on fresh tables, with a
// settable clock.
func newOrders(t *testing.T) (*store.Orders, *store.Ledger, *testkit.Clock) {
	t.Helper()
	f := provision.ForTest(t, nil)
	db := awsenv.NewTables(f.AWS)
	c := testkit.NewClock(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
	return store.NewOrders(db, f.Ref("OrdersTable"), c.Now), store.NewLedger(db, f.Ref("LedgerTable"), c.Now), c
}

func order(id string, s oracle.Status) oracle.Order {
	return oracle.Order{SessionID: id, Status: s, Tier: oracle.TierQuick, Query: "q", AmountTotal: 100, Currency: "cad", Source: oracle.SourceWebhook}
}

const lease = 30 * time.Second

func TestClaimOrderTransitions(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name     string
		first    oracle.Status
		enqueued bool // whether the first claimer recorded its job
		then     oracle.Status
		outcome  oracle.ClaimOutcome
		status   oracle.Status
	}{
		{"duplicate paid after enqueue", oracle.StatusPaid, true, oracle.StatusPaid, oracle.Done, oracle.StatusPaid},
		{"duplicate paid while the first holds the lease", oracle.StatusPaid, false, oracle.StatusPaid, oracle.InFlight, oracle.StatusPaid},
		{"awaiting then paid", oracle.StatusAwaitingPayment, false, oracle.StatusPaid, oracle.Claimed, oracle.StatusPaid},
		{"awaiting then dropped", oracle.StatusAwaitingPayment, false, oracle.StatusDropped, oracle.Claimed, oracle.StatusDropped},
		{"awaiting then payment failed", oracle.StatusAwaitingPayment, false, oracle.StatusPaymentFailed, oracle.Claimed, oracle.StatusPaymentFailed},
		{"paid is never downgraded to awaiting", oracle.StatusPaid, true, oracle.StatusAwaitingPayment, oracle.Done, oracle.StatusPaid},
		{"paid is not failed by a late failure event", oracle.StatusPaid, true, oracle.StatusPaymentFailed, oracle.Done, oracle.StatusPaid},
		{"awaiting twice", oracle.StatusAwaitingPayment, false, oracle.StatusAwaitingPayment, oracle.Done, oracle.StatusAwaitingPayment},
		{"dropped twice", oracle.StatusDropped, true, oracle.StatusDropped, oracle.Done, oracle.StatusDropped},
	}
	orders, _, _ := newOrders(t)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id := "cs_test_transition" + string(rune('a'+i))
			first, err := orders.ClaimOrder(ctx, order(id, c.first), lease)
			if err != nil || first.Outcome != oracle.Claimed {
				t.Fatalf("first claim: %v %v", first.Outcome, err)
			}
			if c.enqueued {
				if err := orders.JobEnqueued(ctx, id, first.Lease); err != nil {
					t.Fatal(err)
				}
			}
			got, err := orders.ClaimOrder(ctx, order(id, c.then), lease)
			if err != nil {
				t.Fatal(err)
			}
			if got.Outcome != c.outcome || got.Order.Status != c.status {
				t.Fatalf("got %v/%s, want %v/%s", got.Outcome, got.Order.Status, c.outcome, c.status)
			}
			stored, ok, err := orders.Get(ctx, id)
			if err != nil || !ok || stored.Status != c.status {
				t.Fatalf("stored %v %v %v", stored.Status, ok, err)
			}
		})
	}
}

func TestClaimOrderConcurrentDuplicatesHaveOneWinner(t *testing.T) {
	ctx := context.Background()
	orders, _, _ := newOrders(t)
	const n = 10
	var wg sync.WaitGroup
	outcomes := make(chan oracle.ClaimOutcome, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := orders.ClaimOrder(ctx, order("cs_test_concurrent", oracle.StatusPaid), lease)
			if err != nil {
				t.Error(err)
				return
			}
			outcomes <- c.Outcome
		}()
	}
	wg.Wait()
	close(outcomes)
	count := map[oracle.ClaimOutcome]int{}
	for o := range outcomes {
		count[o]++
	}
	if count[oracle.Claimed] != 1 || count[oracle.InFlight] != n-1 {
		t.Fatalf("outcomes %v: want exactly one claimed and the rest in flight", count)
	}
}

func TestExpiredJobLeaseIsResumed(t *testing.T) {
	ctx := context.Background()
	orders, _, clk := newOrders(t)
	id := "cs_test_resume"
	first, err := orders.ClaimOrder(ctx, order(id, oracle.StatusPaid), lease)
	if err != nil || !first.MustEnqueue() {
		t.Fatalf("claim: %v %v", first, err)
	}
	// The claimer died before enqueueing. Within the lease, others wait.
	if c, _ := orders.ClaimOrder(ctx, order(id, oracle.StatusPaid), lease); c.Outcome != oracle.InFlight {
		t.Fatalf("within the lease: %v", c.Outcome)
	}
	clk.Add(lease + time.Second)
	c, err := orders.ClaimOrder(ctx, order(id, oracle.StatusPaid), lease)
	if err != nil || c.Outcome != oracle.Resumed || !c.MustEnqueue() {
		t.Fatalf("after the lease: %v %v", c.Outcome, err)
	}
	if err := orders.JobEnqueued(ctx, id, c.Lease); err != nil {
		t.Fatal(err)
	}
	if c, _ := orders.ClaimOrder(ctx, order(id, oracle.StatusPaid), lease); c.Outcome != oracle.Done {
		t.Fatalf("after the enqueue: %v", c.Outcome)
	}
}

func TestReleasedLeaseIsResumedAtOnce(t *testing.T) {
	ctx := context.Background()
	orders, _, _ := newOrders(t)
	id := "cs_test_release"
	c, err := orders.ClaimOrder(ctx, order(id, oracle.StatusPaid), lease)
	if err != nil {
		t.Fatal(err)
	}
	if err := orders.ReleaseJobLease(ctx, id, c.Lease); err != nil {
		t.Fatal(err)
	}
	if c, _ := orders.ClaimOrder(ctx, order(id, oracle.StatusPaid), lease); c.Outcome != oracle.Resumed {
		t.Fatalf("after release: %v", c.Outcome)
	}
}

func TestOnlyTheLeaseHolderRecordsOrReleases(t *testing.T) {
	ctx := context.Background()
	orders, _, clk := newOrders(t)
	id := "cs_test_owner"
	a, err := orders.ClaimOrder(ctx, order(id, oracle.StatusPaid), lease)
	if err != nil {
		t.Fatal(err)
	}
	// A stalls past its lease; B takes over.
	clk.Add(lease + time.Second)
	b, err := orders.ClaimOrder(ctx, order(id, oracle.StatusPaid), lease)
	if err != nil || b.Outcome != oracle.Resumed || b.Lease == a.Lease {
		t.Fatalf("takeover: %v %v", b.Outcome, err)
	}
	// A wakes up: it may neither release B's lease nor record the job.
	if err := orders.ReleaseJobLease(ctx, id, a.Lease); err != nil {
		t.Fatal(err)
	}
	if c, _ := orders.ClaimOrder(ctx, order(id, oracle.StatusPaid), lease); c.Outcome != oracle.InFlight {
		t.Fatalf("a stale release freed the lease: %v", c.Outcome)
	}
	if err := orders.JobEnqueued(ctx, id, a.Lease); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("stale JobEnqueued: %v", err)
	}
	if err := orders.JobEnqueued(ctx, id, b.Lease); err != nil {
		t.Fatal(err)
	}
}

func TestLedgerMarkAndSeen(t *testing.T) {
	ctx := context.Background()
	_, ledger, clk := newOrders(t)
	if seen, err := ledger.Seen(ctx, "event#evt_1"); err != nil || seen {
		t.Fatalf("unseen key: %v %v", seen, err)
	}
	if first, err := ledger.Mark(ctx, "event#evt_1", time.Minute); err != nil || !first {
		t.Fatalf("first mark: %v %v", first, err)
	}
	if first, _ := ledger.Mark(ctx, "event#evt_1", time.Minute); first {
		t.Fatal("second mark within the window won")
	}
	if seen, _ := ledger.Seen(ctx, "event#evt_1"); !seen {
		t.Fatal("marked key not seen")
	}
	clk.Add(time.Minute + time.Second)
	if seen, _ := ledger.Seen(ctx, "event#evt_1"); seen {
		t.Fatal("expired key still seen")
	}
	if first, _ := ledger.Mark(ctx, "event#evt_1", time.Minute); !first {
		t.Fatal("mark after expiry did not win")
	}
	// A released mark is free again at once.
	if err := ledger.Release(ctx, "event#evt_1"); err != nil {
		t.Fatal(err)
	}
	if first, _ := ledger.Mark(ctx, "event#evt_1", time.Minute); !first {
		t.Fatal("mark after release did not win")
	}
}

// The first verdict's label and hash outlive the order; a later call keeps
// them and extends their life.
func TestLedgerKeepsTheOriginalVerdict(t *testing.T) {
	ctx := context.Background()
	_, ledger, clk := newOrders(t)
	const id = "cs_test_originalkeptxxxxx"
	if _, kept, err := ledger.Original(ctx, id); err != nil || kept {
		t.Fatalf("before: kept %v, %v", kept, err)
	}
	first := oracle.Original{Verdict: oracle.VerdictGreen, Hash: "hmac-sha256:first"}
	if err := ledger.KeepOriginal(ctx, id, first, 10*24*time.Hour); err != nil {
		t.Fatal(err)
	}
	clk.Add(9 * 24 * time.Hour)
	if err := ledger.KeepOriginal(ctx, id, oracle.Original{Verdict: oracle.VerdictRed, Hash: "hmac-sha256:regenerated"}, 10*24*time.Hour); err != nil {
		t.Fatal(err)
	}
	clk.Add(9 * 24 * time.Hour) // past the first call's life, within the second's
	if got, kept, err := ledger.Original(ctx, id); err != nil || !kept || got != first {
		t.Fatalf("got %+v kept %v (%v), want the first %+v", got, kept, err, first)
	}
	clk.Add(2 * 24 * time.Hour)
	if got, kept, err := ledger.Original(ctx, id); err != nil || kept {
		t.Fatalf("after expiry: %+v kept %v (%v)", got, kept, err)
	}
}

// TestAnAuthorizationIsClaimedOnce: ten requests carrying one x402
// authorization at once (each for its own order) see one claim, and the
// other nine, and a replay later, the order it was claimed for.
func TestAnAuthorizationIsClaimedOnce(t *testing.T) {
	ctx := context.Background()
	_, ledger, _ := newOrders(t)
	key := store.AuthorizationKey("eip155:84532:0x036cbd53842c5426634e7929541ec2318f3dcf7e:0xabc0000000000000000000000000000000000001:0xff01")
	var wg sync.WaitGroup
	owners, firsts := make([]string, 10), make([]bool, 10)
	for i := range 10 {
		wg.Go(func() {
			owner, first, err := ledger.ClaimAuthorization(ctx, key, fmt.Sprintf("x402_test_order%02d", i), time.Hour)
			if err != nil {
				t.Error(err)
			}
			owners[i], firsts[i] = owner, first
		})
	}
	wg.Wait()
	winner := ""
	for i, first := range firsts {
		if first {
			if winner != "" {
				t.Fatalf("claimed twice: %s and %s", winner, owners[i])
			}
			winner = owners[i]
		}
	}
	if winner == "" {
		t.Fatal("nobody claimed the authorization")
	}
	for i, owner := range owners {
		if owner != winner {
			t.Errorf("request %d was told the order %q, want %q", i, owner, winner)
		}
	}
	owner, first, err := ledger.ClaimAuthorization(ctx, key, "x402_test_later", time.Hour)
	if err != nil || first || owner != winner {
		t.Fatalf("a replay: owner %q first %v err %v, want %q", owner, first, err, winner)
	}
	other := store.AuthorizationKey("eip155:84532:0x036cbd53842c5426634e7929541ec2318f3dcf7e:0xabc0000000000000000000000000000000000001:0xff02")
	if _, first, err := ledger.ClaimAuthorization(ctx, other, "x402_test_other", time.Hour); err != nil || !first {
		t.Fatalf("another nonce of the same payer: first %v err %v", first, err)
	}
}
