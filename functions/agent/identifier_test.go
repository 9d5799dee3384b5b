package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"42sisters.ai/oracle/infra/fakes/fakefacilitator"
	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/x402"
)

const payID = "pay_7d5d747be160e280504c099d984bcfe0"

// withID adds the payment identifier id to a payment, as the official
// client's extension does.
func withID(id string) func(*x402.PaymentPayload) {
	return func(p *x402.PaymentPayload) { *p = x402.WithPaymentIdentifier(*p, id) }
}

// facilitatorCalls counts the fake facilitator's calls by path.
func (e *env) facilitatorCalls() map[string]int {
	out := map[string]int{}
	for _, c := range e.fac.Calls() {
		out[c.Path]++
	}
	return out
}

// ledgerItems counts the Ledger's items whose key begins with prefix.
func (e *env) ledgerItems(prefix string) (n int) {
	for _, item := range testkit.TableItems(e.t, e.f.AWS, e.f.Ref("LedgerTable")) {
		var i struct {
			PK string `json:"pk"`
		}
		if err := json.Unmarshal([]byte(item), &i); err != nil {
			e.t.Fatal(err)
		}
		if strings.HasPrefix(i.PK, prefix) {
			n++
		}
	}
	return n
}

// answered is a 200's or 202's order id, and the PAYMENT-RESPONSE.
func answered(t *testing.T, status int, body string, headers map[string]string) (string, x402.SettleResponse) {
	t.Helper()
	if status != http.StatusOK && status != http.StatusAccepted {
		t.Fatalf("answered %d %s", status, body)
	}
	var a struct {
		OrderID string `json:"order_id"`
	}
	if err := json.Unmarshal([]byte(body), &a); err != nil || a.OrderID == "" {
		t.Fatalf("answer %s: %v", body, err)
	}
	s, err := x402.DecodePaymentResponse(headers[x402.HeaderPaymentResponse])
	if err != nil {
		t.Fatalf("PAYMENT-RESPONSE: %v", err)
	}
	return a.OrderID, s
}

// TestARetryUnderItsIdentifierIsAnsweredFromItsOrder: a payment carrying a
// payment identifier, sent again as it was (an agent that lost the
// answer), gets the same answer: the 202 with the same Location while the
// verdict is prepared, the 200 with the verdict once it is stored, each
// with the settlement's PAYMENT-RESPONSE, and nothing is claimed,
// verified, settled or generated again. The identifier is kept on the
// order and in the audit records, the retries recorded as RETRY.
func TestARetryUnderItsIdentifierIsAnsweredFromItsOrder(t *testing.T) {
	e := newEnv(t)
	header := e.sign(wallet(t), e.offer("/x402/query").Accepts[0], withID(payID))
	first := e.do(request("/x402/query", body, header))
	if first.StatusCode != http.StatusAccepted {
		t.Fatalf("first answered %d %s", first.StatusCode, first.Body)
	}
	id, settled := answered(t, first.StatusCode, first.Body, first.Headers)
	calls, items := e.facilitatorCalls(), len(testkit.TableItems(t, e.f.AWS, e.f.Ref("LedgerTable")))

	retry := e.do(request("/x402/query", body, header))
	if retry.StatusCode != http.StatusAccepted || retry.Headers["Location"] != first.Headers["Location"] {
		t.Fatalf("the retry answered %d %s at %q, want 202 at %q", retry.StatusCode, retry.Body, retry.Headers["Location"], first.Headers["Location"])
	}
	if again, s := answered(t, retry.StatusCode, retry.Body, retry.Headers); again != id || !s.Success || s.Transaction != settled.Transaction {
		t.Fatalf("the retry names %s, settlement %+v; want %s, %+v", again, s, id, settled)
	}

	storeVerdict(e, oracle.TierQuick)
	ready := e.do(request("/x402/query", body, header))
	if ready.StatusCode != http.StatusOK {
		t.Fatalf("the retry after the verdict answered %d %s", ready.StatusCode, ready.Body)
	}
	if again, s := answered(t, ready.StatusCode, ready.Body, ready.Headers); again != id || s.Transaction != settled.Transaction {
		t.Fatalf("the ready retry names %s, settlement %+v", again, s)
	}
	if got := e.facilitatorCalls(); got["/verify"] != 1 || got["/settle"] != 1 || got["/verify"] != calls["/verify"] {
		t.Fatalf("facilitator calls %v, want one verify and one settle", got)
	}
	if n := len(testkit.TableItems(t, e.f.AWS, e.f.Ref("LedgerTable"))); n != items || e.ledgerItems("x402pid#") != 1 || e.ledgerItems("x402auth#") != 1 {
		t.Fatalf("Ledger items %d (was %d): retries claimed something", n, items)
	}
	if jobs := e.generateJobs(); len(jobs) != 1 {
		t.Fatalf("generation jobs %q", jobs)
	}
	o, _, err := e.orders.Get(t.Context(), id)
	if err != nil || o.Agent == nil || o.Agent.PaymentID != payID {
		t.Fatalf("order %+v %v", o.Agent, err)
	}
	statuses := map[audit.Status]int{}
	for _, r := range e.records() {
		statuses[r.Status]++
		if r.PaymentID != payID || r.SessionID != id {
			t.Errorf("record %s names payment %q, order %s", r.Status, r.PaymentID, r.SessionID)
		}
	}
	// Two retries in one hour: one RETRY record.
	if statuses[audit.StatusOK] != 1 || statuses[audit.StatusRetry] != 1 || len(statuses) != 2 {
		t.Fatalf("records by status %v", statuses)
	}
	if n := e.metrics.Counts()["X402Retries"]; n != 2 {
		t.Fatalf("%v retries counted, want 2", n)
	}
}

// TestTenConcurrentRetriesPayOnce: the same payment under one identifier,
// sent ten times at once, is settled once and makes one order; every
// answer names that order (none is refused as a replay).
func TestTenConcurrentRetriesPayOnce(t *testing.T) {
	e := newEnv(t)
	header := e.sign(wallet(t), e.offer("/x402/query/full").Accepts[0], withID(payID))
	type answer struct {
		status  int
		body    string
		headers map[string]string
	}
	answers := make([]answer, 10)
	var wg sync.WaitGroup
	for i := range answers {
		wg.Go(func() {
			r := e.do(request("/x402/query/full", body, header))
			answers[i] = answer{r.StatusCode, r.Body, r.Headers}
		})
	}
	wg.Wait()
	orders := map[string]int{}
	for _, a := range answers {
		if a.status != http.StatusAccepted {
			t.Fatalf("an answer was %d %s", a.status, a.body)
		}
		var p pendingAnswer
		if err := json.Unmarshal([]byte(a.body), &p); err != nil {
			t.Fatal(err)
		}
		orders[p.OrderID]++
	}
	if len(orders) != 1 {
		t.Fatalf("answers name orders %v, want one", orders)
	}
	if got := e.facilitatorCalls(); got["/verify"] != 1 || got["/settle"] != 1 {
		t.Fatalf("facilitator calls %v", got)
	}
	if n := e.agentOrders(); n != 1 {
		t.Fatalf("%d orders", n)
	}
	if jobs := e.generateJobs(); len(jobs) != 1 {
		t.Fatalf("generation jobs %q", jobs)
	}
	if e.ledgerItems("x402auth#") != 1 || e.ledgerItems("x402pid#") != 1 {
		t.Fatalf("%d authorization claims, %d identifier claims", e.ledgerItems("x402auth#"), e.ledgerItems("x402pid#"))
	}
}

// TestAnIdentifierReusedForAnotherPurchaseIsAConflict: under an identifier
// used before, another authorization (another payment of the same price)
// or the same payment for another request is a 409 that claims, orders,
// verifies and settles nothing, recorded once as IDENTIFIER_CONFLICT.
func TestAnIdentifierReusedForAnotherPurchaseIsAConflict(t *testing.T) {
	e := newEnv(t)
	key := wallet(t)
	req := e.offer("/x402/query").Accepts[0]
	header := e.sign(key, req, withID(payID))
	if r := e.do(request("/x402/query", body, header)); r.StatusCode != http.StatusAccepted {
		t.Fatalf("first answered %d %s", r.StatusCode, r.Body)
	}
	calls, orders, claims := e.facilitatorCalls(), e.agentOrders(), e.ledgerItems("x402auth#")
	for name, r := range map[string]struct{ body, header string }{
		"another authorization":        {body, e.sign(key, req, withID(payID))},
		"another payer":                {body, e.sign(wallet(t), req, withID(payID))},
		"the same payment, other body": {`{"query":"Should I sell the bakery instead?"}`, header},
	} {
		resp := e.do(request("/x402/query", r.body, r.header))
		if resp.StatusCode != http.StatusConflict || !strings.Contains(resp.Body, "payment identifier") {
			t.Errorf("%s: %d %s, want 409", name, resp.StatusCode, resp.Body)
		}
	}
	if got := e.facilitatorCalls(); got["/verify"] != calls["/verify"] || got["/settle"] != calls["/settle"] {
		t.Fatalf("facilitator calls %v, were %v", got, calls)
	}
	if e.agentOrders() != orders || e.ledgerItems("x402auth#") != claims {
		t.Fatalf("%d orders (were %d), %d claims (were %d)", e.agentOrders(), orders, e.ledgerItems("x402auth#"), claims)
	}
	conflicts := 0
	for _, r := range e.records() {
		if r.Status == audit.StatusIdentifierConflict {
			conflicts++
		}
	}
	// Two payers, one hour: one record each.
	if conflicts != 2 || e.metrics.Counts()["X402IdentifierConflicts"] != 3 {
		t.Fatalf("%d IDENTIFIER_CONFLICT records, %v counted", conflicts, e.metrics.Counts()["X402IdentifierConflicts"])
	}
}

// TestAMalformedIdentifierIsRefusedBeforeAnything: an identifier that is
// there but not 16 to 128 of [A-Za-z0-9_-] is a 400 that writes nothing
// and calls no facilitator: a client that asked for idempotency is never
// charged without it.
func TestAMalformedIdentifierIsRefusedBeforeAnything(t *testing.T) {
	e := newEnv(t)
	req := e.offer("/x402/query").Accepts[0]
	for name, id := range map[string]any{
		"short":     "pay_123",
		"long":      strings.Repeat("a", 129),
		"a space":   "pay 7d5d747be160e280504c",
		"not ASCII": "pay_7d5d747be160é280504c",
		"a number":  1234567890123456789,
	} {
		header := e.sign(wallet(t), req, func(p *x402.PaymentPayload) {
			p.Extensions = map[string]any{x402.ExtensionPaymentIdentifier: map[string]any{"info": map[string]any{"required": false, "id": id}}}
		})
		resp := e.do(request("/x402/query", body, header))
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(resp.Body, "nothing was charged") {
			t.Errorf("%s: %d %s, want 400", name, resp.StatusCode, resp.Body)
		}
	}
	if n := len(e.fac.Calls()); n != 0 || e.agentOrders() != 0 || len(testkit.TableItems(t, e.f.AWS, e.f.Ref("LedgerTable"))) != 0 || len(e.records()) != 0 {
		t.Fatalf("%d facilitator calls, %d orders, Ledger %v, records %v", n, e.agentOrders(),
			testkit.TableItems(t, e.f.AWS, e.f.Ref("LedgerTable")), e.records())
	}
}

// TestAnIdentifierIsFreedWhenNoMoneyMoved: a facilitator that did not
// answer /verify leaves the payment unspent, so the identifier is freed
// with the authorization: the same payment under it, sent again once the
// facilitator is back, is paid and answered. A payment the facilitator
// refused is refused again under its identifier, with the same reason and
// no call.
func TestAnIdentifierIsFreedWhenNoMoneyMoved(t *testing.T) {
	e := newEnv(t)
	req := e.offer("/x402/query").Accepts[0]
	header := e.sign(wallet(t), req, withID(payID))
	down, up := true, false
	if _, err := e.fac.Apply(fakefacilitator.Control{Down: &down}); err != nil {
		t.Fatal(err)
	}
	if r := e.do(request("/x402/query", body, header)); r.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("with the facilitator down: %d %s", r.StatusCode, r.Body)
	}
	if _, err := e.fac.Apply(fakefacilitator.Control{Down: &up}); err != nil {
		t.Fatal(err)
	}
	r := e.do(request("/x402/query", body, header))
	if _, s := answered(t, r.StatusCode, r.Body, r.Headers); !s.Success {
		t.Fatalf("the retry's settlement %+v", s)
	}

	// A payer without the balance: /verify refuses, and so does the retry.
	poor := wallet(t)
	if _, err := e.fac.Apply(fakefacilitator.Control{Balances: map[string]string{x402.AddressOf(poor.PubKey()): "0"}}); err != nil {
		t.Fatal(err)
	}
	refusedHeader := e.sign(poor, req, withID("pay_poor_0123456789abcdef"))
	first := e.do(request("/x402/query", body, refusedHeader))
	verifies := e.facilitatorCalls()["/verify"]
	again := e.do(request("/x402/query", body, refusedHeader))
	a, _ := x402.DecodePaymentRequired(first.Headers[x402.HeaderPaymentRequired])
	b, _ := x402.DecodePaymentRequired(again.Headers[x402.HeaderPaymentRequired])
	if first.StatusCode != http.StatusPaymentRequired || again.StatusCode != http.StatusPaymentRequired || a.Error == "" || a.Error != b.Error {
		t.Fatalf("refused %d %q, then %d %q", first.StatusCode, a.Error, again.StatusCode, b.Error)
	}
	if n := e.facilitatorCalls()["/verify"]; n != verifies {
		t.Fatalf("the refused retry was verified again (%d calls, were %d)", n, verifies)
	}
}
