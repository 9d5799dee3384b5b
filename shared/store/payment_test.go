package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/store"
)

// TestAChargeFindsItsOrderByPaymentIntent: the claim keeps the session's
// payment intent and the index finds the order by it; an unknown or empty
// payment intent finds nothing, and two orders sharing one is an error,
// never a guess.
func TestAChargeFindsItsOrderByPaymentIntent(t *testing.T) {
	ctx := context.Background()
	f := provision.ForTest(t, nil)
	orders := store.NewOrders(awsenv.NewTables(f.AWS), f.Ref("OrdersTable"), nil)
	index := store.NewOrderIndex(awsenv.NewQueries(f.AWS), f.Ref("OrdersTable"))
	claim := func(id, pi string) {
		t.Helper()
		o := oracle.Order{SessionID: id, Status: oracle.StatusPaid, Tier: oracle.TierQuick, Query: "q", AmountTotal: 100, Currency: "cad",
			Source: oracle.SourceWebhook, PaymentIntent: pi, Expires: time.Now().Add(time.Hour)}
		if _, err := orders.ClaimOrder(ctx, o, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	claim("cs_test_charged1", "pi_charged1")
	claim("cs_test_charged2", "pi_charged2")
	claim("cs_test_nointent", "")
	claim("cs_test_twin1", "pi_twin")
	claim("cs_test_twin2", "pi_twin")
	for _, c := range []struct {
		pi      string
		session string
		found   bool
		err     error
	}{
		{"pi_charged1", "cs_test_charged1", true, nil},
		{"pi_charged2", "cs_test_charged2", true, nil},
		{"pi_unknown", "", false, nil},
		{"", "", false, nil},
		{"pi_twin", "", false, store.ErrPaymentIntentShared},
	} {
		session, found, err := index.SessionOfPaymentIntent(ctx, c.pi)
		if session != c.session || found != c.found || !errors.Is(err, c.err) || (c.err == nil) != (err == nil) {
			t.Errorf("SessionOfPaymentIntent(%q) = %q, %v, %v; want %q, %v, %v", c.pi, session, found, err, c.session, c.found, c.err)
		}
	}
	if o, ok, err := orders.Get(ctx, "cs_test_charged1"); err != nil || !ok || o.PaymentIntent != "pi_charged1" {
		t.Errorf("the order keeps payment intent %q (%v, %v)", o.PaymentIntent, ok, err)
	}
}
