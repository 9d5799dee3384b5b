package smoke_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/smoke"
	"42sisters.ai/oracle/shared/x402"
)

// fakeVerdict is the fake agent rail's quick verdict.
const fakeVerdict = `{"verdict":"GREEN","summary":"The pipeline answers."}`

// fakeAgent is the agent rail as the agent stages meet it, over real HTTP:
// POST /x402/query and GET /x402/result/{id}, and at POST /mcp a real MCP
// server (the go-sdk's, stateless with JSON answers) with the paid
// oracle_quick_take and the free oracle_result; behind them the orders
// and their audit records (the stages read both). It takes only a Base
// Sepolia payment of the quick price to payTo signed by the smoke wallet,
// and keeps payment identifiers as the agent function does: the same
// payment again is answered from its order, anything else under the id is
// a 409. What it answers can be changed by the test through the fields
// below.
type fakeAgent struct {
	t      *testing.T
	now    time.Time
	wallet string
	srv    *httptest.Server

	mu       sync.Mutex
	orders   map[string]*fakeOrder
	ids      map[string]string // payment identifier → order
	nonces   map[string]bool
	settled  int
	deleted  []string
	mcpCalls []string // the tools called, "+paid" when paid

	// What the test changes.
	baseOnly       bool   // the 402s offer Base alone (X402Networks both)
	noIdentifier   bool   // the 402s do not advertise payment-identifier
	ignoreIDs      bool   // identifiers are not kept: a retry is a replay (402)
	settleRetry    bool   // a retry is settled again, on the same order
	dropPaymentID  bool   // the orders do not keep the identifier
	noMCP          bool   // no MCP server: /mcp is 404
	mcpFree        bool   // the unpaid tool answers a verdict, not the payment-required result
	mcpTextDiffers bool   // the payment-required result's text is not its structuredContent
	mcpNoSettle    bool   // the paid tool's result has no x402/payment-response
	pendingReads   int    // a paid call answers pending; its verdict is ready after this many reads
	resultStatus   string // oracle_result answers this status instead of the verdict
}

type fakeOrder struct {
	order     oracle.Order
	signature string
	reads     int // reads left before the verdict is ready
	records   []audit.Record
}

func newFakeAgent(t *testing.T, wallet *secp256k1.PrivateKey, now time.Time) *fakeAgent {
	f := &fakeAgent{t: t, now: now, wallet: x402.AddressOf(wallet.PubKey()), orders: map[string]*fakeOrder{}, ids: map[string]string{}, nonces: map[string]bool{}}
	server := mcp.NewServer(&mcp.Implementation{Name: "fake-oracle", Version: "1"}, nil)
	object := map[string]any{"type": "object"}
	server.AddTool(&mcp.Tool{Name: smoke.MCPTool, InputSchema: object}, f.paidTool)
	server.AddTool(&mcp.Tool{Name: "oracle_result", InputSchema: object}, f.resultTool)
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+smoke.AgentRoute, f.query)
	mux.HandleFunc("GET /x402/result/{id}", f.result)
	mux.HandleFunc(smoke.MCPRoute, func(w http.ResponseWriter, r *http.Request) {
		if f.noMCP {
			http.NotFound(w, r)
			return
		}
		mcpHandler.ServeHTTP(w, r)
	})
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

// offer is the 402 of a resource.
func (f *fakeAgent) offer(resource string) x402.PaymentRequired {
	n, _ := x402.LookupNetwork(x402.NetworkBaseSepolia)
	if f.baseOnly {
		n, _ = x402.LookupNetwork(x402.NetworkBase)
	}
	pr := x402.PaymentRequired{X402Version: x402.Version, Resource: &x402.ResourceInfo{URL: f.srv.URL + resource},
		Accepts: []x402.PaymentRequirements{x402.Requirement(n, oracle.TierQuick.PriceUSDCAtomic(), payTo, 5*time.Minute)}}
	if !f.noIdentifier {
		pr.Extensions = map[string]any{x402.ExtensionPaymentIdentifier: x402.PaymentIdentifierDeclaration(false)}
	}
	return pr
}

// paid is what a paid call got: the order, its settlement, or a refusal
// (status 402 or 409).
type paid struct {
	status int
	why    string
	order  *fakeOrder
	settle x402.SettleResponse
}

// pay takes a payment as the agent function does, on endpoint.
func (f *fakeAgent) pay(p x402.PaymentPayload, endpoint string) paid {
	sepolia, _ := x402.LookupNetwork(x402.NetworkBaseSepolia)
	want := x402.Requirement(sepolia, oracle.TierQuick.PriceUSDCAtomic(), payTo, 5*time.Minute)
	_, err := x402.CheckTerms(p, []x402.PaymentRequirements{want}, f.now, 30*time.Second)
	if err == nil {
		err = x402.CheckSigner(p, want)
	}
	if err != nil || !x402.SameAddress(p.Payload.Authorization.From, f.wallet) {
		f.t.Errorf("the payment on %s: %v (from %s)", endpoint, err, p.Payload.Authorization.From)
		return paid{status: http.StatusPaymentRequired, why: "invalid_payload"}
	}
	id, err := x402.PaymentIdentifier(p)
	if err != nil || (id == "" && !f.noIdentifier) {
		f.t.Errorf("the payment on %s carries payment identifier %q (%v)", endpoint, id, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if order, ok := f.ids[id]; ok && !f.ignoreIDs {
		o := f.orders[order]
		if o.signature != p.Payload.Signature {
			return paid{status: http.StatusConflict, why: "payment identifier used before"}
		}
		if f.settleRetry {
			return f.settle(o, endpoint)
		}
		o.records = append(o.records, f.record(o, audit.StatusRetry, ""))
		return paid{order: o, settle: x402.SettleResponse{Success: true, Transaction: o.order.Agent.Transaction, Network: x402.NetworkBaseSepolia, Payer: f.wallet}}
	}
	if f.nonces[p.Payload.Authorization.Nonce] {
		return paid{status: http.StatusPaymentRequired, why: x402.ReasonNonceAlreadyUsed}
	}
	f.nonces[p.Payload.Authorization.Nonce] = true
	session, err := oracle.NewAgentOrderID(rand.Reader, false)
	if err != nil {
		f.t.Fatal(err)
	}
	o := &fakeOrder{signature: p.Payload.Signature, reads: f.pendingReads, order: oracle.Order{SessionID: session, Status: oracle.StatusPaid,
		Tier: oracle.TierQuick, Source: oracle.SourceX402, Smoke: true, SessionCreated: f.now,
		Agent: &oracle.AgentPayment{Network: string(x402.NetworkBaseSepolia), Payer: f.wallet, Endpoint: endpoint}}}
	if !f.dropPaymentID {
		o.order.Agent.PaymentID = id
	}
	f.orders[session] = o
	if id != "" {
		f.ids[id] = session
	}
	return f.settle(o, endpoint)
}

// settle settles a payment for o: a new transaction, its record.
func (f *fakeAgent) settle(o *fakeOrder, endpoint string) paid {
	f.settled++
	tx := fmt.Sprintf("0x%064x", f.settled)
	o.order.Agent.Transaction = tx
	r := f.record(o, audit.StatusOK, tx)
	r.Endpoint = endpoint
	o.records = append(o.records, r)
	return paid{order: o, settle: x402.SettleResponse{Success: true, Transaction: tx, Network: x402.NetworkBaseSepolia, Payer: f.wallet}}
}

func (f *fakeAgent) record(o *fakeOrder, status audit.Status, tx string) audit.Record {
	return audit.Record{SessionID: o.order.SessionID, Event: audit.EventX402Payment, Source: audit.SourceX402, Status: status,
		TxHash: tx, Endpoint: o.order.Agent.Endpoint, PaymentID: o.order.Agent.PaymentID, Smoke: true}
}

// ready reports whether o's verdict is ready, counting one read of it.
func (f *fakeAgent) ready(o *fakeOrder) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if o.reads > 0 {
		o.reads--
		return false
	}
	o.order.Status, o.order.Verdict = oracle.StatusReady, fakeVerdict
	return true
}

// isReady reports whether o's verdict was found ready.
func (f *fakeAgent) isReady(o *fakeOrder) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return o.order.Status == oracle.StatusReady
}

func (f *fakeAgent) answer(o *fakeOrder, status string) map[string]any {
	a := map[string]any{"status": status, "order_id": o.order.SessionID}
	if status == "ready" {
		a["verdict"] = json.RawMessage(fakeVerdict)
	}
	return a
}

func (f *fakeAgent) query(w http.ResponseWriter, r *http.Request) {
	header := r.Header.Get(x402.HeaderPaymentSignature)
	if header == "" {
		pr, _ := x402.EncodeHeader(f.offer(smoke.AgentRoute))
		w.Header().Set(x402.HeaderPaymentRequired, pr)
		w.WriteHeader(http.StatusPaymentRequired)
		return
	}
	p, err := x402.DecodePaymentSignature(header)
	if err != nil {
		f.t.Errorf("PAYMENT-SIGNATURE: %v", err)
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	got := f.pay(p, smoke.AgentRoute)
	if got.order == nil {
		w.WriteHeader(got.status)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": got.why})
		return
	}
	settled, _ := x402.EncodeHeader(got.settle)
	w.Header().Set(x402.HeaderPaymentResponse, settled)
	if f.isReady(got.order) || (f.pendingReads == 0 && f.ready(got.order)) {
		_ = json.NewEncoder(w).Encode(f.answer(got.order, "ready"))
		return
	}
	w.Header().Set("Location", "/x402/result/"+got.order.order.SessionID)
	w.WriteHeader(http.StatusAccepted)
	_ = json.NewEncoder(w).Encode(f.answer(got.order, "pending"))
}

func (f *fakeAgent) result(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	o := f.orders[r.PathValue("id")]
	f.mu.Unlock()
	if o == nil {
		http.NotFound(w, r)
		return
	}
	if !f.ready(o) {
		w.WriteHeader(http.StatusAccepted)
		_ = json.NewEncoder(w).Encode(f.answer(o, "pending"))
		return
	}
	_ = json.NewEncoder(w).Encode(f.answer(o, "ready"))
}

// structured is a tool's result whose text is its structuredContent.
func structured(v any, isError bool) *mcp.CallToolResult {
	b, _ := json.Marshal(v)
	return &mcp.CallToolResult{StructuredContent: json.RawMessage(b), Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, IsError: isError}
}

func (f *fakeAgent) paidTool(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args struct {
		Query string `json:"query"`
	}
	if err := json.Unmarshal(req.Params.Arguments, &args); err != nil || args.Query != smoke.Query {
		f.t.Errorf("%s's arguments %s: %v", smoke.MCPTool, req.Params.Arguments, err)
	}
	sent := req.Params.Meta["x402/payment"]
	f.mu.Lock()
	f.mcpCalls = append(f.mcpCalls, smoke.MCPTool+map[bool]string{true: "+paid", false: ""}[sent != nil])
	f.mu.Unlock()
	if sent == nil {
		switch {
		case f.mcpFree:
			return structured(map[string]any{"status": "ready", "verdict": json.RawMessage(fakeVerdict)}, false), nil
		case f.mcpTextDiffers:
			res := structured(f.offer(smoke.MCPRoute), true)
			res.Content = []mcp.Content{&mcp.TextContent{Text: `{"x402Version":2,"accepts":[]}`}}
			return res, nil
		}
		return structured(f.offer(smoke.MCPRoute), true), nil
	}
	raw, _ := json.Marshal(sent)
	var p x402.PaymentPayload
	if err := json.Unmarshal(raw, &p); err != nil {
		f.t.Errorf("_meta[x402/payment]: %v", err)
		return structured(f.offer(smoke.MCPRoute), true), nil
	}
	got := f.pay(p, "mcp:"+smoke.MCPTool)
	if got.order == nil {
		pr := f.offer(smoke.MCPRoute)
		pr.Error = got.why
		return structured(pr, true), nil
	}
	res := structured(f.answer(got.order, "pending"), false)
	if f.pendingReads == 0 && f.ready(got.order) {
		res = structured(f.answer(got.order, "ready"), false)
	}
	if !f.mcpNoSettle {
		res.Meta = mcp.Meta{"x402/payment-response": got.settle}
	}
	return res, nil
}

func (f *fakeAgent) resultTool(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args struct {
		OrderID string `json:"order_id"`
	}
	_ = json.Unmarshal(req.Params.Arguments, &args)
	f.mu.Lock()
	f.mcpCalls = append(f.mcpCalls, "oracle_result")
	o := f.orders[args.OrderID]
	f.mu.Unlock()
	switch {
	case o == nil:
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Unknown order: no order has this order_id."}}, IsError: true}, nil
	case f.resultStatus != "":
		return structured(f.answer(o, f.resultStatus), false), nil
	case !f.ready(o):
		return structured(f.answer(o, "pending"), false), nil
	}
	return structured(f.answer(o, "ready"), false), nil
}

// Get and DeleteSmoke are the Orders table's (smoke.Orders).
func (f *fakeAgent) Get(_ context.Context, id string) (oracle.Order, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if o := f.orders[id]; o != nil {
		return o.order, true, nil
	}
	return oracle.Order{}, false, nil
}

func (f *fakeAgent) DeleteSmoke(_ context.Context, id string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	o := f.orders[id]
	if o == nil || !o.order.Smoke {
		return false, nil
	}
	delete(f.orders, id)
	f.deleted = append(f.deleted, id)
	return true, nil
}

// Session is the audit log's (smoke.AuditLog).
func (f *fakeAgent) Session(_ context.Context, id string, _ time.Time) ([]audit.Record, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if o := f.orders[id]; o != nil {
		return append([]audit.Record(nil), o.records...), nil
	}
	return nil, nil
}

// TestTheAgentStagesBuyOverHTTPAndAsTheMCPTool: the agent stages pay the
// quick verdict from the smoke wallet on Base Sepolia twice, each payment
// with a payment identifier: over HTTP (402, PAYMENT-SIGNATURE,
// PAYMENT-RESPONSE) and as the MCP tool (the payment-required result, the
// payment in _meta, the result's x402/payment-response); then read both
// verdicts (at once, or polled for at the 202's Location and with
// oracle_result), send the HTTP payment again under its identifier (the
// same order, verdict and transaction; nothing settled again) and check
// each order and its audit records; the cleanup deletes both orders. Each
// departure from that fails the stage that meets it, saying what.
func TestTheAgentStagesBuyOverHTTPAndAsTheMCPTool(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name   string
		change func(*fakeAgent)
		// stage 10's and 11's outcome, and what the failing one says
		pay, verdict smoke.Outcome
		err          string
		settled      int
	}{
		{"the verdicts at once", func(*fakeAgent) {}, smoke.Pass, smoke.Pass, "", 2},
		{"the verdicts polled for", func(f *fakeAgent) { f.pendingReads = 2 }, smoke.Pass, smoke.Pass, "", 2},
		{"Base alone offered: paid on Base Sepolia", func(f *fakeAgent) { f.baseOnly = true }, smoke.Pass, smoke.Pass, "", 2},
		{"no payment-identifier in the 402", func(f *fakeAgent) { f.noIdentifier = true }, smoke.Fail, smoke.Skip,
			"the 402 does not advertise the payment-identifier extension", 0},
		{"no MCP server", func(f *fakeAgent) { f.noMCP = true }, smoke.Fail, smoke.Skip, "MCP initialize → 404", 0},
		{"the unpaid tool answers a verdict", func(f *fakeAgent) { f.mcpFree = true }, smoke.Fail, smoke.Skip,
			"MCP oracle_quick_take without a payment answered isError false", 0},
		{"the payment-required text is not its structuredContent", func(f *fakeAgent) { f.mcpTextDiffers = true }, smoke.Fail, smoke.Skip,
			"content[0] is not text holding its structuredContent's JSON", 0},
		{"the paid tool's result without a settlement", func(f *fakeAgent) { f.mcpNoSettle = true }, smoke.Fail, smoke.Skip,
			`MCP oracle_quick_take's paid result has no settlement in _meta["x402/payment-response"]`, 2},
		{"oracle_result says the order failed", func(f *fakeAgent) { f.pendingReads, f.resultStatus = 1, "failed" }, smoke.Pass, smoke.Fail,
			`MCP oracle_result answered status "failed"`, 2},
		{"the retry refused as a replay", func(f *fakeAgent) { f.ignoreIDs = true }, smoke.Pass, smoke.Fail,
			"POST /x402/query with the same payment under its identifier → 402", 2},
		{"the retry settled again", func(f *fakeAgent) { f.settleRetry = true }, smoke.Pass, smoke.Fail,
			"the retry's PAYMENT-RESPONSE names transaction", 3},
		{"the order without its payment identifier", func(f *fakeAgent) { f.dropPaymentID = true }, smoke.Pass, smoke.Fail,
			`has endpoint "/x402/query" and payment identifier ""`, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			key := testWallet(t)
			f := newFakeAgent(t, key, now)
			c.change(f)
			r := &smoke.Runner{StripeKey: "sk_test_x", SigningSecret: "whsec_x", APIURL: f.srv.URL, HTTP: f.srv.Client(),
				Now: func() time.Time { return now }, Poll: time.Millisecond, Orders: f, Audit: f,
				Stores: func(context.Context) (string, error) { return "ok", nil }, Email: func(context.Context) (string, error) { return "ok", nil },
				Agent: smoke.Agent{PayTo: payTo, Testnet: true, Key: key, Payer: x402.AddressOf(key.PubKey())}}
			rep := r.Run(context.Background())
			pay, verdict, cleanup := rep.Results[9], rep.Results[10], rep.Results[12]
			if pay.Outcome != c.pay || verdict.Outcome != c.verdict {
				t.Fatalf("stage 10 %s %q %s, stage 11 %s %q %s; want %s and %s", pay.Outcome, pay.Figure, pay.Err,
					verdict.Outcome, verdict.Figure, verdict.Err, c.pay, c.verdict)
			}
			if failed := pay.Err + verdict.Err; !strings.Contains(failed, c.err) || (c.err == "") != (failed == "") {
				t.Errorf("the stages say %q, want %q", failed, c.err)
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			if f.settled != c.settled {
				t.Errorf("%d payments settled, want %d", f.settled, c.settled)
			}
			// Whatever was paid is cleaned away; nothing whole is reported.
			if len(f.orders) != 0 || cleanup.Outcome != smoke.Pass && len(f.deleted) > 0 {
				t.Errorf("%d orders left, cleanup %s %q %s", len(f.orders), cleanup.Outcome, cleanup.Figure, cleanup.Err)
			}
			if id := regexp.MustCompile(`x402_test_[A-Za-z0-9]{17,}`).FindString(rep.String()); id != "" {
				t.Errorf("the report shows a whole order id %s", id)
			}
			if c.pay != smoke.Pass || c.verdict != smoke.Pass {
				return
			}
			tx := `tx=0x[0-9a-f]{64}`
			if !regexp.MustCompile(`^answer=20[02] order=x402_test_\w{16} ` + tx + ` mcp: answer=(ready|pending) order=x402_test_\w{16} ` + tx + `$`).MatchString(pay.Figure) {
				t.Errorf("stage 10 says %q", pay.Figure)
			}
			if want := "verdict=GREEN record=x402/OK records=2 retry=200,same_order,paid_once mcp: verdict=GREEN record=x402/OK records=1"; verdict.Figure != want {
				t.Errorf("stage 11 says %q, want %q", verdict.Figure, want)
			}
			if len(f.deleted) != 2 || !strings.Contains(cleanup.Figure, oracle.ShortID(f.deleted[0])+" deleted, "+oracle.ShortID(f.deleted[1])+" deleted") {
				t.Errorf("cleanup %q, deleted %d orders", cleanup.Figure, len(f.deleted))
			}
			// The tool was called unpaid, then paid; oracle_result only
			// while the verdict was not ready.
			calls := strings.Join(f.mcpCalls, ",")
			want := smoke.MCPTool + "," + smoke.MCPTool + "+paid"
			if f.pendingReads > 0 {
				want += strings.Repeat(",oracle_result", f.pendingReads+1)
			}
			if calls != want {
				t.Errorf("MCP calls %s, want %s", calls, want)
			}
		})
	}
}
