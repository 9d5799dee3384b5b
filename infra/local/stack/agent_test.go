package stack_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"42sisters.ai/oracle/infra/local/stack"
	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/infra/x402client"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/store"
	"42sisters.ai/oracle/shared/x402"
)

// TestAnAgentPaysWithTheOfficialClient is the interoperability test: the
// official TypeScript client (@x402/fetch with @x402/evm and viem, as
// pinned in infra/x402client), unmodified, with a fresh random key, pays
// the local stack's /x402/query/full on Base Sepolia through the fake
// facilitator and gets the verdict back with a PAYMENT-RESPONSE that
// decodes. Its header sent again is refused as a replay; a second
// payment sent twice at once is settled once. Each authorization ends with
// at most one verdict, and every outcome is an audit record.
func TestAnAgentPaysWithTheOfficialClient(t *testing.T) {
	t.Parallel()
	client := x402client.New(t)
	o := options(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	s, err := stack.Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	url := s.APIURL + "/x402/query/full"
	const query = `{"query":"Should I sell my bread to the cafe next door?"}`

	paid, err := client.Pay(ctx, url, query, x402client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if paid.Status != http.StatusOK {
		t.Fatalf("the paid request answered %d %s", paid.Status, paid.Body)
	}
	var settle x402.SettleResponse
	if err := json.Unmarshal(paid.PaymentResponse, &settle); err != nil || !settle.Success || settle.Transaction == "" ||
		settle.Network != x402.NetworkBaseSepolia || !x402.SameAddress(settle.Payer, paid.Payer) {
		t.Fatalf("PAYMENT-RESPONSE %s (%v), payer %s", paid.PaymentResponse, err, paid.Payer)
	}
	var verdict struct {
		Status    string          `json:"status"`
		OrderID   string          `json:"order_id"`
		Tier      oracle.Tier     `json:"tier"`
		Verdict   json.RawMessage `json:"verdict"`
		ResultURL string          `json:"result_url"`
	}
	if err := json.Unmarshal(paid.Body, &verdict); err != nil {
		t.Fatal(err)
	}
	if verdict.Status != "ready" || verdict.Tier != oracle.TierFull || !oracle.IsAgentOrder(verdict.OrderID) {
		t.Fatalf("answer %s", paid.Body)
	}
	if _, err := oracle.ParseAnalysis(oracle.TierFull, verdict.Verdict); err != nil {
		t.Fatalf("the verdict %s: %v", verdict.Verdict, err)
	}
	orders := store.NewOrders(awsenv.NewTables(s.AWS), s.Resources.Ref("OrdersTable"), nil)
	order, found, err := orders.Get(ctx, verdict.OrderID)
	if err != nil || !found || order.Status != oracle.StatusReady || order.Source != oracle.SourceX402 || order.Agent == nil ||
		order.Agent.Transaction != settle.Transaction || !x402.SameAddress(order.Agent.Payer, paid.Payer) {
		t.Fatalf("order %+v %v %v", order, found, err)
	}

	// The discovery documents, an unpaid ask and the poll, each checked
	// against the OpenAPI document the stack serves.
	checker := apiChecker(t, s)
	api := checker.Client()
	status, doc, _ := send(t, api, mustRequest(t, "GET", s.APIURL+"/.well-known/x402"))
	var wk struct {
		Version   int      `json:"version"`
		Resources []string `json:"resources"`
	}
	if err := json.Unmarshal(doc, &wk); status != http.StatusOK || err != nil || wk.Version != 1 || !slices.Contains(wk.Resources, url) {
		t.Errorf("GET /.well-known/x402: %d %s", status, doc)
	}
	if status, _, hdr := send(t, api, mustRequest(t, "GET", s.APIURL+"/llms.txt")); status != http.StatusOK || hdr.Get("Content-Type") != "text/plain; charset=utf-8" {
		t.Errorf("GET /llms.txt: %d %v", status, hdr)
	}
	if status, body, _ := send(t, api, postJSON(t, url, query, "")); status != http.StatusPaymentRequired {
		t.Errorf("an unpaid ask: %d %s", status, body)
	}
	if status, body, _ := send(t, api, mustRequest(t, "GET", s.APIURL+"/x402/result/"+verdict.OrderID)); status != http.StatusOK {
		t.Errorf("the poll: %d %s", status, body)
	}
	checkedAll(t, checker, "GET /.well-known/x402 200", "GET /llms.txt 200", "POST /x402/query/full 402", "GET /x402/result/{id} 200")

	// The same header again: refused, nothing settled.
	replay, err := client.Pay(ctx, url, query, x402client.Options{Replay: paid.PaymentSignature})
	if err != nil {
		t.Fatal(err)
	}
	var refused x402.PaymentRequired
	if replay.Status != http.StatusPaymentRequired || json.Unmarshal(replay.PaymentRequired, &refused) != nil || refused.Error != x402.ReasonNonceAlreadyUsed {
		t.Fatalf("the replay answered %d %s %s", replay.Status, replay.PaymentRequired, replay.Body)
	}

	// A new payment sent twice at once: one verdict.
	twice, err := client.Pay(ctx, url, query, x402client.Options{Twice: true})
	if err != nil {
		t.Fatal(err)
	}
	codes := map[int]int{}
	for _, a := range twice.Answers {
		codes[a.Status]++
	}
	if len(twice.Answers) != 2 || codes[http.StatusPaymentRequired] != 1 || codes[http.StatusOK]+codes[http.StatusAccepted] != 1 {
		t.Fatalf("the twice-sent payment: %+v", codes)
	}

	settles := 0
	for _, c := range facilitatorCalls(t, s.FacilitatorURL) {
		if c.Path == "/settle" {
			settles++
		}
	}
	if settles != 2 {
		t.Fatalf("%d settlements, want 2 (one per authorization)", settles)
	}
	statuses := map[audit.Status]int{}
	if !testkit.Eventually(30*time.Second, 200*time.Millisecond, func() bool {
		statuses = map[audit.Status]int{}
		for _, r := range testkit.AuditRecords(t, awsenv.S3(s.AWS), s.Resources.Ref("AuditBucket")) {
			if r.Source == audit.SourceX402 {
				statuses[r.Status]++
			}
		}
		return statuses[audit.StatusOK] == 2 && statuses[audit.StatusReplay] == 2
	}) {
		t.Fatalf("x402 records by status %v, want 2 OK and 2 REPLAY", statuses)
	}
	agentOrders := 0
	for _, item := range testkit.TableItems(t, s.AWS, s.Resources.Ref("OrdersTable")) {
		if strings.Contains(item, `"x402_test_`) {
			agentOrders++
		}
	}
	if agentOrders != 2 {
		t.Fatalf("%d agent orders, want 2", agentOrders)
	}
	anAgentFindsAndBuys(t, ctx, s, client)
}

// facilitatorCall is one call the fake facilitator received.
type facilitatorCall struct {
	Path string `json:"path"`
}

func facilitatorCalls(t *testing.T, base string) []facilitatorCall {
	t.Helper()
	resp, err := http.Get(base + "/_calls")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var calls []facilitatorCall
	if err := json.NewDecoder(resp.Body).Decode(&calls); err != nil {
		t.Fatal(err)
	}
	return calls
}
