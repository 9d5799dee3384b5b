package store_test

import (
	"context"
	"sync"
	"testing"

	"42sisters.ai/oracle/shared/oracle"
)

// An order its caller made awaiting payment is claimed paid in one write,
// and exactly once: of racing claims one is Claimed with the job lease,
// the others find it in flight or done. What is not awaiting payment is
// decided as ClaimOrder decides it: an order that is not there is made, a
// paid one is never claimed again, a failed payment is never paid.
func TestClaimAwaited(t *testing.T) {
	ctx := context.Background()
	orders, _, _ := newOrders(t)
	cases := []struct {
		name    string
		prepare oracle.Status // "": no order
		racers  int
		claimed int
		want    oracle.Status
	}{
		{"awaiting payment", oracle.StatusAwaitingPayment, 1, 1, oracle.StatusPaid},
		{"awaiting payment, claimed by eight at once", oracle.StatusAwaitingPayment, 8, 1, oracle.StatusPaid},
		{"no order", "", 1, 1, oracle.StatusPaid},
		{"paid already", oracle.StatusPaid, 1, 0, oracle.StatusPaid},
		{"its payment failed", oracle.StatusPaymentFailed, 1, 0, oracle.StatusPaymentFailed},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id := "x402_test_awaited" + string(rune('a'+i))
			want := order(id, oracle.StatusPaid)
			if c.prepare != "" {
				made, err := orders.ClaimOrder(ctx, order(id, c.prepare), lease)
				if err != nil {
					t.Fatal(err)
				}
				if c.prepare == oracle.StatusPaid {
					if err := orders.JobEnqueued(ctx, id, made.Lease); err != nil {
						t.Fatal(err)
					}
				}
				want.CreatedAt = made.Order.CreatedAt
			}
			var mu sync.Mutex
			claimed := 0
			var wg sync.WaitGroup
			for range c.racers {
				wg.Go(func() {
					got, err := orders.ClaimAwaited(ctx, want, lease)
					if err != nil {
						t.Error(err)
						return
					}
					if got.Outcome == oracle.Claimed {
						if got.Lease == "" || got.Order.Status != oracle.StatusPaid {
							t.Errorf("claimed %+v without the job's lease", got)
						}
						mu.Lock()
						claimed++
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			if claimed != c.claimed {
				t.Errorf("%d claims, want %d", claimed, c.claimed)
			}
			o, found, err := orders.Get(ctx, id)
			if err != nil || !found {
				t.Fatalf("order %v %v", found, err)
			}
			if o.Status != c.want {
				t.Errorf("status %s, want %s", o.Status, c.want)
			}
			if c.prepare != "" && !o.CreatedAt.Equal(want.CreatedAt) {
				t.Errorf("created at %v, want %v as first made", o.CreatedAt, want.CreatedAt)
			}
		})
	}
}
