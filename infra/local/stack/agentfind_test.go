package stack_test

import (
	"context"
	"encoding/json"
	"maps"
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
	"42sisters.ai/oracle/shared/x402"
)

// anAgentFindsAndBuys is issue 39's acceptance, run on the stack of
// TestAnAgentPaysWithTheOfficialClient: an agent that knows only the
// domain reads /.well-known/x402 and /openapi.json, finds the three
// offers with their prices and input schemas, probes each route for its
// 402 (valid under the official @x402/extensions package), buys over HTTP
// with the official x402 client and over MCP with the official MCP client,
// and retries each purchase under its payment identifier (once, then ten
// at once), paying once for each; the official MCP conformance suite
// passes every scenario that applies.
func anAgentFindsAndBuys(t *testing.T, ctx context.Context, s *stack.Stack, client *x402client.Client) {
	t.Helper()
	settlesBefore := settlesAt(t, s)
	checker := apiChecker(t, s)
	api := checker.Client()

	// Discovery from the domain alone.
	status, doc, _ := send(t, api, mustRequest(t, "GET", s.APIURL+"/.well-known/x402"))
	var wk struct {
		Resources []string `json:"resources"`
		MCP       struct {
			URL   string   `json:"url"`
			Tools []string `json:"tools"`
		} `json:"mcp"`
	}
	if err := json.Unmarshal(doc, &wk); status != http.StatusOK || err != nil || len(wk.Resources) != 3 || wk.MCP.URL != s.APIURL+"/mcp" {
		t.Fatalf("GET /.well-known/x402: %d %s", status, doc)
	}
	_, spec, _ := send(t, api, mustRequest(t, "GET", s.APIURL+"/openapi.json"))
	var openapi struct {
		Paths map[string]map[string]struct {
			PaymentInfo *struct {
				Price struct {
					Amount string `json:"amount"`
				} `json:"price"`
			} `json:"x-payment-info"`
			RequestBody struct {
				Content map[string]struct {
					Schema json.RawMessage `json:"schema"`
				} `json:"content"`
			} `json:"requestBody"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(spec, &openapi); err != nil {
		t.Fatal(err)
	}
	prices := map[string]string{}
	for path, ops := range openapi.Paths {
		if op, ok := ops["post"]; ok && op.PaymentInfo != nil && len(op.RequestBody.Content["application/json"].Schema) > 0 {
			prices[path] = op.PaymentInfo.Price.Amount
		}
	}
	if want := map[string]string{"/x402/query": "0.05", "/x402/query/full": "0.25", "/x402/query/premium": "1.00"}; !maps.Equal(prices, want) {
		t.Fatalf("the paid operations /openapi.json lists: %v, want %v", prices, want)
	}
	for _, resource := range wk.Resources {
		v, err := client.ValidateURL(ctx, resource)
		if err != nil {
			t.Fatal(err)
		}
		if err := v.Err(); err != nil || v.Status != http.StatusPaymentRequired {
			t.Errorf("%s's probe (%d) under @x402/extensions: %v", resource, v.Status, err)
		}
	}

	// Over HTTP: a retry under the payment identifier, then ten at once.
	url := s.APIURL + "/x402/query"
	for _, c := range []struct {
		id, query string
		o         x402client.Options
	}{
		{"pay_e2e_retry_0123456789", `{"query":"Should I bake rye as well?"}`, x402client.Options{Retries: 1}},
		{"pay_e2e_ten_0123456789ab", `{"query":"Should I open on Sundays?"}`, x402client.Options{Retries: 10, Concurrent: true}},
	} {
		c.o.PaymentID = c.id
		r, err := client.Pay(ctx, url, c.query, c.o)
		if err != nil {
			t.Fatal(err)
		}
		if r.PaymentID != c.id || len(r.Answers) != c.o.Retries+1 {
			t.Fatalf("%s: id %q, %d answers", c.id, r.PaymentID, len(r.Answers))
		}
		orders := map[string]int{}
		for _, a := range r.Answers {
			var body struct {
				OrderID string `json:"order_id"`
			}
			if (a.Status != http.StatusOK && a.Status != http.StatusAccepted) || json.Unmarshal(a.Body, &body) != nil {
				t.Fatalf("%s: an answer %d %s", c.id, a.Status, a.Body)
			}
			orders[body.OrderID]++
		}
		if len(orders) != 1 {
			t.Fatalf("%s: answers name orders %v", c.id, orders)
		}
	}

	// Over MCP, with the official MCP client and a retry.
	m, err := client.MCP(ctx, s.APIURL+"/mcp", "oracle_quick_take", map[string]string{"query": "Should I sell pastries too?"},
		x402client.MCPOptions{PaymentID: "pay_e2e_mcp_0123456789ab", Retries: 1})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range m.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"oracle_full_breakdown", "oracle_quick_take", "oracle_result", "oracle_strategy_session"}) {
		t.Fatalf("tools %v", names)
	}
	if m.Transport == nil || !m.Transport.Valid {
		t.Fatalf("the unpaid call is not x402's MCP payment-required result: %+v", m.Transport)
	}
	v, err := client.ValidateJSON(ctx, m.PaymentRequired)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Err(); err != nil {
		t.Errorf("the MCP 402 under @x402/extensions: %v", err)
	}
	var settled x402.SettleResponse
	if m.Paid == nil || m.Paid.IsError || json.Unmarshal(m.PaymentResponse, &settled) != nil || !settled.Success {
		t.Fatalf("the paid call %+v, payment-response %s", m.Paid, m.PaymentResponse)
	}
	if len(m.Retries) != 1 || m.Retries[0].IsError || m.Retries[0].Error != "" ||
		!strings.Contains(string(m.Retries[0].StructuredContent), orderIn(t, m.Paid.StructuredContent)) {
		t.Fatalf("the retry %+v, want the paid call's order", m.Retries)
	}

	c, err := client.Conformance(ctx, s.APIURL+"/mcp")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Err(); err != nil {
		t.Errorf("the MCP conformance suite: %v", err)
	}
	applied := 0
	for _, sc := range c.Scenarios {
		if sc.Applies && sc.Passed {
			applied++
		}
	}
	t.Logf("the MCP conformance suite: %d scenarios that apply passed, of %d run", applied, len(c.Scenarios))

	// Three purchases, each paid once whatever its retries.
	if n := settlesAt(t, s) - settlesBefore; n != 3 {
		t.Fatalf("%d settlements for three purchases and their retries", n)
	}
	retries, mcpOK := 0, 0
	if !testkit.Eventually(30*time.Second, 200*time.Millisecond, func() bool {
		retries, mcpOK = 0, 0
		for _, r := range testkit.AuditRecords(t, awsenv.S3(s.AWS), s.Resources.Ref("AuditBucket")) {
			switch {
			case r.Source == audit.SourceX402 && r.Status == audit.StatusRetry:
				retries++
			case r.Source == audit.SourceX402 && r.Status == audit.StatusOK && r.Endpoint == "mcp:oracle_quick_take" && r.PaymentID != "":
				mcpOK++
			}
		}
		return retries == 3 && mcpOK == 1
	}) {
		t.Fatalf("%d RETRY records (want one per purchase and hour: 3), %d settled over MCP", retries, mcpOK)
	}
}

func settlesAt(t *testing.T, s *stack.Stack) (n int) {
	for _, c := range facilitatorCalls(t, s.FacilitatorURL) {
		if c.Path == "/settle" {
			n++
		}
	}
	return n
}

// orderIn is the order_id a tool's structured answer names.
func orderIn(t *testing.T, structured json.RawMessage) string {
	t.Helper()
	var a struct {
		OrderID string `json:"order_id"`
	}
	if err := json.Unmarshal(structured, &a); err != nil || a.OrderID == "" {
		t.Fatalf("no order in %s", structured)
	}
	return a.OrderID
}
