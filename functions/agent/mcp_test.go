package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"42sisters.ai/oracle/infra/fakes/fakefacilitator"
	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/httpapi"
	"42sisters.ai/oracle/shared/obs"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/store"
	"42sisters.ai/oracle/shared/x402"
)

// The protocol versions a client may speak: go-sdk 1.8.0's latest (no
// initialize: server/discover, the Mcp-Method headers, the version in
// _meta) and the handshake's, the official TypeScript SDK's 2025-11-25
// first.
var mcpVersions = []string{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"}

// mcpGateway is API Gateway in front of the agent function, over real
// HTTP: each request becomes the payload 2.0 event as the local stack's
// gateway makes it (headers in lower case, one value each), handled within
// a Lambda's 30 s deadline.
func (e *env) mcpGateway() *httptest.Server {
	var seq atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		ev := httpapi.Request{RawPath: r.URL.Path, Body: string(b), Headers: map[string]string{}}
		for name, values := range r.Header {
			ev.Headers[strings.ToLower(name)] = strings.Join(values, ",")
		}
		ev.Headers["host"] = r.Host
		ev.RequestContext.HTTP.Method = r.Method
		ev.RequestContext.RequestID = fmt.Sprintf("mcp-req-%d", seq.Add(1))
		ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
		defer cancel()
		resp, err := e.h.Handle(ctx, ev)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		for name, value := range resp.Headers {
			w.Header().Set(name, value)
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.WriteString(w, resp.Body)
	}))
	e.tb.Cleanup(srv.Close)
	return srv
}

// mcpSession is the go-sdk's client connected to the MCP server at
// version.
func (e *env) mcpSession(srv *httptest.Server, version string) *mcp.ClientSession {
	e.tb.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "agent-test", Version: "1.0.0"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: srv.URL + mcpPath, HTTPClient: srv.Client()},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		e.tb.Fatalf("connecting at %s: %v", version, err)
	}
	e.tb.Cleanup(func() { _ = cs.Close() })
	return cs
}

// call calls a tool, with payment (a PaymentPayload) in _meta when given.
func (e *env) call(cs *mcp.ClientSession, tool string, args any, payment any) *mcp.CallToolResult {
	e.tb.Helper()
	p := &mcp.CallToolParams{Name: tool, Arguments: args}
	if payment != nil {
		p.Meta = mcp.Meta{"x402/payment": payment}
	}
	res, err := cs.CallTool(context.Background(), p)
	if err != nil {
		e.tb.Fatalf("calling %s: %v", tool, err)
	}
	return res
}

var bakery = map[string]any{"query": "Should I open a bakery on my street?"}

// paymentRequired reads an unpaid call's result as x402's MCP transport
// has it: isError, the PaymentRequired as structuredContent and, the same
// JSON, as content[0].text.
func paymentRequired(t *testing.T, res *mcp.CallToolResult) x402.PaymentRequired {
	t.Helper()
	if !res.IsError || res.StructuredContent == nil || len(res.Content) != 1 || !textIsStructured(t, res) {
		t.Fatalf("not a payment-required result: %s", mcpJSON(t, res))
	}
	var pr x402.PaymentRequired
	if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &pr); err != nil {
		t.Fatal(err)
	}
	if pr.X402Version != x402.Version || len(pr.Accepts) == 0 {
		t.Fatalf("PaymentRequired %+v", pr)
	}
	return pr
}

// textIsStructured reports whether content[0] is text holding the JSON of
// structuredContent.
func textIsStructured(t *testing.T, res *mcp.CallToolResult) bool {
	t.Helper()
	text, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		return false
	}
	var fromText, fromStructured any
	if err := json.Unmarshal([]byte(text.Text), &fromText); err != nil {
		return false
	}
	_ = json.Unmarshal([]byte(mcpJSON(t, res.StructuredContent)), &fromStructured)
	return reflect.DeepEqual(fromText, fromStructured)
}

func mcpJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// payload is key's payment of req, changed by mutate, as the JSON object
// _meta carries.
func (e *env) payload(key *secp256k1.PrivateKey, req x402.PaymentRequirements, mutate func(*x402.PaymentPayload)) map[string]any {
	e.tb.Helper()
	h := e.sign(key, req, mutate)
	p, err := x402.DecodePaymentSignature(h)
	if err != nil {
		e.tb.Fatal(err)
	}
	var out map[string]any
	b, _ := json.Marshal(p)
	_ = json.Unmarshal(b, &out)
	return out
}

// settlement is the result's _meta["x402/payment-response"].
func settlement(t *testing.T, res *mcp.CallToolResult) x402.SettleResponse {
	t.Helper()
	v, ok := res.Meta["x402/payment-response"]
	if !ok {
		t.Fatalf("no x402/payment-response in %s", mcpJSON(t, res))
	}
	var s x402.SettleResponse
	if err := json.Unmarshal([]byte(mcpJSON(t, v)), &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// outputSchemas are the tools' output schemas, as the client listed them.
func outputSchemas(t *testing.T, cs *mcp.ClientSession) map[string]any {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]any{}
	for _, tool := range res.Tools {
		out[tool.Name] = tool.OutputSchema
	}
	return out
}

// TestTheMCPServerListsItsTools: at every protocol version (the new one's
// server/discover and the handshake's initialize), the server answers at
// that version and lists the three paid tools and oracle_result, each
// with its input schema (the query's limits, or the order_id), an output
// schema, a title, a description with the price, and annotations that say
// what is read-only and what costs money.
func TestTheMCPServerListsItsTools(t *testing.T) {
	e := newEnv(t)
	srv := e.mcpGateway()
	for _, v := range mcpVersions {
		t.Run(v, func(t *testing.T) {
			cs := e.mcpSession(srv, v)
			if got := cs.InitializeResult().ProtocolVersion; got != v {
				t.Fatalf("negotiated %s, want %s", got, v)
			}
			if info := cs.InitializeResult().ServerInfo; info == nil || info.Name != "oracle" {
				t.Fatalf("server info %+v", info)
			}
			res, err := cs.ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]bool{}
			for _, tool := range res.Tools {
				seen[tool.Name] = true
				a := tool.Annotations
				if tool.Title == "" || a == nil || tool.OutputSchema == nil {
					t.Fatalf("%s: title %q, annotations %+v, output schema %v", tool.Name, tool.Title, a, tool.OutputSchema)
				}
				if tool.Name == ResultTool {
					if !a.ReadOnlyHint || !a.IdempotentHint || a.OpenWorldHint == nil || *a.OpenWorldHint || !strings.Contains(tool.Description, "Free") {
						t.Errorf("%s: annotations %+v, description %q: want read-only, idempotent, closed, free", tool.Name, a, tool.Description)
					}
					continue
				}
				tier, ok := MCPTools[tool.Name]
				if !ok {
					t.Fatalf("an unknown tool %q", tool.Name)
				}
				if mcpJSON(t, tool.InputSchema) != mcpJSON(t, paidBodySchema()) {
					t.Errorf("%s: input schema %s", tool.Name, mcpJSON(t, tool.InputSchema))
				}
				price := oracle.FormatUSDC(tier.PriceUSDCAtomic()) + " USDC"
				if a.ReadOnlyHint || a.IdempotentHint || a.DestructiveHint == nil || *a.DestructiveHint || a.OpenWorldHint == nil || !*a.OpenWorldHint ||
					!strings.Contains(tool.Description, price) || !strings.Contains(a.Title, price) {
					t.Errorf("%s: annotations %+v, description %q: want a paid, open, additive call costing %s", tool.Name, a, tool.Description, price)
				}
			}
			if len(seen) != 4 || !seen["oracle_quick_take"] || !seen["oracle_full_breakdown"] || !seen["oracle_strategy_session"] || !seen[ResultTool] {
				t.Fatalf("tools %v", seen)
			}
		})
	}
}

// TestAnUnpaidToolCallIsX402sPaymentRequired: each paid tool called
// without a payment (with its arguments, or none as a catalogue probes)
// answers x402's MCP form of the 402: isError, the PaymentRequired in
// structuredContent and as content[0].text, offering the tier's price for
// the MCP server's address, with the bazaar's MCP description (valid
// against its own schema) and the payment identifier; the result
// validates against the tool's output schema, as the TypeScript SDK checks
// it. Nothing is recorded, claimed or asked of the facilitator.
func TestAnUnpaidToolCallIsX402sPaymentRequired(t *testing.T) {
	e := newEnv(t)
	srv := e.mcpGateway()
	for _, v := range []string{"2026-07-28", "2025-11-25"} {
		cs := e.mcpSession(srv, v)
		schemas := outputSchemas(t, cs)
		for name, tier := range MCPTools {
			for _, args := range []any{bakery, nil, map[string]any{}} {
				res := e.call(cs, name, args, nil)
				pr := paymentRequired(t, res)
				validateAgainst(t, schemas[name], res.StructuredContent)
				if pr.Resource == nil || pr.Resource.URL != "https://oracle.example/mcp" || pr.Accepts[0].Amount != fmt.Sprint(tier.PriceUSDCAtomic()) ||
					pr.Accepts[0].PayTo != payTo || pr.Accepts[0].Network != x402.NetworkBaseSepolia {
					t.Fatalf("%s at %s: %+v", name, v, pr)
				}
				if _, ok := pr.Extensions[x402.ExtensionPaymentIdentifier]; !ok {
					t.Fatalf("%s: no payment-identifier in %v", name, pr.Extensions)
				}
				var bazaar x402.Extension
				if err := json.Unmarshal([]byte(mcpJSON(t, pr.Extensions[x402.ExtensionBazaar])), &bazaar); err != nil {
					t.Fatal(err)
				}
				validateAgainst(t, bazaar.Schema, bazaar.Info)
				input, _ := bazaar.Info.(map[string]any)["input"].(map[string]any)
				if input["type"] != "mcp" || input["tool"] != name || input["toolName"] != name || input["transport"] != "streamable-http" ||
					mcpJSON(t, input["inputSchema"]) != mcpJSON(t, paidBodySchema()) {
					t.Fatalf("%s: bazaar input %v", name, input)
				}
				validateAgainst(t, input["inputSchema"], input["example"])
			}
		}
	}
	if n := len(e.fac.Calls()); n != 0 || len(e.records()) != 0 || e.agentOrders() != 0 {
		t.Fatalf("%d facilitator calls, records %+v, %d orders for unpaid calls", n, e.records(), e.agentOrders())
	}
}

// TestABadQueryOverMCPIsRefusedBeforeAnyPayment: arguments that are no
// query are a tool error saying why, paid or not: never a 402, nothing
// recorded or asked of the facilitator.
func TestABadQueryOverMCPIsRefusedBeforeAnyPayment(t *testing.T) {
	e := newEnv(t)
	cs := e.mcpSession(e.mcpGateway(), "2025-11-25")
	req := paymentRequired(t, e.call(cs, "oracle_quick_take", bakery, nil)).Accepts[0]
	for name, args := range map[string]any{
		"empty":        map[string]any{"query": ""},
		"blank":        map[string]any{"query": "  \u200b "},
		"missing":      map[string]any{"question": "Should I?"},
		"not a string": map[string]any{"query": 42},
		"too long":     map[string]any{"query": strings.Repeat("idea ", oracle.MaxQueryUnits)},
	} {
		for _, pay := range []any{nil, e.payload(wallet(t), req, nil)} {
			res := e.call(cs, "oracle_quick_take", args, pay)
			if !res.IsError || res.StructuredContent != nil || len(res.Content) != 1 {
				t.Errorf("%s (paid %v): %s", name, pay != nil, mcpJSON(t, res))
			}
		}
	}
	if n := len(e.fac.Calls()); n != 0 || len(e.records()) != 0 {
		t.Fatalf("%d facilitator calls, records %+v for bad queries", n, e.records())
	}
}

// TestAPaidToolCallIsSettledOnceAndAnswered: a payment in
// _meta["x402/payment"] goes through the HTTP rail's pipeline: settled
// once, the order PAID under the tool's name, one OK record whose endpoint
// names the tool; the result is the verdict when it is ready in time, else
// the order_id to read it with oracle_result, each in structuredContent
// and as text, valid against the tool's output schema, with the settlement
// in _meta["x402/payment-response"].
func TestAPaidToolCallIsSettledOnceAndAnswered(t *testing.T) {
	for _, ready := range []bool{true, false} {
		t.Run(fmt.Sprintf("ready in time %v", ready), func(t *testing.T) {
			e := newEnv(t)
			if ready {
				e.h.Wait = 20 * time.Second
				var once sync.Once
				e.h.Sleep = func(ctx context.Context, d time.Duration) error {
					once.Do(func() { storeVerdict(e, oracle.TierQuick) })
					e.clock.Add(d)
					return nil
				}
			}
			cs := e.mcpSession(e.mcpGateway(), "2026-07-28")
			tool := "oracle_quick_take"
			req := paymentRequired(t, e.call(cs, tool, bakery, nil)).Accepts[0]
			key := wallet(t)
			res := e.call(cs, tool, bakery, e.payload(key, req, nil))
			if res.IsError || len(res.Content) != 1 || !textIsStructured(t, res) {
				t.Fatalf("result %s", mcpJSON(t, res))
			}
			validateAgainst(t, outputSchemas(t, cs)[tool], res.StructuredContent)
			s := settlement(t, res)
			if !s.Success || s.Transaction == "" || s.Network != x402.NetworkBaseSepolia || !x402.SameAddress(s.Payer, x402.AddressOf(key.PubKey())) {
				t.Fatalf("payment response %+v", s)
			}
			var answer struct {
				Status  string          `json:"status"`
				OrderID string          `json:"order_id"`
				Message string          `json:"message"`
				Verdict json.RawMessage `json:"verdict"`
			}
			_ = json.Unmarshal([]byte(mcpJSON(t, res.StructuredContent)), &answer)
			switch {
			case ready && (answer.Status != "ready" || len(answer.Verdict) == 0):
				t.Fatalf("answer %+v, want the verdict", answer)
			case !ready && (answer.Status != "pending" || !strings.Contains(answer.Message, ResultTool)):
				t.Fatalf("answer %+v, want pending with oracle_result named", answer)
			}
			if e.settles() != 1 {
				t.Fatalf("%d settlements", e.settles())
			}
			o, found, err := e.orders.Get(context.Background(), answer.OrderID)
			if err != nil || !found || o.Agent == nil || o.Agent.Endpoint != "mcp:"+tool || o.Agent.Transaction != s.Transaction || o.Tier != oracle.TierQuick {
				t.Fatalf("order %+v %v %v", o, found, err)
			}
			recs := e.records()
			if len(recs) != 1 || recs[0].Status != audit.StatusOK || recs[0].Endpoint != "mcp:"+tool || recs[0].SessionID != answer.OrderID ||
				recs[0].TxHash != s.Transaction || !strings.HasPrefix(recs[0].QueryHash, audit.HashPrefix) {
				t.Fatalf("x402 records %+v", recs)
			}
		})
	}
}

// TestARefusedPaymentOverMCPIsA402Result: a payment refused (by the local
// check, the facilitator's /verify or /settle) is the 402 result again,
// its error the refusal's reason, with nothing settled; one whose
// settlement was refused carries the facilitator's answer.
func TestARefusedPaymentOverMCPIsA402Result(t *testing.T) {
	for name, c := range map[string]struct {
		mutate  func(*x402.PaymentPayload)
		control *fakefacilitator.Control
		reason  string
		audit   audit.Status
	}{
		"tampered amount": {mutate: func(p *x402.PaymentPayload) { p.Payload.Authorization.Value = "1" }, reason: x402.ReasonValueMismatch, audit: audit.StatusInvalid},
		"without funds":   {control: &fakefacilitator.Control{Faucet: "0"}, audit: audit.StatusVerifyFailed},
		"settle refused":  {control: &fakefacilitator.Control{Settle: fakefacilitator.SettleRefuse}, audit: audit.StatusSettleFailed},
		"cheaper tier's":  {mutate: func(p *x402.PaymentPayload) { p.Accepted.Amount, p.Payload.Authorization.Value = "50000", "50000" }, audit: audit.StatusInvalid},
		"signed by another": {mutate: func(p *x402.PaymentPayload) {
			p.Payload.Authorization.From = "0x857b06519E91e3A54538791bDbb0E22373e36b66"
		}, reason: x402.ReasonInvalidSignature, audit: audit.StatusInvalid},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			cs := e.mcpSession(e.mcpGateway(), "2025-11-25")
			tool := "oracle_strategy_session"
			req := paymentRequired(t, e.call(cs, tool, bakery, nil)).Accepts[0]
			if c.control != nil {
				if _, err := e.fac.Apply(*c.control); err != nil {
					t.Fatal(err)
				}
			}
			before := e.fac.Balance(payTo)
			res := e.call(cs, tool, bakery, e.payload(wallet(t), req, c.mutate))
			pr := paymentRequired(t, res)
			if pr.Error == "" || (c.reason != "" && pr.Error != c.reason) {
				t.Fatalf("error %q, want %q", pr.Error, c.reason)
			}
			if c.audit == audit.StatusSettleFailed {
				if s := settlement(t, res); s.Success {
					t.Fatalf("payment response %+v", s)
				}
			}
			if got := e.fac.Balance(payTo); got != before {
				t.Fatalf("the wallet went from %s to %s", before, got)
			}
			if recs := e.records(); len(recs) != 1 || recs[0].Status != c.audit || recs[0].Endpoint != "mcp:"+tool {
				t.Fatalf("records %+v, want one %s", recs, c.audit)
			}
		})
	}
}

// TestAPaymentThatIsNoPaymentOverMCPIsJunk: _meta["x402/payment"] that is
// no PaymentPayload (not an object, or larger than the header's bound) is
// answered as an undecodable header is: the 402 result with
// invalid_payload, counted, nothing recorded, claimed or asked.
func TestAPaymentThatIsNoPaymentOverMCPIsJunk(t *testing.T) {
	e := newEnv(t)
	cs := e.mcpSession(e.mcpGateway(), "2026-07-28")
	req := paymentRequired(t, e.call(cs, "oracle_quick_take", bakery, nil)).Accepts[0]
	big := e.payload(wallet(t), req, nil)
	big["padding"] = strings.Repeat("x", maxPaymentJSON)
	junk := map[string]any{"a string": "not a payment", "a number": 42, "a list": []any{1, 2}, "too large": big}
	for name, payment := range junk {
		pr := paymentRequired(t, e.call(cs, "oracle_quick_take", bakery, payment))
		if pr.Error != x402.ReasonInvalidPayload {
			t.Errorf("%s: error %q", name, pr.Error)
		}
	}
	if got := e.junk()[store.JunkUndecodable]; got != int64(len(junk)) {
		t.Fatalf("%d undecodable counted, want %d", got, len(junk))
	}
	if len(e.records()) != 0 || len(e.fac.Calls()) != 0 || e.claims() != 0 || e.agentOrders() != 0 {
		t.Fatalf("records %+v, %d facilitator calls, %d claims, %d orders", e.records(), len(e.fac.Calls()), e.claims(), e.agentOrders())
	}
}

// TestARetryOverMCPUnderItsIdentifierPaysOnce: the same payment sent again
// under its payment identifier (an agent that lost the answer) gets the
// same answer with the same settlement, and nothing is settled again.
func TestARetryOverMCPUnderItsIdentifierPaysOnce(t *testing.T) {
	e := newEnv(t)
	cs := e.mcpSession(e.mcpGateway(), "2025-11-25")
	tool := "oracle_quick_take"
	req := paymentRequired(t, e.call(cs, tool, bakery, nil)).Accepts[0]
	payment := e.payload(wallet(t), req, func(p *x402.PaymentPayload) { *p = x402.WithPaymentIdentifier(*p, "mcp_retry_0123456789abcdef") })
	first := e.call(cs, tool, bakery, payment)
	again := e.call(cs, tool, bakery, payment)
	if first.IsError || again.IsError || mcpJSON(t, first.StructuredContent) != mcpJSON(t, again.StructuredContent) {
		t.Fatalf("first %s, again %s: want the same answer", mcpJSON(t, first), mcpJSON(t, again))
	}
	if a, b := settlement(t, first), settlement(t, again); a.Transaction == "" || a.Transaction != b.Transaction {
		t.Fatalf("settlements %+v and %+v", a, b)
	}
	if e.settles() != 1 || e.agentOrders() != 1 {
		t.Fatalf("%d settlements, %d orders", e.settles(), e.agentOrders())
	}
	var statuses []audit.Status
	for _, r := range e.records() {
		statuses = append(statuses, r.Status)
		if r.Endpoint != "mcp:"+tool || r.PaymentID != "mcp_retry_0123456789abcdef" {
			t.Errorf("record %+v", r)
		}
	}
	if len(statuses) != 2 {
		t.Fatalf("records %v, want the payment's and the retry's", statuses)
	}
}

// TestOracleResultReadsAnOrder: oracle_result answers the verdict of a
// ready order (and records its serving), the state of one still being
// prepared, and an error for an unknown or malformed order_id; every
// answer validates against its output schema.
func TestOracleResultReadsAnOrder(t *testing.T) {
	e := newEnv(t)
	cs := e.mcpSession(e.mcpGateway(), "2026-07-28")
	schema := outputSchemas(t, cs)[ResultTool]
	req := paymentRequired(t, e.call(cs, "oracle_quick_take", bakery, nil)).Accepts[0]
	paid := e.call(cs, "oracle_quick_take", bakery, e.payload(wallet(t), req, nil))
	var pending pendingAnswer
	_ = json.Unmarshal([]byte(mcpJSON(t, paid.StructuredContent)), &pending)
	read := func() (*mcp.CallToolResult, map[string]any) {
		res := e.call(cs, ResultTool, map[string]any{"order_id": pending.OrderID}, nil)
		var out map[string]any
		_ = json.Unmarshal([]byte(mcpJSON(t, res.StructuredContent)), &out)
		if res.IsError {
			t.Fatalf("oracle_result: %s", mcpJSON(t, res))
		}
		validateAgainst(t, schema, res.StructuredContent)
		return res, out
	}
	if _, out := read(); out["status"] != "pending" || out["order_id"] != pending.OrderID || out["poll_url"] != "https://oracle.example/x402/result/"+pending.OrderID {
		t.Fatalf("before the verdict: %v", out)
	}
	storeVerdict(e, oracle.TierQuick)
	served := len(testkit.AuditRecords(t, e.s3, e.f.Ref("AuditBucket")))
	if _, out := read(); out["status"] != "ready" || out["order_id"] != pending.OrderID || out["verdict"] == nil {
		t.Fatalf("after the verdict: %v", out)
	}
	if got := len(testkit.AuditRecords(t, e.s3, e.f.Ref("AuditBucket"))); got != served+1 {
		t.Fatalf("%d audit records after serving, want %d", got, served+1)
	}
	for name, id := range map[string]any{"unknown": "x402_test_" + strings.Repeat("a", 32), "malformed": "cs_test_a1", "a number": 7} {
		res := e.call(cs, ResultTool, map[string]any{"order_id": id}, nil)
		if !res.IsError || res.StructuredContent != nil {
			t.Errorf("%s: %s", name, mcpJSON(t, res))
		}
	}
}

// TestTheMCPTransportRefusesWhatItDoesNotServe: GET and DELETE are 405
// with Allow: POST (a stateless server has no stream and no session); a
// browser's request from another site is 403 before anything is read; the
// site's own origin, and no origin (a program), are served.
func TestTheMCPTransportRefusesWhatItDoesNotServe(t *testing.T) {
	e := newEnv(t)
	srv := e.mcpGateway()
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`
	for _, c := range []struct {
		method, origin string
		status         int
	}{
		{http.MethodGet, "", http.StatusMethodNotAllowed},
		{http.MethodDelete, "", http.StatusMethodNotAllowed},
		{http.MethodPost, "https://evil.example", http.StatusForbidden},
		{http.MethodPost, "http://oracle.example", http.StatusForbidden},
		{http.MethodGet, "https://evil.example", http.StatusForbidden},
		{http.MethodPost, "https://oracle.example", http.StatusOK},
		{http.MethodPost, "", http.StatusOK},
	} {
		r, _ := http.NewRequest(c.method, srv.URL+mcpPath, strings.NewReader(list))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		r.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		if c.origin != "" {
			r.Header.Set("Origin", c.origin)
		}
		resp, err := srv.Client().Do(r)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status {
			t.Errorf("%s from %q: %d %s, want %d", c.method, c.origin, resp.StatusCode, b, c.status)
		}
		if c.status == http.StatusMethodNotAllowed && resp.Header.Get("Allow") != "POST" {
			t.Errorf("%s: Allow %q", c.method, resp.Header.Get("Allow"))
		}
		if c.status == http.StatusOK && (!strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") || !strings.Contains(string(b), ResultTool)) {
			t.Errorf("tools/list from %q: %s %s", c.origin, resp.Header.Get("Content-Type"), b)
		}
	}
}

// TestALocalSiteIsItsOwnOriginByAnyLoopbackName: on the local stack
// (BASE_URL http://localhost:3000) a client on 127.0.0.1 of the same port
// is the site; another port or scheme is not.
func TestALocalSiteIsItsOwnOriginByAnyLoopbackName(t *testing.T) {
	h := &Handler{BaseURL: "http://localhost:3000"}
	for origin, own := range map[string]bool{
		"http://localhost:3000": true, "http://127.0.0.1:3000": true, "http://[::1]:3000": true,
		"http://localhost:3001": false, "https://localhost:3000": false, "http://evil.example:3000": false, "null": false,
	} {
		if got := h.ownOrigin(origin); got != own {
			t.Errorf("%s: own %v, want %v", origin, got, own)
		}
	}
	if (&Handler{BaseURL: "https://oracle.example"}).ownOrigin("http://127.0.0.1") {
		t.Error("a loopback origin is a deployed site's own")
	}
}

// TestAPaidToolWaitsWithinTheLambdasDeadline: the SDK gives a tool a
// context without the request's deadline; the tool puts it back, so that
// the wait for the verdict (and the facilitator's calls) end before the
// Lambda does.
func TestAPaidToolWaitsWithinTheLambdasDeadline(t *testing.T) {
	e := newEnv(t)
	e.h.Wait = 20 * time.Second
	e.h.Sleep = func(ctx context.Context, d time.Duration) error {
		e.mu.Lock()
		e.slept = append(e.slept, d)
		e.mu.Unlock()
		e.clock.Add(d)
		return nil
	}
	req := e.offer("/x402/query").Accepts[0]
	payment := mcpJSON(t, e.payload(wallet(t), req, nil))
	call := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"oracle_quick_take","arguments":{"query":"Should I?"},"_meta":{"x402/payment":%s}}}`, payment)
	r := request(mcpPath, call, "")
	r.Headers["accept"] = "application/json, text/event-stream"
	r.Headers["mcp-protocol-version"] = "2025-11-25"
	// The deadline leaves a second past the Reserve: the wait's four
	// polls, not the 80 of Wait.
	ctx, cancel := context.WithTimeout(context.Background(), e.h.Reserve+time.Second)
	defer cancel()
	resp, err := e.h.Handle(ctx, r)
	if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(resp.Body, `"status":"pending"`) {
		t.Fatalf("%v %d %s", err, resp.StatusCode, resp.Body)
	}
	if n := len(e.slept); n == 0 || n > 8 {
		t.Fatalf("%d polls while waiting: the wait ignored the deadline", n)
	}
}

// TestTheMCPServerIsOffWithTheRail: with no X402_PAY_TO, /mcp is 404 as
// every route of the rail.
func TestTheMCPServerIsOffWithTheRail(t *testing.T) {
	h := &Handler{Log: obs.NewLogger(&testkit.Buffer{}, "INFO"), Now: time.Now}
	resp, err := h.Handle(context.Background(), request(mcpPath, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, ""))
	if err != nil || resp.StatusCode != http.StatusNotFound {
		t.Fatalf("%d %v", resp.StatusCode, err)
	}
}

// Every text the agent function answers with (the MCP tools' descriptions
// and messages among them) passes the content filter: each string literal
// of the package.
func TestEveryAgentTextPassesTheContentFilter(t *testing.T) {
	testkit.LiteralsPassTheFilter(t, ".")
}

// TestAPaymentTheDirectPathLeavesIsStillRead: a call whose payment's key
// is spelt with an escape, which the direct path leaves to the SDK, has
// its payment read from the _meta the SDK decoded, and pays as any other.
func TestAPaymentTheDirectPathLeavesIsStillRead(t *testing.T) {
	e := newEnv(t)
	req := e.offer("/x402/query").Accepts[0]
	payment := mcpJSON(t, e.payload(wallet(t), req, nil))
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"oracle_quick_take","arguments":{"query":"Should I?"},"_meta":{"x402\/payment":` + payment + `}}}`
	r := request(mcpPath, call, "")
	r.Headers["accept"] = "application/json, text/event-stream"
	r.Headers["mcp-protocol-version"] = "2025-11-25"
	resp, err := e.h.Handle(context.Background(), r)
	if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(resp.Body, `"status":"pending"`) {
		t.Fatalf("%v %d %s", err, resp.StatusCode, resp.Body)
	}
	if e.settles() != 1 {
		t.Fatalf("%d settlements", e.settles())
	}
}
