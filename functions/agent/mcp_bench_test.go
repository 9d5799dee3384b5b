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
// real handler, as the official clients send it at 2025-11-25, against
// moto and the fake facilitator over HTTP, traced as deployed. own-µs/op
// is the time of Handle less the time in its calls, the same calls as the
// HTTP rail's; beside the local check it holds the MCP path's own work:
// the adapter, the direct path's reading of the call and encoding of its
// answer (mcp_direct.go), the payment's decoding from _meta.
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
