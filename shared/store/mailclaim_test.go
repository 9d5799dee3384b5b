package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/store"
)

// The claim's condition is MailOwed, the rule the mailer decides by: for
// every kind and every order state, the claim is granted exactly when the
// order is owed the email, and it returns the order as it left it (granted)
// or found it (refused: not owed comes first, before the delivery's own
// refusals).
func TestAnOrdersMailIsClaimedOnlyWhileItIsOwed(t *testing.T) {
	ctx := context.Background()
	orders, _, _ := newOrders(t)
	states := []oracle.Order{}
	for _, s := range []oracle.Status{oracle.StatusAwaitingPayment, oracle.StatusPaid, oracle.StatusGenerating, oracle.StatusReady,
		oracle.StatusFailed, oracle.StatusDropped, oracle.StatusHeld, oracle.StatusQuarantined, oracle.StatusRefunded} {
		states = append(states, oracle.Order{Status: s})
		if s == oracle.StatusReady {
			for _, d := range []string{"", oracle.DivergenceNone, oracle.DivergenceMinor, oracle.DivergenceSignificant, oracle.DivergenceUnknown} {
				states = append(states, oracle.Order{Status: s, Verdict: `{"verdict":"GREEN"}`, Divergence: d})
			}
		}
	}
	n := 0
	for _, kind := range append(oracle.MailKinds(), "postcard") {
		for _, st := range states {
			n++
			id := fmt.Sprintf("cs_test_owed%03d", n)
			o := order(id, st.Status)
			o.Verdict, o.Divergence = st.Verdict, st.Divergence
			if _, err := orders.ClaimOrder(ctx, o, lease); err != nil {
				t.Fatal(err)
			}
			owed := store.MailOwed(kind, o)
			c, err := orders.ClaimOrderMail(ctx, id, kind, 0, time.Minute)
			name := fmt.Sprintf("%s mail of a %s order (verdict %t, divergence %q)", kind, st.Status, st.Verdict != "", st.Divergence)
			switch {
			case owed && (err != nil || c.Token == ""):
				t.Errorf("%s: %v, want the claim", name, err)
			case !owed && !errors.Is(err, store.ErrMailNotOwed):
				t.Errorf("%s: %v, want %v", name, err, store.ErrMailNotOwed)
			case c.Order.SessionID != id || c.Order.Status != st.Status || c.Order.Verdict != st.Verdict:
				t.Errorf("%s: the claim read %+v, want the order", name, c.Order)
			}
		}
	}
}

// NotifiedDivergences, the claim's list, is oracle.NotifyDivergence's rule.
func TestNotifiedDivergencesAreTheOnesTheCustomerIsToldOf(t *testing.T) {
	for _, d := range []string{"", oracle.DivergenceNone, oracle.DivergenceMinor, oracle.DivergenceSignificant, oracle.DivergenceUnknown} {
		if got := slices.Contains(store.NotifiedDivergences, d); got != oracle.NotifyDivergence(d) {
			t.Errorf("divergence %q listed %t, NotifyDivergence says %t", d, got, oracle.NotifyDivergence(d))
		}
	}
}

// A refused claim says why from the order it returns: none, not owed,
// sent (with the message id), an attempt already made, or in flight; the
// order read is the one that refused it.
func TestARefusedMailClaimSaysWhy(t *testing.T) {
	ctx := context.Background()
	orders, _, clk := newOrders(t)
	if _, err := orders.ClaimOrderMail(ctx, "cs_test_nosuchorder", oracle.MailVerdict, 0, time.Minute); !errors.Is(err, store.ErrNoOrder) {
		t.Fatalf("no order: %v, want %v", err, store.ErrNoOrder)
	}
	id := "cs_test_refused"
	o := order(id, oracle.StatusReady)
	o.Verdict = `{"verdict":"RED"}`
	if _, err := orders.ClaimOrder(ctx, o, lease); err != nil {
		t.Fatal(err)
	}
	first, err := orders.ClaimOrderMail(ctx, id, oracle.MailVerdict, 0, time.Minute)
	if err != nil || first.Order.Verdict != o.Verdict {
		t.Fatalf("claim: %v, read %+v", err, first.Order)
	}
	if _, err := orders.ClaimOrderMail(ctx, id, oracle.MailVerdict, 0, time.Minute); !errors.Is(err, store.ErrMailInFlight) {
		t.Fatalf("a second claim: %v, want %v", err, store.ErrMailInFlight)
	}
	if _, err := orders.MailFailed(ctx, id, oracle.MailVerdict, first.Token, store.Try{Attempt: 0, At: clk.Now(), Class: "transient"}, clk.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if c, err := orders.ClaimOrderMail(ctx, id, oracle.MailVerdict, 0, time.Minute); !errors.Is(err, store.ErrAttemptSpent) || c.Next != 1 {
		t.Fatalf("the failed attempt again: %v (next %d), want %v (next 1)", err, c.Next, store.ErrAttemptSpent)
	}
	second, err := orders.ClaimOrderMail(ctx, id, oracle.MailVerdict, 1, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := orders.MailSent(ctx, id, oracle.MailVerdict, second.Token, "ses-1", oracle.MailSent); err != nil {
		t.Fatal(err)
	}
	c, err := orders.ClaimOrderMail(ctx, id, oracle.MailVerdict, 1, time.Minute)
	if !errors.Is(err, store.ErrAlreadySent) || c.Result != "ses-1" || c.Next != 1 || c.Order.Mail[oracle.MailVerdict] != oracle.MailSent {
		t.Fatalf("after the send: %v, read %+v, want %v with the message id, next 1 and the state", err, c, store.ErrAlreadySent)
	}
	// Not owed comes first: a sent verdict of an order since refunded.
	if _, err := orders.MarkRefunded(ctx, id, store.Refund{ID: "re_refused", Amount: 100, By: store.RefundedInStripe}); err != nil {
		t.Fatal(err)
	}
	if _, err := orders.ClaimOrderMail(ctx, id, oracle.MailVerdict, 1, time.Minute); !errors.Is(err, store.ErrMailNotOwed) {
		t.Fatalf("a refunded order's verdict: %v, want %v", err, store.ErrMailNotOwed)
	}
}
