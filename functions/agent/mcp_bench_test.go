package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"42sisters.ai/oracle/shared/httpapi"
	"42sisters.ai/oracle/shared/x402"
)

// BenchmarkAgentMCPPaidRequest is BenchmarkAgentPaidRequest over MCP: one
// new paid tools/call per iteration (the payment in _meta), through the
// real handler and the go-sdk's stateless server, against moto and the
// fake facilitator over HTTP, traced as deployed. own-µs/op is the time of
// Handle less the time in its calls, the same calls as the HTTP rail's;
// beside the local check it holds the MCP path's own work: the adapter,
// the SDK's session and JSON-RPC, the payment's decoding from _meta and
// the result's encoding.
func BenchmarkAgentMCPPaidRequest(b *testing.B) {
	benchPaidRequests(b, func(i int, p x402.PaymentPayload) httpapi.Request {
		payment, _ := json.Marshal(p)
		r := request(mcpPath, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"oracle_quick_take",`+
			`"arguments":{"query":"Should I open a bakery on my street?"},"_meta":{"x402/payment":%s}}}`, i+1000, payment), "")
		r.Headers["accept"] = "application/json, text/event-stream"
		r.Headers["mcp-protocol-version"] = "2025-11-25"
		return r
	}, func(resp httpapi.Response) bool {
		return resp.StatusCode == http.StatusOK && strings.Contains(resp.Body, `"status":"pending"`)
	})
}
