package main

import (
	"context"
	"strings"
	"testing"
	"time"

	fakegemini "42sisters.ai/oracle/infra/fakes/fakegemini"
	"42sisters.ai/oracle/shared/oracle"
)

// agentPaid records an agent's settled x402 order, as the agent function
// claims it.
func (e *env) agentPaid(id string, tier oracle.Tier) {
	e.t.Helper()
	ctx := context.Background()
	c, err := e.orders.ClaimOrder(ctx, oracle.Order{SessionID: id, Status: oracle.StatusPaid, Tier: tier, Query: "Should I open a bakery on my street?",
		AmountTotal: tier.PriceUSDCAtomic(), Currency: oracle.CurrencyUSDC, Source: oracle.SourceX402, SessionCreated: time.Now().UTC(),
		Agent: &oracle.AgentPayment{Network: "eip155:84532", Payer: "0x857b06519E91e3A54538791bDbb0E22373e36b66",
			Transaction: "0x" + strings.Repeat("ab", 32), Endpoint: "/x402/query/full"}}, time.Minute)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.orders.JobEnqueued(ctx, id, c.Lease); err != nil {
		e.t.Fatal(err)
	}
}

// TestAgentOrdersAreNeverMailed: an agent paid over x402 has no address.
// Its verdict is stored and served like any other with no email queued;
// a generation that fails for good queues no failure notice but tells the
// operator whom to refund, how much, and which transaction paid.
func TestAgentOrdersAreNeverMailed(t *testing.T) {
	e := newEnv(t)
	ready := "x402_test_" + strings.Repeat("R", 32)
	e.agentPaid(ready, oracle.TierFull)
	e.control(fakegemini.Scenario{Verdict: oracle.VerdictAmber})
	if failed := e.run(record("a1", job(ready), 1)); len(failed) != 0 {
		t.Fatal("the item failed")
	}
	if o := e.order(ready); o.Status != oracle.StatusReady || o.VerdictLabel != oracle.VerdictAmber {
		t.Fatalf("order %+v", o)
	}

	failed := "x402_test_" + strings.Repeat("F", 32)
	e.agentPaid(failed, oracle.TierFull)
	e.control(fakegemini.Scenario{Status: 400})
	if f := e.run(record("a2", job(failed), 1)); len(f) != 0 {
		t.Fatal("the item failed")
	}
	if o := e.order(failed); o.Status != oracle.StatusFailed {
		t.Fatalf("order %+v, want FAILED", o)
	}
	if jobs := e.mailJobs(); len(jobs) != 0 {
		t.Fatalf("mail jobs %+v for agent orders", jobs)
	}
	var refunds []string
	for _, a := range e.alerts() {
		if strings.Contains(a, "X402_REFUND_OWED") {
			refunds = append(refunds, a)
		}
	}
	if len(refunds) != 1 {
		t.Fatalf("refund alerts %q, want one", refunds)
	}
	for _, want := range []string{"0.250000 USDC", "0x857b06519E91e3A54538791bDbb0E22373e36b66", "eip155:84532", "0x" + strings.Repeat("ab", 32), oracle.ShortID(failed)} {
		if !strings.Contains(refunds[0], want) {
			t.Errorf("the refund alert %q does not name %q", refunds[0], want)
		}
	}
}
