package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	segjson "github.com/segmentio/encoding/json"

	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/httpapi"
	"42sisters.ai/oracle/shared/obs"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/repair"
	"42sisters.ai/oracle/shared/store"
	"42sisters.ai/oracle/shared/x402"
)

// MCPTools are the paid MCP tools and the tier each sells, beside the free
// oracle_result (ResultTool).
var MCPTools = map[string]oracle.Tier{
	"oracle_quick_take":       oracle.TierQuick,
	"oracle_full_breakdown":   oracle.TierFull,
	"oracle_strategy_session": oracle.TierStrategy,
}

// ResultTool reads a paid order's verdict by its order_id, at no cost.
const ResultTool = "oracle_result"

// The x402 MCP transport's _meta keys (coinbase/x402
// specs/transports-v2/mcp.md).
const (
	metaPayment         = "x402/payment"
	metaPaymentResponse = "x402/payment-response"
)

// maxPaymentJSON bounds a payment sent in _meta as x402.MaxHeaderBytes
// bounds the PAYMENT-SIGNATURE header: the JSON that header's base64 can
// carry, so that a payment one transport takes the other takes too.
var maxPaymentJSON = base64.StdEncoding.DecodedLen(x402.MaxHeaderBytes)

// mcpTransport is the bazaar's name of the MCP server's transport.
const mcpTransport = "streamable-http"

// addTools registers the four tools with add.
func (h *Handler) addTools(add func(*mcp.Tool, mcp.ToolHandler)) {
	for _, name := range slices.Sorted(maps.Keys(MCPTools)) {
		tier := MCPTools[name]
		add(&mcp.Tool{
			Name:  name,
			Title: "The Oracle: " + tier.Name(),
			Description: fmt.Sprintf("%s. Costs %s USDC, paid over x402: called without a payment, the tool answers what to pay "+
				"(isError, the x402 PaymentRequired in structuredContent); pay it in _meta[\"x402/payment\"] of the same call. "+
				"The answer is the verdict, or an order_id to read it with %s when it takes longer.",
				describe(tier), oracle.FormatUSDC(tier.PriceUSDCAtomic()), ResultTool),
			InputSchema:  paidBodySchema(),
			OutputSchema: paidOutputSchema(),
			// A paid call moves money on a public chain and makes an
			// order: neither read-only nor idempotent (a new payment
			// buys a new verdict), and nothing is ever destroyed.
			Annotations: &mcp.ToolAnnotations{Title: tier.Name() + " (" + oracle.FormatUSDC(tier.PriceUSDCAtomic()) + " USDC)",
				ReadOnlyHint: false, DestructiveHint: ptrTo(false), IdempotentHint: false, OpenWorldHint: ptrTo(true)},
		}, h.paidTool(name, tier, h.toolOffer(name, tier)))
	}
	add(&mcp.Tool{
		Name:  ResultTool,
		Title: "The Oracle: a verdict by its order_id",
		Description: "Free. Reads the verdict a paid Oracle tool sold, by the order_id it answered: the verdict when it is ready, " +
			"else the order's state and what to do (call again shortly while it is pending).",
		InputSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"order_id": map[string]any{"type": "string", "pattern": "^x402_(test|live)_[A-Za-z0-9]{32}$",
					"description": "The order_id a paid Oracle tool answered."},
			},
			"required":             []any{"order_id"},
			"additionalProperties": false,
		},
		OutputSchema: map[string]any{"type": "object", "anyOf": []any{readySchema(), stateSchema(resultStates)}},
		Annotations: &mcp.ToolAnnotations{Title: "Oracle verdict by order_id (free)",
			ReadOnlyHint: true, DestructiveHint: ptrTo(false), IdempotentHint: true, OpenWorldHint: ptrTo(false)},
	}, h.guarded(h.resultTool))
}

func ptrTo[T any](v T) *T { return &v }

// toolOffer is the offer of a paid tool: the MCP server's address as the
// resource, and the bazaar's MCP form (specs/extensions/bazaar.md), whose
// input names the tool twice: tool, as the specification writes it, and
// toolName, as the reference implementations (TypeScript, Go, Python)
// read it.
func (h *Handler) toolOffer(name string, tier oracle.Tier) offer {
	return h.priced(offer{
		resource: h.resourceOf(h.BaseURL+mcpPath, tier),
		bazaar: h.bazaar(tier,
			map[string]any{"type": "mcp", "tool": name, "toolName": name, "description": describe(tier),
				"transport": mcpTransport, "inputSchema": paidBodySchema(), "example": map[string]any{"query": exampleQuery}},
			map[string]any{
				"type":        map[string]any{"type": "string", "const": "mcp"},
				"tool":        map[string]any{"type": "string", "const": name},
				"toolName":    map[string]any{"type": "string", "const": name},
				"description": map[string]any{"type": "string"},
				"transport":   map[string]any{"type": "string", "enum": []any{mcpTransport}},
				"inputSchema": map[string]any{"type": "object"},
				"example":     paidBodySchema(),
			},
			"type", "tool", "toolName", "inputSchema"),
	}, tier)
}

// The output schemas hold what every result's structuredContent is, for
// a client that validates it even in an error's result (the official
// TypeScript SDK does): the verdict, where it stands, or the x402
// PaymentRequired. They use no keyword outside JSON Schema draft 7, which
// that SDK's validator reads.
func paidOutputSchema() map[string]any {
	return map[string]any{"type": "object", "anyOf": []any{readySchema(), stateSchema(paidStates), paymentRequiredSchema()}}
}

// readySchema is a verdictAnswer's.
func readySchema() map[string]any {
	str := map[string]any{"type": "string"}
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"status":    map[string]any{"type": "string", "const": "ready"},
			"order_id":  str,
			"tier":      map[string]any{"type": "string", "enum": []any{string(oracle.TierQuick), string(oracle.TierFull), string(oracle.TierStrategy)}},
			"tier_name": str,
			"query":     str,
			"verdict": map[string]any{
				"type": "object",
				"properties": map[string]any{
					"verdict": map[string]any{"type": "string", "enum": []any{"GREEN", "AMBER", "RED", "NULL"}},
					"summary": str,
				},
				"required": []any{"verdict", "summary"},
			},
			"cached_at":      str,
			"retention_days": map[string]any{"type": "integer"},
			"result_url":     str,
		},
		"required": []any{"status", "order_id", "tier", "tier_name", "query", "verdict", "retention_days", "result_url"},
	}
}

// stateSchema is a pendingAnswer's: an order without a verdict to give,
// by its status.
func stateSchema(states map[string]string) map[string]any {
	str := map[string]any{"type": "string"}
	statuses := make([]any, 0, len(states))
	for _, s := range slices.Sorted(maps.Keys(states)) {
		statuses = append(statuses, s)
	}
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"status": map[string]any{"type": "string", "enum": statuses}, "order_id": str, "message": str,
			"poll_url": str, "result_url": str,
		},
		"required": []any{"status", "order_id", "message", "poll_url", "result_url"},
	}
}

// paymentRequiredSchema is the x402 PaymentRequired's.
func paymentRequiredSchema() map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"x402Version": map[string]any{"type": "integer", "const": x402.Version},
			"error":       map[string]any{"type": "string"},
			"resource":    map[string]any{"type": "object"},
			"accepts":     map[string]any{"type": "array", "items": map[string]any{"type": "object"}},
			"extensions":  map[string]any{"type": "object"},
		},
		"required": []any{"x402Version", "accepts"},
	}
}

// paidStates say, over MCP, what the HTTP rail's 202 says with Location:
// where a paid tool's verdict is to be read.
var paidStates = map[string]string{
	"pending":             "Your verdict is being prepared. Call oracle_result with this order_id in a few seconds (or poll poll_url).",
	"payment_unconfirmed": "Your payment is being confirmed. Call oracle_result with this order_id in a minute (or poll poll_url).",
}

// resultStates are oracle_result's answers for an order with no verdict to
// give, as GET /x402/result/{id} answers them.
var resultStates = map[string]string{
	"pending":             "Your verdict is being prepared. Call oracle_result again in a few seconds.",
	"payment_unconfirmed": "Your payment is being confirmed. Call oracle_result again in a minute.",
	"preparing_again":     "Your verdict is being prepared again. Call oracle_result again in a few seconds.",
	"under_review":        "Your verdict is under review. Call oracle_result later: it gives the verdict once it is ready, or says the payment was refunded.",
	"failed":              "Analysis failed. The payment will be refunded to the wallet that paid it.",
	"refunded":            "This order was refunded.",
	"payment_failed":      "The payment for this order did not go through; nothing was charged.",
	"expired":             "This order is past its retention. Open poll_url to have its verdict prepared again.",
}

// guarded answers a tool's panic as an internal error, said in the log:
// the SDK runs handlers where httpapi.Recover does not reach.
func (h *Handler) guarded(tool mcp.ToolHandler) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (res *mcp.CallToolResult, err error) {
		defer func() {
			if p := recover(); p != nil {
				h.Log.ErrorContext(ctx, "panic in an MCP tool", "tool", req.Params.Name, "panic", fmt.Sprint(p))
				res, err = toolError(internalText), nil
			}
		}()
		return tool(ctx, req)
	}
}

// mcpContext is a tool's context with the Lambda request's deadline again
// (the SDK's context keeps its values, not its deadline), and the request.
func mcpContext(ctx context.Context) (context.Context, context.CancelFunc, mcpRequest) {
	info, _ := ctx.Value(mcpRequestKey{}).(mcpRequest)
	if info.deadline.IsZero() {
		return ctx, func() {}, info
	}
	ctx, cancel := context.WithDeadline(ctx, info.deadline)
	return ctx, cancel, info
}

// paidTool sells tier's verdict as the HTTP rail does, the payment in
// _meta["x402/payment"] for the PAYMENT-SIGNATURE header, the tool's
// result for the response (x402's MCP transport).
func (h *Handler) paidTool(name string, tier oracle.Tier, o offer) mcp.ToolHandler {
	return h.guarded(func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ctx, cancel, info := mcpContext(ctx)
		// The call's context outlives the tool until the payment's record,
		// written as its answer is encoded, is written; deferred, so that
		// not even a panic answers before the record.
		var recorded written
		defer hold(ctx, func() { recorded.wait(); cancel() })
		t := &payment{started: h.Now(), tier: tier, endpoint: "mcp:" + name, offer: o, request: info.id}
		sent, err := sentPayment(req)
		if err != nil {
			return h.toolResult(ctx, t, h.junk(ctx, t, store.JunkUndecodable, x402.ReasonInvalidPayload)), nil
		}
		// A call with neither arguments nor payment is a probe, as a POST
		// with neither body nor payment is: it gets the offer. Arguments
		// that are there are checked first: a bad query is refused, never
		// offered for sale.
		if sent == nil && noArguments(req.Params.Arguments) {
			return h.toolResult(ctx, t, h.required(t, "")), nil
		}
		query, err := parseQuery(req.Params.Arguments)
		if err != nil {
			return h.toolResult(ctx, t, failure(err)), nil
		}
		t.query = query
		if sent == nil {
			return h.toolResult(ctx, t, h.required(t, "")), nil
		}
		p, err := decodePayment(sent)
		if err != nil {
			return h.toolResult(ctx, t, h.junk(ctx, t, store.JunkUndecodable, x402.ReasonInvalidPayload)), nil
		}
		o := h.pay(ctx, t, p)
		recorded = o.recorded
		return h.toolResult(ctx, t, o), nil
	})
}

// heldKey is the context key of what a tool called on the direct path
// leaves to end before its answer leaves (a *func()): the direct path
// encodes the answer meanwhile, while a payment's record is on the wire.
type heldKey struct{}

// hold runs done once the tool's answer is encoded: on the direct path,
// which runs it then; called by the SDK, which encodes the answer beyond
// our reach, now.
func hold(ctx context.Context, done func()) {
	if held, ok := ctx.Value(heldKey{}).(*func()); ok {
		*held = done
		return
	}
	done()
}

// onGrownStack is tool with its goroutine's stack grown first. The SDK
// runs each call on a goroutine of its own, whose stack starts at a few
// KB; a paid call's reaches between 64 and 128 KB (the AWS SDK's
// middleware is some 60 frames deep) and got there by doubling, each time
// copying every frame it held, the last times deep inside the calls:
// about 200 µs a paid call in the CPU profile of
// BenchmarkAgentMCPPaidRequest, when the SDK served every call. One growth at the tool's entry copies a
// few frames. The direct path and the HTTP rail run on the Lambda's own
// goroutine, whose stack stays grown from one request to the next.
func onGrownStack(tool mcp.ToolHandler) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		stackAhead()
		return tool(ctx, req)
	}
}

// stackAhead grows the calling goroutine's stack to what a tool's calls
// reach, while it is still shallow.
//
//go:noinline
func stackAhead() {
	var frame [64 << 10]byte
	touch(frame[:])
}

// touch keeps stackAhead's frame from being optimised away.
//
//go:noinline
func touch(b []byte) { b[0] = 0 }

// noArguments reports whether a call's arguments are absent, null or {}.
func noArguments(args json.RawMessage) bool {
	a := bytes.TrimSpace(args)
	if len(a) == 0 || bytes.Equal(a, []byte("null")) {
		return true
	}
	var m map[string]json.RawMessage
	return json.Unmarshal(a, &m) == nil && len(m) == 0
}

// sentPayment is a call's _meta["x402/payment"] as JSON, nil when it sent
// none: as the direct path read it from the body, or as the SDK decoded
// it.
func sentPayment(req *mcp.CallToolRequest) (json.RawMessage, error) {
	switch v := req.Params.Meta[metaPayment].(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		return v, nil
	}
	v := req.Params.Meta[metaPayment]
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("agent: the MCP payment: %w", err)
	}
	return raw, nil
}

// decodePayment reads _meta["x402/payment"] as a PaymentPayload, within
// maxPaymentJSON, unknown fields ignored as the header's decoder ignores
// them.
func decodePayment(raw json.RawMessage) (x402.PaymentPayload, error) {
	if len(raw) > maxPaymentJSON {
		return x402.PaymentPayload{}, fmt.Errorf("agent: the MCP payment is %d bytes, over the %d allowed", len(raw), maxPaymentJSON)
	}
	var p x402.PaymentPayload
	// segmentio's decoder, as the header's (DecodePaymentSignatureWith).
	if err := segjson.Unmarshal(raw, &p); err != nil {
		return x402.PaymentPayload{}, fmt.Errorf("agent: the MCP payment is not a PaymentPayload: %w", err)
	}
	return p, nil
}

// internalText is a tool's answer to a fault of ours.
const internalText = "The Oracle could not complete this call because of an internal error. Try again shortly."

// toolResult is the outcome as x402's MCP transport answers it: a 402 is
// an error result with the PaymentRequired as structuredContent and, the
// same JSON, as its text; the verdict, or where it stands, is the result's
// structuredContent and text; the settlement, whenever the facilitator was
// asked, is _meta["x402/payment-response"].
func (h *Handler) toolResult(ctx context.Context, t *payment, o outcome) *mcp.CallToolResult {
	var res *mcp.CallToolResult
	switch {
	case o.err != nil:
		// As httpapi.Error says it: a refusal's message is the caller's,
		// a fault's stays in the log.
		status := httpapi.Status(o.err)
		if status >= http.StatusInternalServerError {
			h.logFor(t).ErrorContext(ctx, "MCP tool call failed", "status", status, "error", o.err.Error())
			return toolError(internalText)
		}
		h.logFor(t).InfoContext(ctx, "MCP tool call refused", "status", status, "error", o.err.Error())
		return toolError(oracle.ErrorMessage(o.err))
	case o.required != nil:
		// The 402's JSON, encoded once per offer (priced).
		res = &mcp.CallToolResult{StructuredContent: json.RawMessage(o.required.json),
			Content: []mcp.Content{&mcp.TextContent{Text: o.required.json}}, IsError: true}
	case o.ready != nil:
		res = structured(o.ready, false)
	case o.pending != nil:
		p := *o.pending
		if text, ok := paidStates[p.Status]; ok {
			p.Message = text
		}
		res = structured(p, false)
	default:
		return toolError(o.problem.Message)
	}
	if o.settlement != nil {
		res.Meta = mcp.Meta{metaPaymentResponse: o.settlement}
	}
	return res
}

// structured is a result whose text is its structuredContent's JSON.
func structured(v any, isError bool) *mcp.CallToolResult {
	b, err := json.Marshal(v)
	if err != nil {
		return toolError(internalText)
	}
	return &mcp.CallToolResult{StructuredContent: json.RawMessage(b), Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, IsError: isError}
}

// toolError is an error result a model reads: text, no structuredContent.
func toolError(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, IsError: true}
}

// resultTool answers oracle_result as GET /x402/result/{id} answers an
// agent's order: the verdict, checked as every reader checks it
// (repair.Guard) and its serving audited once per order and hour, or the
// order's state.
func (h *Handler) resultTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	ctx, cancel, _ := mcpContext(ctx)
	defer cancel()
	arrived := h.Now()
	var args struct {
		OrderID string `json:"order_id"`
	}
	if err := json.Unmarshal(req.Params.Arguments, &args); err != nil || !oracle.IsAgentOrder(args.OrderID) {
		return toolError("order_id must be the order_id a paid Oracle tool answered: x402_live_ or x402_test_ and 32 letters or digits."), nil
	}
	id := args.OrderID
	ctx = obs.WithOrder(ctx, id)
	log := h.Log.With(obs.Order(id), "endpoint", "mcp:"+ResultTool)
	o, found, err := h.Orders.Get(ctx, id)
	if err != nil {
		log.ErrorContext(ctx, "reading an order for oracle_result failed", "error", err.Error())
		return toolError(internalText), nil
	}
	if !found {
		return toolError("Unknown order: no order has this order_id."), nil
	}
	state := func(status string) (*mcp.CallToolResult, error) {
		return structured(pendingAnswer{Status: status, OrderID: id, Message: resultStates[status],
			PollURL: h.pollURL(id), ResultURL: h.resultURL(id)}, false), nil
	}
	switch {
	case o.Status == oracle.StatusAwaitingPayment:
		// No Stripe session stands behind an agent's order: one awaiting
		// payment is a settlement the operator is confirming.
		return state("payment_unconfirmed")
	case o.Status == oracle.StatusReady && !o.Expires.IsZero() && !o.Expires.After(arrived):
		return state("expired")
	case o.Status == oracle.StatusReady:
		switch outcome, err := h.Verdicts.Check(ctx, o); {
		case err != nil:
			log.ErrorContext(ctx, "a corrupt stored verdict could not be set aside; the next read tries again", "error", err.Error())
			return state("preparing_again")
		case outcome == repair.Held:
			return state("under_review")
		case outcome == repair.Regenerating:
			return state("preparing_again")
		}
		h.Metrics.Count(obs.CacheHits, 1)
		now := h.Now()
		r := audit.OfOrder(h.Hasher, o, audit.SourceCacheHit, audit.EventVerdictServed, audit.StatusCached, arrived, now)
		h.Audit.Record(ctx, r, audit.RecordID(o.SessionID, audit.NameServed, audit.Hourly(now)))
		return structured(h.verdictOf(o), false), nil
	case o.BeingRepaired():
		return state("preparing_again")
	case o.Status == oracle.StatusPaid || o.Status == oracle.StatusGenerating:
		return state("pending")
	case o.Status == oracle.StatusHeld || o.Status == oracle.StatusQuarantined:
		return state("under_review")
	case o.Status == oracle.StatusFailed:
		return state("failed")
	case o.Status == oracle.StatusRefunded:
		return state("refunded")
	case o.Status == oracle.StatusPaymentFailed:
		return state("payment_failed")
	}
	log.ErrorContext(ctx, "an agent's order in a state oracle_result does not know", "status", string(o.Status))
	return toolError(internalText), nil
}
