package store_test

import (
	"context"
	"testing"
	"time"

	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/store"
)

func TestTheOperatorsTransitionsApplyOnceAndOnlyInTheirState(t *testing.T) {
	ctx := context.Background()
	orders, _, c := newOrders(t)
	cleaned := verdict
	cleaned.ExpiresAt = c.Now().Add(90 * 24 * time.Hour)
	cases := []struct {
		name  string
		from  oracle.Status
		do    func(id string) (bool, error)
		want  bool
		after oracle.Status
	}{
		{"rerun a dropped order", oracle.StatusDropped, func(id string) (bool, error) {
			return orders.Rerun(ctx, id, oracle.TierFull, "Sell bread on Sundays")
		}, true, oracle.StatusPaid},
		{"rerun a ready order", oracle.StatusReady, func(id string) (bool, error) {
			return orders.Rerun(ctx, id, oracle.TierFull, "q")
		}, false, oracle.StatusReady},
		{"regenerate a held order", oracle.StatusHeld, func(id string) (bool, error) { return orders.Regenerate(ctx, id) }, true, oracle.StatusPaid},
		{"regenerate a quarantined order", oracle.StatusQuarantined, func(id string) (bool, error) { return orders.Regenerate(ctx, id) }, true, oracle.StatusPaid},
		{"regenerate a failed order", oracle.StatusFailed, func(id string) (bool, error) { return orders.Regenerate(ctx, id) }, false, oracle.StatusFailed},
		{"deliver a cleaned quarantined verdict", oracle.StatusQuarantined, func(id string) (bool, error) {
			return orders.DeliverCleaned(ctx, id, cleaned)
		}, true, oracle.StatusReady},
		{"deliver a cleaned held verdict", oracle.StatusHeld, func(id string) (bool, error) {
			return orders.DeliverCleaned(ctx, id, cleaned)
		}, false, oracle.StatusHeld},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			id := "cs_test_operator" + string(rune('a'+i))
			if _, err := orders.ClaimOrder(ctx, order(id, tc.from), lease); err != nil {
				t.Fatal(err)
			}
			for n, want := range []bool{tc.want, false} {
				got, err := tc.do(id)
				if err != nil || got != want {
					t.Fatalf("call %d: %v %v, want %v", n+1, got, err, want)
				}
			}
			o, _, _ := orders.Get(ctx, id)
			if o.Status != tc.after {
				t.Fatalf("status %s, want %s", o.Status, tc.after)
			}
		})
	}
}

func TestAReopenedMailIsSentAgain(t *testing.T) {
	ctx := context.Background()
	orders, _, _ := newOrders(t)
	id := "cs_test_reopened"
	if _, err := orders.ClaimOrder(ctx, order(id, oracle.StatusReady), lease); err != nil {
		t.Fatal(err)
	}
	if ok, err := orders.ReopenMail(ctx, id, oracle.MailVerdict); err != nil || ok {
		t.Fatalf("an unsent mail was reopened: %v %v", ok, err)
	}
	tok, err := orders.ClaimMail(ctx, id, oracle.MailVerdict, 0, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := orders.MailSent(ctx, id, oracle.MailVerdict, tok, "msg-1", oracle.MailSent); err != nil {
		t.Fatal(err)
	}
	if _, err := orders.ClaimMail(ctx, id, oracle.MailVerdict, 0, time.Minute); err != store.ErrAlreadySent {
		t.Fatalf("claim of a sent mail: %v", err)
	}
	for n, want := range []bool{true, false} {
		if ok, err := orders.ReopenMail(ctx, id, oracle.MailVerdict); err != nil || ok != want {
			t.Fatalf("reopen %d: %v %v", n+1, ok, err)
		}
	}
	if _, err := orders.ClaimMail(ctx, id, oracle.MailVerdict, 0, time.Minute); err != nil {
		t.Fatalf("claim of the reopened mail: %v", err)
	}
}
