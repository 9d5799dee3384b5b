package main

import (
	"context"
	"net/http"
	"testing"
	"time"

	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/chat"
	"42sisters.ai/oracle/shared/subscription"
)

// An account with a paid subscription and a duplicate (a second Checkout
// paid before the first's events came) that was then canceled, its events
// the newest: the chat, read through the real subscription store on moto,
// keeps answering past the trial, shows the paid one, and refuses a third
// Checkout with the paid one's portal.
func TestAccessLastsWhileAnySubscriptionGrants(t *testing.T) {
	ctx := context.Background()
	x := newHarness(t)
	store := subscription.NewStore(awsenv.NewTables(x.aws), chat.NewClient(x.aws), x.table)
	x.h.Subscriptions = subscriptions{store: store, now: x.clock.Now}
	account, cookie := x.signIn(t, address)
	now := x.clock.Now()
	end := now.AddDate(0, 1, 0)
	for _, st := range []subscription.State{
		{ID: "sub_paid", Customer: "cus_paid", Status: subscription.Active, EventCreated: now.Add(-time.Hour), EventID: "evt_paid"},
		{ID: "sub_dup", Customer: "cus_dup", Status: subscription.Active, EventCreated: now.Add(-50 * time.Minute), EventID: "evt_dup_paid"},
		{ID: "sub_dup", Customer: "cus_dup", Status: subscription.Canceled, EventCreated: now.Add(-40 * time.Minute), EventID: "evt_dup_deleted"},
	} {
		st.Account, st.PeriodEnd = account, end
		if _, _, err := store.Apply(ctx, st); err != nil {
			t.Fatal(err)
		}
	}

	for i := range chat.TrialExchanges + 1 {
		if resp, body := x.do(t, req(http.MethodPost, "/api/chat", `{"message":"hello"}`, cookie)); resp.StatusCode != http.StatusOK {
			t.Fatalf("message %d: %d %v; a canceled duplicate took the paid subscription's access", i+1, resp.StatusCode, body)
		}
	}
	_, state := x.do(t, req(http.MethodGet, "/api/chat", "", cookie))
	if sub, _ := state["subscription"].(map[string]any); sub["active"] != true || sub["status"] != subscription.Active || sub["manage"] != true {
		t.Fatalf("subscription shown %v, want the paid one, active", state["subscription"])
	}
	resp, body := x.do(t, req(http.MethodPost, "/api/chat/subscribe", `{}`, cookie))
	if resp.StatusCode != http.StatusConflict || body["portal"] != "https://billing.stripe.test/p/session/cus_paid" || len(x.billing.checkouts) != 0 {
		t.Fatalf("subscribe: %d %v, checkouts %v; want 409 with the paid one's portal", resp.StatusCode, body, x.billing.checkouts)
	}
}
