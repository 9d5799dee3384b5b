package store_test

import (
	"context"
	"testing"
	"time"

	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/store"
)

// TestDeleteSmokeDeletesOnlySmokeOrders: the smoke order goes; a customer's
// order, live or test, stays whatever is asked.
func TestDeleteSmokeDeletesOnlySmokeOrders(t *testing.T) {
	ctx := context.Background()
	f := provision.ForTest(t, nil)
	orders := store.NewOrders(awsenv.NewTables(f.AWS), f.Ref("OrdersTable"), nil)
	claim := func(id string, smoke, live bool) {
		t.Helper()
		o := oracle.Order{SessionID: id, Status: oracle.StatusPaid, Tier: oracle.TierQuick, Query: "q", AmountTotal: 100, Currency: "cad",
			Source: oracle.SourceWebhook, Smoke: smoke, Livemode: live, Expires: time.Now().Add(time.Hour)}
		if _, err := orders.ClaimOrder(ctx, o, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	claim("cs_test_smokeorder", true, false)
	claim("cs_test_customer", false, false)
	claim("cs_live_customer", false, true)
	cases := []struct {
		id      string
		deleted bool
		fails   bool
		stays   bool
	}{
		{"cs_test_smokeorder", true, false, false},
		{"cs_test_smokeorder", false, false, false}, // gone already
		{"cs_test_customer", false, true, true},
		{"cs_live_customer", false, true, true},
	}
	for _, c := range cases {
		deleted, err := orders.DeleteSmoke(ctx, c.id)
		if deleted != c.deleted || (err != nil) != c.fails {
			t.Errorf("DeleteSmoke(%s) = %v, %v; want deleted=%v, failed=%v", c.id, deleted, err, c.deleted, c.fails)
		}
		if _, found, err := orders.Get(ctx, c.id); err != nil || found != c.stays {
			t.Errorf("%s found=%v (%v), want %v", c.id, found, err, c.stays)
		}
	}
}
