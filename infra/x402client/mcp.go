package x402client

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
)

// MCPOptions are mcp.mjs's options.
type MCPOptions struct {
	// Key is the payer's private key; empty: a fresh random one.
	Key string
	// PaymentID makes the payment carry the payment-identifier extension
	// with this id, when the PaymentRequired declares it.
	PaymentID string
	// Retries sends the paid call again this many times with the very same
	// payment after its answer, one after another.
	Retries int
	// Concurrent sends the Retries all at once.
	Concurrent bool
	// Network restricts the client to one network (CAIP-2).
	Network string
}

// Tool is one tool of tools/list as the MCP client read it.
type Tool struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  json.RawMessage `json:"annotations,omitempty"`
}

// ToolResult is one tools/call result as the MCP client read it, or the
// error a retry met instead.
type ToolResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text,omitempty"`
	} `json:"content"`
	StructuredContent json.RawMessage            `json:"structuredContent,omitempty"`
	IsError           bool                       `json:"isError,omitempty"`
	Meta              map[string]json.RawMessage `json:"_meta,omitempty"`
	// Error is why a retry got no result.
	Error string `json:"error,omitempty"`
}

// MCPResult is what one run of mcp.mjs reports.
type MCPResult struct {
	// ServerVersion is initialize's serverInfo.
	ServerVersion json.RawMessage `json:"serverVersion"`
	// Tools is tools/list's answer.
	Tools []Tool `json:"tools"`
	// Unpaid is the call without payment's result.
	Unpaid ToolResult `json:"unpaid"`
	// PaymentRequired is what the client read from Unpaid as x402's MCP
	// client reads it; null when Unpaid asked for no payment.
	PaymentRequired json.RawMessage `json:"paymentRequired"`
	// Transport checks Unpaid against x402's MCP transport (isError, the
	// PaymentRequired in structuredContent and the same JSON in
	// content[0].text); nil when no payment was asked.
	Transport *Check `json:"transport"`
	// PaymentPayload is the payment the official client built and sent in
	// _meta["x402/payment"].
	PaymentPayload json.RawMessage `json:"paymentPayload"`
	Payer          string          `json:"payer"`
	// PaymentID is the payment-identifier id in PaymentPayload, if any.
	PaymentID string `json:"paymentId"`
	// Paid is the paid call's result; nil when no payment was asked.
	Paid *ToolResult `json:"paid"`
	// PaymentResponse is Paid's _meta["x402/payment-response"].
	PaymentResponse json.RawMessage `json:"paymentResponse"`
	// Retries are the retries' results, in the order sent.
	Retries []ToolResult `json:"retries"`
}

// MCP runs mcp.mjs: it connects to the MCP endpoint at url (the full URL,
// e.g. http://localhost:3000/mcp), lists the tools, calls tool with args
// (anything that marshals to a JSON object; nil for none) without payment,
// pays what it is asked with the official x402 client and calls again. An
// error means the endpoint could not be used (or the script failed), with
// what the script said; a refused payment is a result.
func (c *Client) MCP(ctx context.Context, url, tool string, args any, o MCPOptions) (MCPResult, error) {
	var flags []string
	if o.PaymentID != "" {
		flags = append(flags, "--payment-id", o.PaymentID)
	}
	if o.Retries > 0 {
		flags = append(flags, "--retries", strconv.Itoa(o.Retries))
	}
	if o.Concurrent {
		flags = append(flags, "--concurrent")
	}
	if o.Network != "" {
		flags = append(flags, "--network", o.Network)
	}
	flags = append(flags, "--", url, tool)
	if args != nil {
		b, err := json.Marshal(args)
		if err != nil {
			return MCPResult{}, fmt.Errorf("x402client: mcp %s %s: the arguments: %w", url, tool, err)
		}
		flags = append(flags, string(b))
	}
	var r MCPResult
	if err := c.run(ctx, "mcp.mjs", flags, nil, o.Key, &r); err != nil {
		return MCPResult{}, fmt.Errorf("x402client: mcp %s %s: %w", url, tool, err)
	}
	return r, nil
}
