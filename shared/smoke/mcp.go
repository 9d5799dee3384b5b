package smoke

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"reflect"
	"strconv"

	"42sisters.ai/oracle/shared/oracle"
)

// MCPRoute is the MCP server's one address (Streamable HTTP, stateless).
const MCPRoute = "/mcp"

// MCPTool is the paid tool the agent stages buy: the quick verdict, as
// AgentRoute sells it.
const MCPTool = "oracle_quick_take"

// mcpResultTool reads a paid tool's verdict by its order_id, at no cost.
const mcpResultTool = "oracle_result"

// mcpProtocol is the MCP revision the smoke test speaks: the latest with
// initialize, and the official TypeScript client's.
const mcpProtocol = "2025-11-25"

// The x402 MCP transport's _meta keys (coinbase/x402
// specs/transports-v2/mcp.md).
const (
	metaPayment         = "x402/payment"
	metaPaymentResponse = "x402/payment-response"
)

// mcpClient calls the deployment's MCP server as any MCP client does:
// initialize, the initialized notification, then tools/call, each a POST
// of one JSON-RPC message answered with JSON. It is plain JSON-RPC over
// net/http, not the go-sdk's client, which alone would take the smoke
// function's bootstrap from 14.0 to 15.4 MiB, over the functions' 15 MB.
type mcpClient struct {
	r *Runner
	// next is the next request's id; session the server's Mcp-Session-Id,
	// if it gave one (a stateless server does not).
	next    int
	session string
	ready   bool // initialized: later requests carry the protocol version
}

// toolResult is a tools/call result, as the paid tools and oracle_result
// answer it: structuredContent, the same JSON as content[0]'s text, and
// x402's payment response in _meta.
type toolResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StructuredContent json.RawMessage            `json:"structuredContent"`
	IsError           bool                       `json:"isError"`
	Meta              map[string]json.RawMessage `json:"_meta"`
}

// text is the result's first text, clipped for a report.
func (t toolResult) text() string {
	if len(t.Content) == 0 {
		return "(no content)"
	}
	return oracle.Clip(t.Content[0].Text, 200)
}

// textIsStructured reports whether content[0] is text holding the
// structuredContent's JSON, as x402's MCP transport has both say it.
func (t toolResult) textIsStructured() bool {
	if len(t.Content) == 0 || t.Content[0].Type != "text" {
		return false
	}
	var text, structured any
	return json.Unmarshal([]byte(t.Content[0].Text), &text) == nil &&
		json.Unmarshal(t.StructuredContent, &structured) == nil && reflect.DeepEqual(text, structured)
}

// initialize opens the conversation: the server must speak mcpProtocol.
func (c *mcpClient) initialize(ctx context.Context) error {
	var res struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	params := map[string]any{"protocolVersion": mcpProtocol, "capabilities": map[string]any{},
		"clientInfo": map[string]string{"name": "oracle-smoke", "version": "1.0.0"}}
	h, err := c.call(ctx, c.r.HTTP, "initialize", params, &res)
	if err != nil {
		return err
	}
	if res.ProtocolVersion != mcpProtocol {
		return fmt.Errorf("MCP initialize: the server speaks %q, want %s", oracle.Clip(res.ProtocolVersion, 40), mcpProtocol)
	}
	c.session, c.ready = h.Get("Mcp-Session-Id"), true
	body, err := json.Marshal(map[string]string{"jsonrpc": "2.0", "method": "notifications/initialized"})
	if err != nil {
		return err
	}
	status, _, b, err := c.post(ctx, c.r.HTTP, body)
	if err != nil {
		return err
	}
	if status != http.StatusAccepted {
		return fmt.Errorf("MCP notifications/initialized → %d %s, want 202", status, oracle.Clip(string(b), 200))
	}
	return nil
}

// callTool calls a tool with its arguments and, when there is one, _meta.
func (c *mcpClient) callTool(ctx context.Context, hc *http.Client, name string, args any, meta map[string]any) (toolResult, error) {
	params := map[string]any{"name": name, "arguments": args}
	if meta != nil {
		params["_meta"] = meta
	}
	var res toolResult
	_, err := c.call(ctx, hc, "tools/call", params, &res)
	return res, err
}

// call sends one request and decodes its result into out. A JSON-RPC
// error, an answer that is not one JSON-RPC response or not this
// request's, is the error.
func (c *mcpClient) call(ctx context.Context, hc *http.Client, method string, params, out any) (http.Header, error) {
	c.next++
	id := c.next
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		return nil, err
	}
	status, h, b, err := c.post(ctx, hc, body)
	if err != nil {
		return nil, err
	}
	if status != http.StatusOK {
		return nil, fmt.Errorf("MCP %s → %d %s", method, status, oracle.Clip(string(b), 200))
	}
	if media, _, _ := mime.ParseMediaType(h.Get("Content-Type")); media != "application/json" {
		return nil, fmt.Errorf("MCP %s answered %q, want a JSON answer (the server is stateless, JSON answers)", method, oracle.Clip(h.Get("Content-Type"), 60))
	}
	var resp struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  json.RawMessage `json:"result"`
		Error   *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &resp); err != nil || resp.JSONRPC != "2.0" || !bytes.Equal(resp.ID, []byte(strconv.Itoa(id))) {
		return nil, fmt.Errorf("MCP %s: the answer is not this request's JSON-RPC response: %s", method, oracle.Clip(string(b), 200))
	}
	if resp.Error != nil {
		return nil, fmt.Errorf("MCP %s: error %d %s", method, resp.Error.Code, oracle.Clip(resp.Error.Message, 200))
	}
	if len(resp.Result) == 0 {
		return nil, fmt.Errorf("MCP %s: the response has no result", method)
	}
	if err := json.Unmarshal(resp.Result, out); err != nil {
		return nil, fmt.Errorf("MCP %s: the result: %w", method, err)
	}
	return h, nil
}

func (c *mcpClient) post(ctx context.Context, hc *http.Client, body []byte) (int, http.Header, []byte, error) {
	headers := map[string]string{"Accept": "application/json, text/event-stream"}
	if c.ready {
		headers["MCP-Protocol-Version"] = mcpProtocol
	}
	if c.session != "" {
		headers["Mcp-Session-Id"] = c.session
	}
	return c.r.exchange(ctx, hc, http.MethodPost, c.r.APIURL+MCPRoute, MCPRoute, body, headers)
}
