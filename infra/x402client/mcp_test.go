package x402client_test

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"42sisters.ai/oracle/infra/x402client"
)

// The paid tool's input and the verdict, as schemas.
const (
	querySchema = `{"type": "object", "properties": {"query": {"type": "string", "minLength": 1, "maxLength": 2000}}, "required": ["query"], "additionalProperties": false}`
	// verdictSchema admits the verdict alone; a tool declaring it as its
	// output schema cannot answer x402's payment-required result, whose
	// structuredContent is a PaymentRequired, to an MCP client that checks
	// structuredContent against it, as @modelcontextprotocol/sdk's does.
	verdictSchema = `{"type": "object", "properties": {"verdict": {"enum": ["GREEN", "AMBER", "RED", "NULL"]}}, "required": ["verdict"]}`
	// verdictOrPaymentRequired admits both.
	verdictOrPaymentRequired = `{"type": "object", "anyOf": [` + verdictSchema + `, {"type": "object", "properties": {"x402Version": {"const": 2}, "accepts": {"type": "array"}}, "required": ["x402Version", "accepts"]}]}`
)

// mcpBazaar is an MCP tool's discovery extension as @x402/extensions 2.27.0
// reads it: input.type "mcp" with toolName (the spec's text says "tool";
// validateDiscoveryExtensionSpec requires toolName).
const mcpBazaar = `{
  "info": {
    "input": {"type": "mcp", "toolName": "oracle_quick_take", "transport": "streamable-http",
              "inputSchema": ` + querySchema + `, "example": {"query": "Should I open a bakery?"}},
    "output": {"type": "json", "example": {"verdict": "GREEN"}}
  },
  "schema": {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "properties": {
      "input": {
        "type": "object",
        "properties": {
          "type": {"type": "string", "const": "mcp"},
          "toolName": {"type": "string"},
          "transport": {"type": "string", "enum": ["streamable-http", "sse"]},
          "inputSchema": {"type": "object"},
          "example": {"type": "object"}
        },
        "required": ["type", "toolName", "inputSchema"],
        "additionalProperties": false
      },
      "output": {"type": "object", "properties": {"type": {"type": "string"}, "example": {"type": "object"}}, "required": ["type"]}
    },
    "required": ["input"]
  }
}`

// mcpPayee is an MCP server that sells one tool as x402's MCP transport
// (specs/transports-v2/mcp.md) says, built on the official Go SDK, stateless
// with JSON answers: unpaid, a result with isError, the PaymentRequired in
// structuredContent and its JSON in content[0].text; paid through
// _meta["x402/payment"], the verdict with _meta["x402/payment-response"]. A
// payment it has seen before is refused unless it carries a
// payment-identifier, when it is answered as the first time was.
type mcpPayee struct {
	t            *testing.T
	accepts      []any
	outputSchema string
	// together holds every repeat of a payment until this many repeats are
	// in, so that only repeats sent at once are answered.
	together int
	arrived  chan struct{}
	// stop releases held calls when the test ends: the SDK does not end a
	// tool call's context when its client goes.
	stop     chan struct{}
	mu       sync.Mutex
	payments []string // every _meta["x402/payment"] received, as JSON
}

func (p *mcpPayee) handler() http.Handler {
	s := mcp.NewServer(&mcp.Implementation{Name: "oracle-test", Version: "1.0.0"}, nil)
	s.AddTool(&mcp.Tool{
		Name:         "oracle_quick_take",
		Description:  "A quick verdict on a question, for 0.05 USDC paid over x402.",
		InputSchema:  json.RawMessage(querySchema),
		OutputSchema: json.RawMessage(p.outputSchema),
		Annotations:  &mcp.ToolAnnotations{ReadOnlyHint: false, OpenWorldHint: new(true)},
	}, p.quickTake)
	s.AddTool(&mcp.Tool{
		Name:        "oracle_result",
		Description: "A verdict already bought, by its id; free.",
		InputSchema: json.RawMessage(`{"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
	}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return verdict(nil), nil
	})
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}))
	return mux
}

func verdict(meta mcp.Meta) *mcp.CallToolResult {
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: `{"verdict":"GREEN"}`}},
		StructuredContent: map[string]any{"verdict": "GREEN"},
		Meta:              meta,
	}
}

func (p *mcpPayee) required(why string) *mcp.CallToolResult {
	accepts := p.accepts
	if accepts == nil {
		accepts = []any{requirement}
	}
	required := map[string]any{
		"x402Version": 2,
		"error":       why,
		"resource":    map[string]any{"url": "mcp://tool/oracle_quick_take", "description": "a quick verdict", "mimeType": "application/json"},
		"accepts":     accepts,
		"extensions":  map[string]any{"bazaar": decode(p.t, mcpBazaar), "payment-identifier": decode(p.t, paymentIdentifier)},
	}
	text, err := json.Marshal(required)
	if err != nil {
		panic(err)
	}
	return &mcp.CallToolResult{IsError: true, StructuredContent: required, Content: []mcp.Content{&mcp.TextContent{Text: string(text)}}}
}

func (p *mcpPayee) quickTake(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	payment, ok := req.Params.Meta["x402/payment"]
	if !ok {
		return p.required("payment required"), nil
	}
	raw, err := json.Marshal(payment)
	if err != nil {
		return nil, err
	}
	var payload struct {
		Payload struct {
			Authorization struct {
				From string `json:"from"`
			} `json:"authorization"`
		} `json:"payload"`
		Extensions struct {
			PaymentIdentifier struct {
				Info struct {
					ID string `json:"id"`
				} `json:"info"`
			} `json:"payment-identifier"`
		} `json:"extensions"`
	}
	if err := json.Unmarshal(raw, &payload); err != nil {
		return p.required("undecodable payment: " + err.Error()), nil
	}
	p.mu.Lock()
	seen := slices.Contains(p.payments, string(raw))
	p.payments = append(p.payments, string(raw))
	if p.together > 0 && len(p.payments) == 1+p.together {
		close(p.arrived)
	}
	p.mu.Unlock()
	if seen && p.together > 0 {
		select {
		case <-p.arrived:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-p.stop:
			return nil, errors.New("the test is over")
		}
	}
	if seen && payload.Extensions.PaymentIdentifier.Info.ID == "" {
		return p.required("authorization already used"), nil
	}
	return verdict(mcp.Meta{"x402/payment-response": map[string]any{
		"success": true, "transaction": tx, "network": network, "payer": payload.Payload.Authorization.From,
	}}), nil
}

func (p *mcpPayee) received() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.payments)
}

// checkPaymentPayload checks the payment sent in _meta is x402 v2's exact
// scheme for what was asked, from payer, with the payment-identifier id.
func checkPaymentPayload(t *testing.T, raw json.RawMessage, payer, id string) {
	t.Helper()
	var ext struct {
		Extensions map[string]json.RawMessage `json:"extensions"`
	}
	if err := json.Unmarshal(raw, &ext); err != nil {
		t.Fatalf("paymentPayload %s: %v", raw, err)
	}
	// As the HTTP transport would carry it.
	header := base64.StdEncoding.EncodeToString(raw)
	checkPayment(t, header, payer)
	if got := paymentID(header); got != id {
		t.Errorf("payment-identifier %q, want %q", got, id)
	}
	if _, ok := ext.Extensions["bazaar"]; !ok {
		t.Errorf("the payment echoes no bazaar extension: %s", raw)
	}
}

func TestMCP(t *testing.T) {
	c := x402client.New(t)
	const id = "pay_mcp_0123456789abcdef"
	args := map[string]string{"query": "Should I open a bakery?"}
	cases := []struct {
		name      string
		tool      string
		opts      x402client.MCPOptions
		accepts   []any
		output    string
		unpaidErr string // the MCP client's error on the unpaid result
		wantID    string
		retries   int // results wanted besides the paid call's
	}{
		{name: "pays", tool: "oracle_quick_take"},
		{name: "pays on the network asked", tool: "oracle_quick_take", opts: x402client.MCPOptions{Network: network}, accepts: []any{onBase, requirement}},
		{name: "an id and a retry", tool: "oracle_quick_take", opts: x402client.MCPOptions{PaymentID: id, Retries: 1}, wantID: id, retries: 1},
		{name: "an id and five retries at once", tool: "oracle_quick_take", opts: x402client.MCPOptions{PaymentID: id, Retries: 5, Concurrent: true}, wantID: id, retries: 5},
		{name: "a free tool", tool: "oracle_result"},
		{name: "an output schema of the verdict alone", tool: "oracle_quick_take", output: verdictSchema,
			unpaidErr: "Structured content does not match the tool's output schema"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := &mcpPayee{t: t, accepts: tc.accepts, outputSchema: cmp.Or(tc.output, verdictOrPaymentRequired), stop: make(chan struct{})}
			if tc.opts.Concurrent {
				p.together, p.arrived = tc.opts.Retries, make(chan struct{})
			}
			srv := httptest.NewServer(p.handler())
			defer srv.Close()
			defer close(p.stop)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			toolArgs := any(args)
			if tc.tool == "oracle_result" {
				toolArgs = map[string]string{"id": "abc"}
			}
			r, err := c.MCP(ctx, srv.URL+"/mcp", tc.tool, toolArgs, tc.opts)
			if tc.unpaidErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.unpaidErr) {
					t.Fatalf("got %v, want the MCP client to refuse the result: %s", err, tc.unpaidErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tool := range r.Tools {
				names = append(names, tool.Name)
			}
			if !slices.Equal(names, []string{"oracle_quick_take", "oracle_result"}) {
				t.Errorf("tools %v", names)
			}
			if tc.tool == "oracle_result" {
				if r.PaymentRequired != nil && string(r.PaymentRequired) != "null" || r.Paid != nil || r.Unpaid.IsError {
					t.Errorf("a free tool: paymentRequired %s, paid %v, unpaid isError %v", r.PaymentRequired, r.Paid != nil, r.Unpaid.IsError)
				}
				return
			}
			if !r.Unpaid.IsError || r.Transport == nil || !r.Transport.Valid {
				t.Fatalf("unpaid: isError %v, structuredContent %s, transport %+v, want x402's payment-required result", r.Unpaid.IsError, r.Unpaid.StructuredContent, r.Transport)
			}
			v, err := c.ValidateJSON(ctx, r.PaymentRequired)
			if err != nil {
				t.Fatal(err)
			}
			if err := v.Err(); err != nil {
				t.Errorf("the MCP 402: %v", err)
			}
			// Pays Base Sepolia's requirement (network), even when Base's is
			// offered first and the client told to pay on Base Sepolia.
			checkPaymentPayload(t, r.PaymentPayload, r.Payer, tc.wantID)
			if r.PaymentID != tc.wantID {
				t.Errorf("the report's paymentId %q, want %q", r.PaymentID, tc.wantID)
			}
			results := append([]x402client.ToolResult{*r.Paid}, r.Retries...)
			if len(results) != 1+tc.retries {
				t.Fatalf("%d results, want %d", len(results), 1+tc.retries)
			}
			for i, res := range results {
				var got struct{ Verdict string }
				if res.IsError || res.Error != "" || json.Unmarshal(res.StructuredContent, &got) != nil || got.Verdict != "GREEN" {
					t.Errorf("result %d: isError %v, error %q, structuredContent %s, want the verdict", i, res.IsError, res.Error, res.StructuredContent)
				}
				var settled struct {
					Success     bool
					Transaction string
					Payer       string
				}
				if err := json.Unmarshal(res.Meta["x402/payment-response"], &settled); err != nil || !settled.Success ||
					settled.Transaction != tx || !strings.EqualFold(settled.Payer, r.Payer) {
					t.Errorf("result %d's x402/payment-response %s (%v)", i, res.Meta["x402/payment-response"], err)
				}
			}
			if !jsonEqual(r.PaymentResponse, r.Paid.Meta["x402/payment-response"]) {
				t.Errorf("paymentResponse %s is not the paid result's", r.PaymentResponse)
			}
			got := p.received()
			if len(got) != 1+tc.retries {
				t.Fatalf("the server received %d payments, want %d", len(got), 1+tc.retries)
			}
			for _, g := range got {
				if g != got[0] {
					t.Errorf("the server received payments %q, want the same one every time", got)
					break
				}
			}
			if !jsonEqual(r.PaymentPayload, json.RawMessage(got[0])) {
				t.Errorf("the server received %s, the client reports sending %s", got[0], r.PaymentPayload)
			}
		})
	}
}

// jsonEqual says whether a and b are the same JSON value.
func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}
