package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/tracing"
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
	provision.AsDeployed(b, "AgentFunction")
	e := newEnvWith(b, func(cfg *aws.Config) { cfg.APIOptions = append(cfg.APIOptions, tracing.AWS) })
	t := &callTimer{}
	e.h.Authorizations = timedAuthorizations{e.h.Authorizations, t}
	e.h.Orders = timedOrders{e.h.Orders, t}
	e.h.Facilitator = timedFacilitator{e.h.Facilitator, t}
	e.h.Payer = timedPayer{e.h.Payer, t}
	e.h.Audit = timedAuditor{e.h.Audit, t}
	e.h.Now = time.Now
	e.clock.Add(time.Until(e.clock.Now()) * -1)
	rx := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.Copy(io.Discard, r.Body) }))
	b.Cleanup(rx.Close)
	api := testkit.NewExtensionsAPI(b)
	p := tracing.Start(tracing.Settings{Service: "agent", URL: rx.URL + "/v1/traces", Timeout: tracing.DefaultTimeout, RuntimeAPI: api.Addr()}, aws.Config{}, e.h.Log)
	api.WaitNext(b)
	handle := tracing.Invocations(p, e.h.Handle)
	ctx := context.Background()
	sepolia, _ := x402.LookupNetwork(x402.NetworkBaseSepolia)
	req := x402.Requirement(sepolia, oracle.TierQuick.PriceUSDCAtomic(), payTo, e.h.MaxTimeout)
	pay := func(i int) (answer, after time.Duration) {
		p, err := x402.NewPayment(wallet(b), req, nil, time.Now(), rand.Reader)
		if err != nil {
			b.Fatal(err)
		}
		payment, _ := json.Marshal(p)
		r := request(mcpPath, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"oracle_quick_take",`+
			`"arguments":{"query":"Should I open a bakery on my street?"},"_meta":{"x402/payment":%s}}}`, i+1000, payment), "")
		r.Headers["accept"] = "application/json, text/event-stream"
		r.Headers["mcp-protocol-version"] = "2025-11-25"
		api.Invoke(b, fmt.Sprint("req-", i))
		b.StartTimer()
		start := time.Now()
		resp, err := handle(ctx, r)
		answered := time.Now()
		b.StopTimer()
		if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(resp.Body, `"status":"pending"`) {
			b.Fatalf("%v %d %s", err, resp.StatusCode, resp.Body)
		}
		api.WaitNext(b)
		return answered.Sub(start), time.Since(answered)
	}
	b.StopTimer()
	for i := range warmPayments {
		pay(-1 - i)
	}
	t.reset()
	var handled, after time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		answer, tail := pay(i)
		handled += answer
		after += tail
	}
	calls, n := t.total(), float64(b.N)
	own := handled - calls
	b.ReportMetric(float64(own.Microseconds())/n, "own-µs/op")
	b.ReportMetric(float64(calls.Microseconds())/n, "calls-µs/op")
	b.ReportMetric(100*float64(own)/float64(calls), "own-%")
	b.ReportMetric(float64(after.Microseconds())/n, "after-µs/op")
}
