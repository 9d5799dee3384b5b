package store_test

import (
	"context"
	"errors"
	"testing"

	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/store"
)

func TestARefundClosesEveryPaidStateOnce(t *testing.T) {
	ctx := context.Background()
	orders, _, _ := newOrders(t)
	cases := []struct {
		status oracle.Status
		want   bool
	}{
		{oracle.StatusPaid, true},
		{oracle.StatusReady, true},
		{oracle.StatusDropped, true},
		{oracle.StatusHeld, true},
		{oracle.StatusQuarantined, true},
		{oracle.StatusFailed, true},
		{oracle.StatusAwaitingPayment, false},
		{oracle.StatusPaymentFailed, false},
	}
	for i, c := range cases {
		t.Run(string(c.status), func(t *testing.T) {
			id := "cs_test_refund" + string(rune('a'+i))
			if _, err := orders.ClaimOrder(ctx, order(id, c.status), lease); err != nil {
				t.Fatal(err)
			}
			r := store.Refund{ID: "re_1", Amount: 100, By: "operator"}
			got, err := orders.MarkRefunded(ctx, id, r)
			if err != nil || got != c.want {
				t.Fatalf("first refund: %v %v, want %v", got, err, c.want)
			}
			again, err := orders.MarkRefunded(ctx, id, store.Refund{ID: "re_2", Amount: 100, By: "stripe"})
			if err != nil || again {
				t.Fatalf("second refund changed the order: %v %v", again, err)
			}
			o, _, err := orders.Get(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if !c.want {
				if o.Status != c.status || o.RefundID != "" {
					t.Fatalf("an unpaid order was refunded: %+v", o)
				}
				return
			}
			if o.Status != oracle.StatusRefunded || o.RefundID != "re_1" || o.RefundedAmount != 100 || o.RefundedBy != "operator" || o.RefundedAt == nil {
				t.Fatalf("refunded order = %s %q %d %q %v", o.Status, o.RefundID, o.RefundedAmount, o.RefundedBy, o.RefundedAt)
			}
		})
	}
}

func TestARefundDuringGenerationTakesTheLease(t *testing.T) {
	ctx := context.Background()
	orders, _, _ := newOrders(t)
	id := "cs_test_refund_generating"
	paidOrder(t, orders, id)
	_, genLease, err := orders.StartGeneration(ctx, id, lease)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := orders.MarkRefunded(ctx, id, store.Refund{ID: "re_1", Amount: 100, By: "stripe"}); err != nil || !ok {
		t.Fatalf("refund while generating: %v %v", ok, err)
	}
	_, err = orders.StoreVerdict(ctx, id, genLease, store.StoredVerdict{Canonical: "{}", Hash: "h", Label: oracle.VerdictGreen})
	if !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("a verdict was stored over the refund: %v", err)
	}
	if o, _, _ := orders.Get(ctx, id); o.Status != oracle.StatusRefunded || o.Verdict != "" {
		t.Fatalf("order = %s with verdict %q", o.Status, o.Verdict)
	}
}

func TestADisputeIsRecordedOncePerDispute(t *testing.T) {
	ctx := context.Background()
	orders, _, c := newOrders(t)
	id := "cs_test_disputed"
	if _, err := orders.ClaimOrder(ctx, order(id, oracle.StatusReady), lease); err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{true, false} {
		ok, err := orders.MarkDisputed(ctx, id, "dp_1", c.Now())
		if err != nil || ok != want {
			t.Fatalf("mark %d: %v %v, want %v", i, ok, err, want)
		}
	}
	if ok, err := orders.MarkDisputed(ctx, "cs_test_no_such_order", "dp_1", c.Now()); err != nil || ok {
		t.Fatalf("an unknown order was marked disputed: %v %v", ok, err)
	}
	if o, _, _ := orders.Get(ctx, id); o.DisputeID != "dp_1" || o.DisputedAt == nil || o.Status != oracle.StatusReady {
		t.Fatalf("disputed order = %+v", o)
	}
}
