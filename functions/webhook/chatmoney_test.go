package main

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v76"
	"github.com/stripe/stripe-go/v76/refund"

	fakestripe "42sisters.ai/oracle/infra/fakes/fakestripe"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/chat"
	"42sisters.ai/oracle/shared/secret"
	"42sisters.ai/oracle/shared/stripex"
	"42sisters.ai/oracle/shared/subscription"
)

// paidInvoice is the subscription's paid invoice as Stripe lists it.
func (c *chatEnv) paidInvoice(t *testing.T, sub string) stripex.Invoice {
	t.Helper()
	in, found, err := c.billing.LatestPaidInvoice(context.Background(), sub)
	if err != nil || !found || in.PaymentIntent == "" {
		t.Fatalf("the paid invoice of %s: %+v, %v, %v", sub, in, found, err)
	}
	return in
}

// chatMoneyRecords are the chat's records of money events.
func (c *chatEnv) chatMoneyRecords(event audit.Event) []audit.Record {
	var out []audit.Record
	for _, r := range c.auditRecords() {
		if r.Source == audit.SourceChat && r.Event == event {
			out = append(out, r)
		}
	}
	return out
}

// A refund of a chat invoice's payment, and a dispute of one, reach the
// webhook (the fake Stripe over HTTP) as charge.refunded and
// charge.dispute.created naming a payment intent no order has: they are
// the chat's, recorded as such (source chat, the account, the
// subscription) and never CHARGE_UNKNOWN; the operator's cancellation that
// follows ends access at once. The operator's refund (make ops
// ACTION=chat-refund's idempotency key) is not alerted; one made in the
// Dashboard is, as a dispute is.
func TestAChatPaymentsRefundAndDisputeAreTheChats(t *testing.T) {
	c := newChatEnv(t)
	ctx := context.Background()
	byOps := c.subscribe(t, c.account, fakestripe.Control{})
	inOps := c.paidInvoice(t, byOps)
	if p, found, err := c.subs.PaymentOf(ctx, inOps.PaymentIntent); err != nil || !found || p.Account != c.account || p.Subscription != byOps || p.Invoice != inOps.ID || p.Amount != 500 {
		t.Fatalf("the paid invoice's payment as kept: %+v, %v, %v", p, found, err)
	}

	// The operator's refund.
	refunds := stripex.NewRefundsWithKey(secret.Static("sk_test_chat_webhook"), stripex.Options{BaseURL: c.url})
	if _, err := refunds.RefundInvoice(ctx, inOps); err != nil {
		t.Fatal(err)
	}
	c.delivered(t)
	if got := c.alertTexts(); len(got) != 0 {
		t.Fatalf("the operator's refund of the chat was alerted: %q", got)
	}
	// chat-refund then cancels at once: Stripe's customer.subscription.deleted
	// ends access, the period paid for notwithstanding.
	if _, canceled, err := c.billing.CancelNow(ctx, byOps); err != nil || !canceled {
		t.Fatalf("cancel now: %v, %v", canceled, err)
	}
	c.delivered(t)
	if st := c.stored(t); st.Status != subscription.Canceled || st.Grants(time.Now()) {
		t.Fatalf("after the operator's refund and cancellation: %+v", st)
	}
	recs := c.chatMoneyRecords(audit.EventChargeRefunded)
	if len(recs) != 1 || recs[0].Email != c.account || recs[0].Chat.Subscription != byOps || recs[0].AmountRefunded != 500 || recs[0].SessionID != "" {
		t.Fatalf("refund records %+v", recs)
	}

	// Another account's payment, refunded in the Dashboard (no key of
	// ours), then disputed: both alerted, neither unknown.
	hasher, err := audit.NewHasher(pepper)
	if err != nil {
		t.Fatal(err)
	}
	other, _, err := chat.NewStore(c.db, c.f.Ref("ChatTable"), hasher, nil).SignUp(ctx, "bea@example.com")
	if err != nil {
		t.Fatal(err)
	}
	second := c.subscribe(t, other, fakestripe.Control{})
	inDash := c.paidInvoice(t, second)
	p := &stripe.RefundParams{PaymentIntent: stripe.String(inDash.PaymentIntent), Amount: stripe.Int64(200)}
	if _, err := (&refund.Client{B: stripe.GetBackendWithConfig(stripe.APIBackend, &stripe.BackendConfig{URL: stripe.String(c.url)}), Key: "sk_test_dashboard"}).New(p); err != nil {
		t.Fatal(err)
	}
	resp, err := http.PostForm(c.url+"/_disputes", url.Values{"payment_intent": {inDash.PaymentIntent}, "reason": {"fraudulent"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("dispute: %d", resp.StatusCode)
	}
	c.delivered(t)
	texts := c.alertTexts()
	of := func(kind string) []string {
		var out []string
		for _, a := range texts {
			if strings.Contains(a, "| "+kind+" |") {
				out = append(out, a)
			}
		}
		return out
	}
	if got := of("CHARGE_UNKNOWN"); len(got) != 0 {
		t.Fatalf("the chat's refund or dispute was taken for an unknown charge: %q", got)
	}
	if got := of("REFUNDED"); len(got) != 1 || !strings.Contains(got[0], inDash.ID) || !strings.Contains(got[0], "make ops ACTION=chat-refund") {
		t.Fatalf("REFUNDED alerts %q", got)
	}
	if got := of("DISPUTE_OPENED"); len(got) != 1 || !strings.Contains(got[0], inDash.ID) {
		t.Fatalf("DISPUTE_OPENED alerts %q", got)
	}
	partial := 0
	for _, r := range c.chatMoneyRecords(audit.EventChargeRefunded) {
		if r.Status == audit.StatusError && r.AmountRefunded == 200 && r.Email == other {
			partial++
		}
	}
	if partial != 1 || len(c.chatMoneyRecords(audit.EventChargeRefunded)) != 2 {
		t.Fatalf("refund records %+v", c.chatMoneyRecords(audit.EventChargeRefunded))
	}
	if recs := c.chatMoneyRecords(audit.EventDisputeCreated); len(recs) != 1 || recs[0].Chat.Subscription != second {
		t.Fatalf("dispute records %+v", recs)
	}
}
