package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/oracle"
)

// awaitingAgent records an agent order whose settlement was left
// unconfirmed, as the agent function leaves it.
func (e *env) awaitingAgent(id string) {
	e.t.Helper()
	o := oracle.Order{SessionID: id, Status: oracle.StatusAwaitingPayment, Tier: oracle.TierQuick, Query: "Sell bread on Sundays",
		AmountTotal: 50_000, Currency: oracle.CurrencyUSDC, Source: oracle.SourceX402, SessionCreated: e.clock.Now().Add(-time.Hour),
		Expires: e.clock.Now().Add(90 * 24 * time.Hour),
		Agent: &oracle.AgentPayment{Network: "eip155:84532", Payer: "0x857b06519E91e3A54538791bDbb0E22373e36b66", Endpoint: "/x402/query",
			Nonce: "0x" + strings.Repeat("ab", 32), ValidBefore: "1795780800"}}
	if _, err := e.orders.ClaimOrder(context.Background(), o, time.Minute); err != nil {
		e.t.Fatal(err)
	}
}

const tx = "0x1111111111111111111111111111111111111111111111111111111111111111"

// TestAnUnconfirmedSettlementIsConfirmedOrVoided: the operator confirms
// an agent order with the transaction found on the chain (PAID, one
// generation job, the transaction kept; the same request again changes
// nothing), or voids one that never settled (PAYMENT_FAILED, nothing
// generated); each is audited, each refuses a Stripe order, a missing or
// malformed transaction, and an order past that point.
func TestAnUnconfirmedSettlementIsConfirmedOrVoided(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	confirmed, voided := "x402_test_"+strings.Repeat("C", 32), "x402_test_"+strings.Repeat("V", 32)
	e.awaitingAgent(confirmed)
	e.awaitingAgent(voided)
	e.claim("cs_test_card", oracle.StatusPaid)
	testkit.Drain(t, e.sqs, e.f.Ref("GenerateQueue"))
	by := func(r Request) Request { r.AuthorisedBy, r.Reason = "ana", "the chain shows the transfer"; return r }

	for _, r := range []Request{
		{Action: "x402-confirm", Session: confirmed},                                      // no transaction
		{Action: "x402-confirm", Session: confirmed, TX: "0x12"},                          // not a hash
		{Action: "x402-confirm", Session: "cs_test_card", TX: tx},                         // a Stripe order
		{Action: "x402-void", Session: "cs_test_card"},                                    // a Stripe order
		{Action: "x402-confirm", Session: "x402_test_" + strings.Repeat("Z", 32), TX: tx}, // no such order
	} {
		if a := e.do(by(r)); a.OK {
			t.Fatalf("%+v was done: %+v", r, a)
		}
	}
	if a := e.do(Request{Action: "x402-confirm", Session: confirmed, TX: tx}); a.OK {
		t.Fatal("confirmed without saying who and why")
	}
	// Named by the start alerts give it.
	a := e.do(by(Request{Action: "x402-confirm", Session: oracle.ShortID(confirmed), TX: tx}))
	if !a.OK || !a.Changed {
		t.Fatalf("confirm: %+v", a)
	}
	if again := e.do(by(Request{Action: "x402-confirm", Session: confirmed, TX: tx})); !again.OK || again.Changed {
		t.Fatalf("confirmed twice: %+v", again)
	}
	o, _, _ := e.orders.Get(ctx, confirmed)
	if o.Status != oracle.StatusPaid || o.Agent == nil || o.Agent.Transaction != tx {
		t.Fatalf("confirmed order %+v", o)
	}
	if jobs := testkit.Drain(t, e.sqs, e.f.Ref("GenerateQueue")); len(jobs) != 1 || !strings.Contains(jobs[0], confirmed) {
		t.Fatalf("generation jobs %q", jobs)
	}
	if shown := e.do(Request{Action: "show", Session: confirmed}); !shown.OK || !strings.Contains(shown.Text, "0.050000 USDC over x402") ||
		!strings.Contains(shown.Text, tx) || !strings.Contains(shown.Text, "0x857b06519E91e3A54538791bDbb0E22373e36b66") ||
		!strings.Contains(shown.Text, "0x"+strings.Repeat("ab", 32)) || !strings.Contains(shown.Text, "2026-11-27T12:00:00Z") {
		t.Fatalf("show: %+v", shown)
	}
	if v := e.do(by(Request{Action: "x402-void", Session: confirmed})); v.OK {
		t.Fatalf("a confirmed order was voided: %+v", v)
	}

	if a := e.do(by(Request{Action: "x402-void", Session: voided})); !a.OK || !a.Changed {
		t.Fatalf("void: %+v", a)
	}
	if o, _, _ := e.orders.Get(ctx, voided); o.Status != oracle.StatusPaymentFailed {
		t.Fatalf("voided order %+v", o)
	}
	if jobs := testkit.Drain(t, e.sqs, e.f.Ref("GenerateQueue")); len(jobs) != 0 {
		t.Fatalf("a voided order was generated: %q", jobs)
	}
	actions := map[string]int{}
	for _, r := range testkit.AuditRecords(t, awsenv.S3(e.f.AWS), e.f.Ref("AuditBucket")) {
		if r.Operator != nil {
			actions[r.Operator.Action]++
		}
	}
	if actions["x402-confirm"] != 1 || actions["x402-void"] != 1 {
		t.Fatalf("operator records %v", actions)
	}
}

// TestAnAgentOrderIsRefundedByTheTransferBack: an agent order is refunded
// from the pay-to wallet, not through Stripe: refund asks for the
// transfer's hash, names the payer and the amount, and then records it.
func TestAnAgentOrderIsRefundedByTheTransferBack(t *testing.T) {
	e := newEnv(t)
	id := "x402_test_" + strings.Repeat("R", 32)
	e.awaitingAgent(id)
	if a := e.do(Request{Action: "x402-confirm", Session: id, TX: tx, AuthorisedBy: "ana", Reason: "seen on chain"}); !a.OK {
		t.Fatal(a.Message)
	}
	// A failed generation, as the generator records it.
	if _, err := e.orders.MarkFailed(context.Background(), id, "model_refused"); err != nil {
		t.Fatal(err)
	}
	a := e.do(Request{Action: "refund", Session: id, AuthorisedBy: "ana", Reason: "no verdict"})
	if a.OK || !strings.Contains(a.Message, "0.050000") || !strings.Contains(a.Message, "0x857b06519E91e3A54538791bDbb0E22373e36b66") {
		t.Fatalf("refund without the transfer: %+v", a)
	}
	back := "0x2222222222222222222222222222222222222222222222222222222222222222"
	if a := e.do(Request{Action: "refund", Session: id, TX: back, AuthorisedBy: "ana", Reason: "no verdict"}); !a.OK || !a.Changed {
		t.Fatalf("refund: %+v", a)
	}
	o, _, _ := e.orders.Get(context.Background(), id)
	if o.Status != oracle.StatusRefunded || o.RefundID != back || o.RefundedAmount != 50_000 {
		t.Fatalf("refunded order %+v", o)
	}
	if len(e.refunds.made) != 0 {
		t.Fatalf("Stripe was asked to refund an agent order: %v", e.refunds.made)
	}
}
