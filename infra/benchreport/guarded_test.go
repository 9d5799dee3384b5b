package main

import (
	"strings"
	"testing"
)

// Lines of the three budgets issue 40 guarded, in go test's format; the
// figures are examples, changed to cross each limit.
const (
	requiredLine = "BenchmarkPaymentRequired-2 \t 40000 \t 31250 ns/op \t 9876 B/op \t 61 allocs/op\n"
	idleLine     = "BenchmarkIdleMonth-2 \t 1 \t 2000 ns/op \t 4.57 USD/month\n"
	tracingLine  = "BenchmarkTracingSize-2 \t 1 \t 90000000000 ns/op \t 0.94 AgentFunction-MB \t 1.12 ChatFunction-MB \t 1.12 max-MB\n"
)

func TestGuardedVerdicts(t *testing.T) {
	for _, c := range []struct {
		name, budget, output string
		want                 Verdict
		measured             string
	}{
		{"the 402 within 50 µs", "agent (x402): the 402", requiredLine, Pass, "31.2 µs (61 allocs)"},
		{"the 402 over 50 µs (changed)", "agent (x402): the 402", strings.Replace(requiredLine, "31250 ns/op", "142000 ns/op", 1), Fail, "142.0 µs"},
		{"the 402 not measured", "agent (x402): the 402", idleLine, Missing, "no BenchmarkPaymentRequired"},
		{"the 402 without -benchmem", "agent (x402): the 402", "BenchmarkPaymentRequired-2 \t 40000 \t 31250 ns/op\n", Missing, "reports no allocs/op"},
		{"the idle month under $5", "idle month", idleLine, Pass, "$4.57 a month"},
		{"the idle month over $5 (changed)", "idle month", strings.Replace(idleLine, "4.57", "5.31", 1), Fail, "$5.31 a month"},
		{"the idle month not priced", "idle month", requiredLine, Missing, "no BenchmarkIdleMonth"},
		{"tracing within 1.5 MB everywhere", "bootstrap size: tracing", tracingLine, Pass, "1.12 MB at most (Chat)"},
		{"tracing over 1.5 MB in one (changed)", "bootstrap size: tracing", strings.Replace(tracingLine, "0.94 Agent", "1.71 Agent", 1), Fail, "1.71 MB at most; over: Agent 1.71"},
		{"tracing's share without a function", "bootstrap size: tracing", "BenchmarkTracingSize-2 \t 1 \t 1 ns/op \t 0 max-MB\n", Missing, "reports no function"},
		{"tracing's share not measured", "bootstrap size: tracing", idleLine, Missing, "no BenchmarkTracingSize"},
	} {
		t.Run(c.name, func(t *testing.T) {
			row := verdictOf(t, c.output, c.budget)
			if row.Verdict != c.want || !strings.Contains(row.Measured, c.measured) {
				t.Errorf("%s: %s %q, want %s with %q", row.Budget, row.Verdict, row.Measured, c.want, c.measured)
			}
		})
	}
}
