package main

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/store"
)

// pollAgent is an agent's GET /x402/result/{id}.
func (e *env) pollAgent(id string) (int, string) {
	e.t.Helper()
	req := events.APIGatewayV2HTTPRequest{RawPath: "/x402/result/" + id, PathParameters: map[string]string{"id": id}}
	req.RequestContext.RequestID = "req-" + time.Now().Format("150405.000000000")
	resp, err := e.h.Handle(context.Background(), req)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp.StatusCode, resp.Body
}

// TestAgentOrdersAreServedWhereAgentsPoll: an agent's order is served at
// /x402/result/{id} (and at /api/verdict, where the result page reads
// it). No Stripe session stands behind it: an unknown one is a 404 asked
// of no one, one whose settlement is being confirmed says so, a paid one
// is pending, a READY one is its verdict.
func TestAgentOrdersAreServedWhereAgentsPoll(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	unknown := "x402_test_" + strings.Repeat("u", 32)
	if code, body := e.pollAgent(unknown); code != http.StatusNotFound {
		t.Fatalf("an unknown agent order: %d %s", code, body)
	}
	id := "x402_test_" + strings.Repeat("a", 32)
	o := oracle.Order{SessionID: id, Status: oracle.StatusAwaitingPayment, Tier: oracle.TierQuick, Query: "Should I?",
		AmountTotal: 50_000, Currency: oracle.CurrencyUSDC, Source: oracle.SourceX402, SessionCreated: e.clock.Now(),
		Agent: &oracle.AgentPayment{Network: "eip155:84532", Payer: "0x857b06519E91e3A54538791bDbb0E22373e36b66", Endpoint: "/x402/query"}}
	if _, err := e.orders.ClaimOrder(ctx, o, time.Minute); err != nil {
		t.Fatal(err)
	}
	if code, body := e.pollAgent(id); code != http.StatusAccepted || !strings.Contains(body, `"payment_unconfirmed"`) {
		t.Fatalf("an unconfirmed settlement: %d %s", code, body)
	}
	o.Status = oracle.StatusPaid
	c, err := e.orders.ClaimOrder(ctx, o, time.Minute)
	if err != nil || c.Order.Status != oracle.StatusPaid {
		t.Fatalf("paid: %+v %v", c, err)
	}
	if code, body := e.pollAgent(id); code != http.StatusAccepted || !strings.Contains(body, `"pending"`) {
		t.Fatalf("a paid order: %d %s", code, body)
	}
	_, tok, err := e.orders.StartGeneration(ctx, id, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.orders.StoreVerdict(ctx, id, tok, store.StoredVerdict{Canonical: canonicalGreen, Hash: e.h.Hasher.Hash(canonicalGreen), Label: oracle.VerdictGreen}); err != nil {
		t.Fatal(err)
	}
	if code, body := e.pollAgent(id); code != http.StatusOK || !strings.Contains(body, `"GREEN"`) {
		t.Fatalf("a ready order: %d %s", code, body)
	}
	if code, _ := e.get(id); code != http.StatusOK {
		t.Fatalf("/api/verdict for an agent order: %d", code)
	}

	// A failed one says the payment goes back to the wallet, not "we
	// will email you".
	failed := "x402_test_" + strings.Repeat("f", 32)
	o.SessionID, o.Status = failed, oracle.StatusPaid
	if _, err := e.orders.ClaimOrder(ctx, o, time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := e.orders.MarkFailed(ctx, failed, "model_refused"); err != nil {
		t.Fatal(err)
	}
	if code, body := e.pollAgent(failed); code != http.StatusInternalServerError || !strings.Contains(body, "refunded to the wallet") || strings.Contains(body, "email") {
		t.Fatalf("a failed agent order: %d %s", code, body)
	}
}
