package stack_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"

	"42sisters.ai/oracle/infra/local/stack"
	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/health"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/x402"
)

// TestOrdersAreNamedNeverByTheirWholeID is issue 38's finding 10 through
// the real functions: a card order and an agent order (x402, paid from a
// fresh key on Base Sepolia) run through the stack; the card order's
// stored verdict is then corrupted and met by the health job's sample,
// which sets it aside and has it generated again, raising one
// VERDICT_CORRUPT (the next run raises none); `make ops ACTION=show`
// finds each order by its name. No alert, and no line any function wrote,
// holds either whole id: each names its order by its 24-character name.
func TestOrdersAreNamedNeverByTheirWholeID(t *testing.T) {
	t.Parallel()
	o := options(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	s, err := stack.Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	logs := o.Log.(*testkit.Buffer)

	card := pay(t, s, "quick", "Should I open a bakery by the canal?", fmt.Sprintf("names-%d@example.com", time.Now().UnixNano()))
	waitReady(t, s.APIURL, card)
	// The webhook, the generator and the mailer named it, by name, in
	// the order's one trace (the repair below is a trace of its own).
	checkOrderLogs(t, logs, card)
	agent := payAgent(t, s, "/x402/query", `{"query":"Should I sell my bread at the market?"}`)

	testkit.CorruptVerdict(t, s.AWS, s.Resources.Ref("OrdersTable"), card, `{"summary":"The bak`)
	if c := checkNamed(t, fireHealth(ctx, t, s), "verdict_integrity"); c.Status != health.Critical || !strings.Contains(c.Detail, "1 corrupt") {
		t.Fatalf("the sample's check %+v, want the corrupt verdict found", c)
	}
	waitReady(t, s.APIURL, card) // generated again
	if c := checkNamed(t, fireHealth(ctx, t, s), "verdict_integrity"); c.Status != health.OK {
		t.Fatalf("the next run's check %+v, want all intact", c)
	}
	if n := countAlerts(s, string(alert.VerdictCorrupt)); n != 1 {
		t.Fatalf("%d VERDICT_CORRUPT alerts, want 1: %q", n, s.Alerts())
	}

	for _, id := range []string{card, agent} {
		a := ops(ctx, t, o, map[string]any{"action": "show", "session": oracle.ShortID(id)})
		if !a.OK || !strings.HasPrefix(a.Message, oracle.ShortID(id)+" is READY") {
			t.Errorf("make ops ACTION=show SESSION=%s: %s", oracle.ShortID(id), a.raw)
		}
	}

	// The agent function named its order, by name; a function's lines
	// reach the output just after its work shows.
	var lines []stack.LogLine
	testkit.Eventually(10*time.Second, 50*time.Millisecond, func() bool {
		lines = stack.OrderLogs(logs.String(), agent)
		return len(lines) > 0
	})
	if len(lines) == 0 {
		t.Errorf("no function named the agent order %s", oracle.ShortID(agent))
	}
	for _, id := range []string{card, agent} {
		for _, a := range s.Alerts() {
			if strings.Contains(a, id) {
				t.Errorf("an alert holds the whole id of %s: %s", oracle.ShortID(id), a)
			}
		}
		for _, l := range strings.Split(logs.String(), "\n") {
			if functionPrefix.MatchString(l) && strings.Contains(l, id) {
				t.Errorf("a function's line holds the whole id of %s: %.300s", oracle.ShortID(id), oracle.NameIDs(l))
			}
		}
	}
}

// payAgent pays path over x402 from a fresh key on Base Sepolia (the fake
// facilitator's faucet funds it), as an agent's client does, and returns
// the order's id once its verdict is served at the poll address.
func payAgent(t *testing.T, s *stack.Stack, path, body string) string {
	t.Helper()
	status, out, hdr := send(t, http.DefaultClient, postJSON(t, s.APIURL+path, body, ""))
	pr, err := x402.DecodePaymentRequired(hdr.Get(x402.HeaderPaymentRequired))
	if status != http.StatusPaymentRequired || err != nil {
		t.Fatalf("%s without a payment: %d %s (%v)", path, status, out, err)
	}
	var req *x402.PaymentRequirements
	for i := range pr.Accepts {
		if pr.Accepts[i].Network == x402.NetworkBaseSepolia {
			req = &pr.Accepts[i]
		}
	}
	if req == nil {
		t.Fatalf("Base Sepolia is not offered: %+v", pr.Accepts)
	}
	key, err := secp256k1.GeneratePrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	p, err := x402.NewPayment(key, *req, pr.Resource, time.Now(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	header, err := x402.EncodeHeader(p)
	if err != nil {
		t.Fatal(err)
	}
	status, out, _ = send(t, http.DefaultClient, postJSON(t, s.APIURL+path, body, header))
	var answer struct {
		Status  string `json:"status"`
		OrderID string `json:"order_id"`
	}
	if err := json.Unmarshal(out, &answer); err != nil || (status != http.StatusOK && status != http.StatusAccepted) || !oracle.IsAgentOrder(answer.OrderID) {
		t.Fatalf("the paid request: %d %s (%v)", status, out, err)
	}
	if !testkit.Eventually(60*time.Second, 100*time.Millisecond, func() bool {
		status, out, _ = send(t, http.DefaultClient, mustRequest(t, "GET", s.APIURL+"/x402/result/"+answer.OrderID))
		return status == http.StatusOK && strings.Contains(string(out), `"status":"ready"`)
	}) {
		t.Fatalf("the agent order's poll address: %d %s, want its verdict", status, out)
	}
	return answer.OrderID
}

// postJSON is a POST of body, with a payment header when one is given.
func postJSON(t *testing.T, u, body, payment string) *http.Request {
	t.Helper()
	req, err := http.NewRequest("POST", u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if payment != "" {
		req.Header.Set(x402.HeaderPaymentSignature, payment)
	}
	return req
}
