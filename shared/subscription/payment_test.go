package subscription_test

import (
	"context"
	"testing"

	"42sisters.ai/oracle/shared/subscription"
)

// A chat invoice's payment is found by its payment intent, recorded again
// without harm; an intent no chat invoice had, or no intent at all, is not
// found, and a payment that names no account or subscription is refused.
func TestPaymentsAreFoundByTheirPaymentIntent(t *testing.T) {
	ctx := context.Background()
	s, account, _ := newStore(t)
	p := subscription.Payment{PaymentIntent: "pi_chat1", Charge: "ch_chat1", Invoice: "in_chat1", Subscription: "sub_chat1", Account: account, Amount: 500, Currency: "cad"}
	for range 2 {
		if err := s.RecordPayment(ctx, p, t0); err != nil {
			t.Fatal(err)
		}
	}
	got, found, err := s.PaymentOf(ctx, "pi_chat1")
	if err != nil || !found || got != p {
		t.Fatalf("PaymentOf = %+v, %v, %v; want %+v", got, found, err, p)
	}
	for _, pi := range []string{"pi_verdict", "", "cs_test_notAnIntent"} {
		if _, found, err := s.PaymentOf(ctx, pi); found || err != nil {
			t.Errorf("PaymentOf(%q) = %v, %v", pi, found, err)
		}
	}
	for _, bad := range []subscription.Payment{
		{PaymentIntent: "pi_x", Subscription: "sub_x"},
		{PaymentIntent: "pi_x", Account: account},
		{Subscription: "sub_x", Account: account},
	} {
		if err := s.RecordPayment(ctx, bad, t0); err == nil {
			t.Errorf("RecordPayment(%+v) was taken", bad)
		}
	}
}
