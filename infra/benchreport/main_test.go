package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
)

// The lines below are real `go test -bench` output, captured on the
// development machine (2 cores, AMD EPYC), except where a case says a
// figure was changed to cross a limit.
const (
	webhookLine   = "BenchmarkWebhookEndToEnd-2   \t      48\t  23722024 ns/op\t     23004 calls-µs/op\t         6.000 calls/op\t         3.114 own-%\t       716.2 own-µs/op\t     22126 wire-µs/op\t  292116 B/op\t    2965 allocs/op"
	agentLine     = "BenchmarkAgentPaidRequest-2   \t      40\t  46152776 ns/op\t     45667 calls-µs/op\t         0.961 own-%\t       438.7 own-µs/op\t  438712 B/op\t    4510 allocs/op"
	mcpLine       = "BenchmarkAgentMCPPaidRequest-2   \t      30\t  84312215 ns/op\t      1061 after-µs/op\t     83230 calls-µs/op\t         0.8751 own-%\t       728.4 own-µs/op\t  790544 B/op\t    4991 allocs/op"
	storeDownLine = "BenchmarkWebhookStoreDown-2   \t       3\t3601678745 ns/op\t      6500 alert-bound-ms\t      3602 answer-ms\t      7500 bound-ms\t      4051 max-ms"
	storeHangLine = "BenchmarkWebhookStoreHangs-2   \t       1\t6010533765 ns/op\t      6010 answer-ms\t      7500 bound-ms\t      6010 max-ms"
	pipelineLine  = "BenchmarkPaidToEmail-2   \t       1\t4547494286 ns/op\t        87.48 floor-ms\t       306.5 max-ms\t       190.9 p50-ms\t       271.7 p95-ms\t         3.106 p95/floor"
	healthLine    = "BenchmarkReconciliation-2   \t       2\t 771266290 ns/op\t        20.00 GetItem/run\t        16.00 Query/run\t        36.00 calls/run\t 1905520 B/op\t   20318 allocs/op"
	englishLine   = "BenchmarkOrdinaryEnglish-2   \t     255\t   4228826 ns/op\t 156.14 MB/s\t         0 false-hits\t      1399 texts\t       0 B/op\t       0 allocs/op"
	precisionLine = "BenchmarkPrecision-2   \t     100\t   1228826 ns/op\t       340.0 sentences\t       280.0 untouched\t         4.000 repaired\t        56.00 held\t         0 held-fr-ru-uk\t        10.00 held-greek\t   1000 B/op\t       10 allocs/op"
	viewsLines    = `BenchmarkViews/plain-2       	 1054626	      1126 ns/op	 148.27 MB/s	       0 B/op	       0 allocs/op
BenchmarkViews/disguise-2    	  308034	      4563 ns/op	  50.85 MB/s	       0 B/op	       0 allocs/op
`
	filterLines = `BenchmarkFilter/quick/clean-2         	 1629386	       874.3 ns/op	 205.89 MB/s	       0 B/op	       0 allocs/op
BenchmarkFilter/quick/dirty-2         	  241820	      4487 ns/op	  44.35 MB/s	     552 B/op	       8 allocs/op
BenchmarkFilter/full/clean-2          	  636766	      3977 ns/op	 173.75 MB/s	       0 B/op	       0 allocs/op
BenchmarkRegexp/quick/clean-2         	    2098	    656728 ns/op	   0.27 MB/s	      42 B/op	       0 allocs/op
BenchmarkRegexp/quick/dirty-2         	    1550	    834903 ns/op	   0.24 MB/s	     256 B/op	       2 allocs/op
BenchmarkRegexp/full/clean-2          	     585	   4259693 ns/op	   0.16 MB/s	     153 B/op	       0 allocs/op
`
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		name  string
		input string
		bench string
		unit  string
		want  float64
		pkg   string
	}{
		{"a result's own metrics", "pkg: 42sisters.ai/oracle/functions/webhook\n" + webhookLine, "BenchmarkWebhookEndToEnd", "own-%", 3.114, "42sisters.ai/oracle/functions/webhook"},
		{"ns/op", webhookLine, "BenchmarkWebhookEndToEnd", "ns/op", 23722024, ""},
		{"a unit with a slash", pipelineLine, "BenchmarkPaidToEmail", "p95/floor", 3.106, ""},
		{"a sub-benchmark, its suffix dropped", filterLines, "BenchmarkFilter/full/clean", "ns/op", 3977, ""},
		{"allocs/op", filterLines, "BenchmarkRegexp/quick/dirty", "allocs/op", 2, ""},
		{"no GOMAXPROCS suffix (-cpu 1)", "BenchmarkWebhookOwnWork \t   41815\t     29893 ns/op", "BenchmarkWebhookOwnWork", "ns/op", 29893, ""},
		{"the median of -count 3", "BenchmarkCheck/quick-2 \t 1 \t 2581 ns/op\nBenchmarkCheck/quick-2 \t 1 \t 2400 ns/op\nBenchmarkCheck/quick-2 \t 1 \t 9000 ns/op", "BenchmarkCheck/quick", "ns/op", 2581, ""},
		{"the median of -count 2", "BenchmarkCheck/quick-2 \t 1 \t 2000 ns/op\nBenchmarkCheck/quick-2 \t 1 \t 3000 ns/op", "BenchmarkCheck/quick", "ns/op", 2500, ""},
		{"logs and verdicts around it", "--- BENCH: BenchmarkPaidToEmail-2\n    pipeline_test.go:75: floor 87.5 ms: 6 GetItem × 3.8 ms\nBenchmarkPaidToEmail\n" + pipelineLine + "\nPASS\nok  \t42sisters.ai/oracle/infra/local/stack\t17.118s", "BenchmarkPaidToEmail", "floor-ms", 87.48, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			rs, err := Parse(strings.NewReader(c.input))
			if err != nil {
				t.Fatal(err)
			}
			r, ok := rs[c.bench]
			if !ok {
				t.Fatalf("no %s in %v", c.bench, rs)
			}
			if got, ok := r.Value(c.unit); !ok || got != c.want {
				t.Errorf("%s %s = %v (%v), want %v", c.bench, c.unit, got, ok, c.want)
			}
			if r.Package != c.pkg {
				t.Errorf("package %q, want %q", r.Package, c.pkg)
			}
		})
	}
}

func TestParseRefusesAMangledResult(t *testing.T) {
	for _, line := range []string{
		"BenchmarkFilter/quick/clean-2 \t 1629386 \t 874.3 ns/op \t 205.89",
		"BenchmarkFilter/quick/clean-2 \t 1629386 \t fast ns/op",
	} {
		if _, err := Parse(strings.NewReader(line)); err == nil {
			t.Errorf("%q parsed", line)
		}
	}
}

// countedLine is the pipeline's line since its path is counted, captured
// on 2026-12-02 on the development machine while other test suites ran.
const countedLine = "BenchmarkPaidToEmail-2   \t       1\t18963812115 ns/op\t       347.7 floor-ms\t      1173 max-ms\t       486.6 p50-ms\t       668.9 p95-ms\t         1.924 p95/floor\t        23.00 requests/order\t        20.00 round-trips\t83137920 B/op\t  527790 allocs/op"

const chatLine = "BenchmarkChatReply-2 \t 300 \t 1625728 ns/op \t 1494 calls-µs/op \t 8.808 own-% \t 131.6 own-µs/op \t 794653 B/op \t 1824 allocs/op\n"

const exchangeLine = "BenchmarkChatExchange-2 \t 100 \t 55353991 ns/op \t 55179 calls-µs/op \t 0.3161 own-% \t 174.4 own-µs/op \t 511897 B/op \t 4864 allocs/op\n"

const hangLine = "BenchmarkHangingCallTimeout-2 \t 4 \t 269964994 ns/op \t 69.2 overshoot-max-ms\n"

// verdictOf is the verdict of the budget named prefix, from output.
func verdictOf(t *testing.T, output, prefix string) Row {
	t.Helper()
	rs, err := Parse(strings.NewReader(output))
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range Judge(rs, Budgets) {
		if strings.HasPrefix(row.Budget, prefix) {
			return row
		}
	}
	t.Fatalf("no budget %q", prefix)
	return Row{}
}

func TestVerdicts(t *testing.T) {
	for _, c := range []struct {
		name, budget, output string
		want                 Verdict
		measured             string // a part of the figure shown
	}{
		{"webhook over 1 %", "webhook", webhookLine, Fail, "3.11 % (716 µs of own work, 23.0 ms of calls)"},
		{"webhook within (own-% changed)", "webhook", strings.Replace(webhookLine, "3.114 own-%", "0.914 own-%", 1), Pass, "0.91 %"},
		{"webhook without its ratio", "webhook", "BenchmarkWebhookEndToEnd-2 \t 67 \t 17128113 ns/op \t 293641 B/op \t 2942 allocs/op", Missing, "reports no own-%"},
		{"webhook not run", "webhook", pipelineLine, Missing, "no BenchmarkWebhookEndToEnd"},
		{"the agent's own work within", "agent (x402)", agentLine, Pass, "0.96 % (439 µs of own work, 45.7 ms of calls)"},
		{"the agent's own work over (changed)", "agent (x402)", strings.Replace(agentLine, "0.961 own-%", "1.22 own-%", 1), Fail, "1.22 %"},
		{"the agent's row reads no MCP figure", "agent (x402)", mcpLine, Missing, "no BenchmarkAgentPaidRequest"},
		{"the MCP path's own work within", "agent over MCP", mcpLine, Pass, "0.88 % (728 µs of own work, 83.2 ms of calls)"},
		{"the MCP path's own work over (changed)", "agent over MCP", strings.Replace(mcpLine, "0.8751 own-%", "1.22 own-%", 1), Fail, "1.22 %"},
		{"the MCP path without its ratio", "agent over MCP", "BenchmarkAgentMCPPaidRequest-2 \t 30 \t 84312215 ns/op \t 790544 B/op \t 4991 allocs/op", Missing, "reports no own-%"},
		{"the MCP path not run", "agent over MCP", agentLine, Missing, "no BenchmarkAgentMCPPaidRequest"},
		{"store down within VC-5's bound", "webhook, store down", storeDownLine, Pass, "0.54× (longest 4.1 s, mean 3.6 s, bound 7.5 s)"},
		{"store down past the bound (changed)", "webhook, store down", strings.Replace(storeDownLine, "4051 max-ms", "9051 max-ms", 1), Fail, "1.21×"},
		{"store down: the alert within VC-1's bound", "webhook, store down: its alert", storeDownLine, Pass, "0.62× (alerted within 4.1 s, bound 6.5 s)"},
		{"store down: the alert past it (changed)", "webhook, store down: its alert", strings.Replace(storeDownLine, "4051 max-ms", "7051 max-ms", 1), Fail, "1.08×"},
		{"store hanging within VC-5's bound", "webhook, store hanging", storeHangLine, Pass, "0.80× (longest 6.0 s, mean 6.0 s, bound 7.5 s)"},
		{"store hanging past it (changed)", "webhook, store hanging", strings.Replace(storeHangLine, "6010 max-ms", "8010 max-ms", 1), Fail, "1.07×"},
		{"store hanging not measured", "webhook, store hanging", storeDownLine, Missing, "no BenchmarkWebhookStoreHangs"},
		{"store down not run", "webhook, store down", webhookLine, Missing, "no BenchmarkWebhookStoreDown"},
		{"pipeline over 1.5× its floor", "pipeline", pipelineLine, Fail, "3.11× (p95 272 ms, floor 87 ms)"},
		{"pipeline within twice its floor, over 1.5× (changed)", "pipeline", strings.Replace(pipelineLine, "3.106 p95/floor", "1.950 p95/floor", 1), Fail, "1.95×"},
		{"pipeline within (p95/floor changed)", "pipeline", strings.Replace(pipelineLine, "3.106 p95/floor", "1.450 p95/floor", 1), Pass, "1.45×"},
		{"the counted floor's p95 over 1.5×", "pipeline", countedLine, Fail, "1.92× (p95 669 ms, floor 348 ms)"},
		{"the path's round trips over 10", "pipeline: round trips", countedLine, Fail, "20 round trips"},
		{"the path's round trips within (changed)", "pipeline: round trips", strings.Replace(countedLine, "20.00 round-trips", "10.00 round-trips", 1), Pass, "10 round trips"},
		{"the path not counted", "pipeline: round trips", pipelineLine, Missing, "reports no round-trips"},
		{"an order's requests over 12", "pipeline: DynamoDB and S3", countedLine, Fail, "23 requests"},
		{"an order's requests within (changed)", "pipeline: DynamoDB and S3", strings.Replace(countedLine, "23.00 requests/order", "12.00 requests/order", 1), Pass, "12 requests"},
		{"an order's requests not counted", "pipeline: DynamoDB and S3", pipelineLine, Missing, "reports no requests/order"},
		{"pipeline before its floor was measured", "pipeline", "BenchmarkPaidToEmail-2 \t 1 \t 4459393628 ns/op \t 299.0 max-ms \t 181.9 p50-ms \t 271.6 p95-ms", Missing, "reports no p95/floor"},
		{"filter far faster than the regexp", "content filter, clean text: regexp", filterLines, Pass, "751× (least: quick)"},
		{"filter under 100× (regexp time changed)", "content filter, clean text: regexp", strings.Replace(filterLines, "656728 ns/op", "65672 ns/op", 1), Fail, "75× (least: quick)"},
		{"filter without its regexp twin", "content filter, clean text: regexp", strings.Split(filterLines, "BenchmarkRegexp")[0], Missing, "no BenchmarkRegexp/full/clean"},
		{"filter not run", "content filter, clean text: regexp", webhookLine, Missing, "no BenchmarkFilter/*/clean"},
		{"no allocation on clean text", "content filter, clean text: alloc", filterLines, Pass, "0 allocs/op (2 benchmarks)"},
		{"an allocation on clean text (changed)", "content filter, clean text: alloc", strings.Replace(filterLines, "173.75 MB/s	       0 B/op	       0 allocs/op", "173.75 MB/s	      16 B/op	       1 allocs/op", 1), Fail, "1 allocs/op (Filter/full)"},
		{"the views allocate nothing", "content filter, clean text: alloc", filterLines + viewsLines, Pass, "0 allocs/op (4 benchmarks)"},
		{"a view allocates (changed)", "content filter, clean text: alloc", filterLines + strings.Replace(viewsLines, "0 B/op	       0 allocs/op", "48 B/op	       2 allocs/op", 1), Fail, "2 allocs/op (Views/plain)"},
		{"ordinary English untouched", "content filter: ordinary", englishLine, Pass, "0 of 1399 texts touched"},
		{"ordinary English touched (changed)", "content filter: ordinary", strings.Replace(englishLine, "0 false-hits", "3 false-hits", 1), Fail, "3 of 1399"},
		{"ordinary English skipped", "content filter: ordinary", filterLines, Missing, "no BenchmarkOrdinaryEnglish"},
		{"other scripts left alone", "content filter: precision", precisionLine, Pass, "0 held (of 340 sentences: 280 untouched, 4 repaired, 56 held, 10 of them Greek)"},
		{"a Russian sentence held (changed)", "content filter: precision", strings.Replace(precisionLine, "0 held-fr-ru-uk", "1 held-fr-ru-uk", 1), Fail, "1 held (of 340"},
		{"the corpus not run", "content filter: precision", englishLine, Missing, "no BenchmarkPrecision"},
		{"health never scans", "health job: Scan", healthLine, Pass, "0 a run"},
		{"health scanned (changed)", "health job: Scan", strings.Replace(healthLine, "16.00 Query/run", "1.00 Scan/run", 1), Fail, "1 a run"},
		{"health reads the stuck orders only", "health job: reads", healthLine, Pass, "20 GetItem a run (36 calls in all)"},
		{"health reads more (changed)", "health job: reads", strings.Replace(healthLine, "20.00 GetItem/run", "200.00 GetItem/run", 1), Fail, "200 GetItem"},
		{"health not run", "health job: reads", filterLines, Missing, "no BenchmarkReconciliation"},
		{"a chat reply's own work within", "chat reply", chatLine, Pass, "8.8 % (132 µs of own work, 1.49 ms of calls)"},
		{"a chat reply's own work over (changed)", "chat reply", strings.Replace(chatLine, "8.808 own-%", "31.2 own-%", 1), Fail, "31.2 %"},
		{"the chat reply not measured", "chat reply", hangLine, Missing, "no BenchmarkChatReply"},
		{"a chat exchange's own work within", "chat exchange", exchangeLine, Pass, "0.32 % (174 µs of own work, 55.2 ms of calls)"},
		{"a chat exchange's own work over (changed)", "chat exchange", strings.Replace(exchangeLine, "0.3161 own-%", "1.2 own-%", 1), Fail, "1.20 %"},
		{"the chat exchange not measured", "chat exchange", chatLine, Missing, "no BenchmarkChatExchange"},
		{"a hanging call returns soon after its timeout", "model call that hangs", hangLine, Pass, "69 ms at most"},
		{"a hanging call returns late (changed)", "model call that hangs", strings.Replace(hangLine, "69.2 overshoot", "612.0 overshoot", 1), Fail, "612 ms at most"},
		{"the hanging call not measured", "model call that hangs", healthLine, Missing, "no BenchmarkHangingCallTimeout"},
	} {
		t.Run(c.name, func(t *testing.T) {
			row := verdictOf(t, c.output, c.budget)
			if row.Verdict != c.want || !strings.Contains(row.Measured, c.measured) {
				t.Errorf("%s: %s %q, want %s with %q", row.Budget, row.Verdict, row.Measured, c.want, c.measured)
			}
		})
	}
}

func TestColdStartVerdicts(t *testing.T) {
	cold := "BenchmarkColdStart/CheckoutFunction-2 \t 3 \t 27736298 ns/op\nBenchmarkColdStart/PagesFunction-2 \t 3 \t 6025349 ns/op\n"
	size := "BenchmarkBootstrapSize-2 \t 1 \t 9000000000 ns/op \t 11.88 CheckoutFunction-MB \t 23.50 GeneratorFunction-MB \t 20.38 MailerFunction-MB \t 23.50 max-MB\n"
	for _, c := range []struct {
		name, budget, output string
		want                 Verdict
		measured             string
	}{
		{"every cold start within", "cold start", cold, Pass, "27.7 ms (slowest: Checkout)"},
		{"one over 50 ms (changed)", "cold start", strings.Replace(cold, "6025349", "85068189", 1), Fail, "85.1 ms (slowest: Pages)"},
		{"cold start not run", "cold start", size, Missing, "no BenchmarkColdStart/*"},
		{"one bootstrap over 15 MB, the generator judged apart", "bootstrap size (", size, Fail, "20.4 MB at most; over: Mailer 20.4"},
		{"the generator over its own ceiling", "bootstrap size of the Gen AI", size, Fail, "23.5 MB at most; over: Generator 23.5"},
		{"every bootstrap within (changed)", "bootstrap size (", "BenchmarkBootstrapSize-2 \t 1 \t 1 ns/op \t 11.88 CheckoutFunction-MB \t 11.88 max-MB", Pass, "11.9 MB at most (Checkout)"},
		{"the generator within its ceiling (changed)", "bootstrap size of the Gen AI", strings.Replace(size, "23.50 GeneratorFunction", "16.94 GeneratorFunction", 1), Pass, "16.9 MB at most (Generator)"},
		{"sizes not reported", "bootstrap size", cold, Missing, "no BenchmarkBootstrapSize"},
	} {
		t.Run(c.name, func(t *testing.T) {
			row := verdictOf(t, c.output, c.budget)
			if row.Verdict != c.want || !strings.Contains(row.Measured, c.measured) {
				t.Errorf("%s: %s %q, want %s with %q", row.Budget, row.Verdict, row.Measured, c.want, c.measured)
			}
		})
	}
}

// TestRun reads a whole `make bench` output (testdata/bench.txt: the
// .build/bench.txt of the run docs/performance.md reports, as it was) and
// checks the exit status and the table around it.
func TestRun(t *testing.T) {
	whole, err := os.ReadFile("testdata/bench.txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		args   []string
		stdin  string
		status int
		says   []string
	}{
		{"the captured run, from a file", []string{"testdata/bench.txt"}, "", 1, []string{"| budget ", "| content filter, clean text: allocations ", "| pass "}},
		{"the captured run, from stdin", nil, string(whole), 1, []string{"| budget "}},
		{"nothing measured", nil, "PASS\n", 1, []string{"MISSING", fmt.Sprintf("0 of %d budgets failed, %d missing their benchmark", len(Budgets), len(Budgets))}},
		{"every budget met (figures changed)", nil, strings.NewReplacer("3.114 own-%", "0.5 own-%", "1.924 p95/floor", "1.5 p95/floor", "20.00 round-trips", "10.00 round-trips", "23.00 requests/order", "12.00 requests/order").Replace(webhookLine + "\n" + agentLine + "\n" + mcpLine + "\n" + storeDownLine + "\n" + storeHangLine + "\n" + countedLine + "\n" + healthLine + "\n" + englishLine + "\n" + precisionLine + "\n" + filterLines +
			"BenchmarkColdStart/CheckoutFunction-2 \t 3 \t 27736298 ns/op\nBenchmarkBootstrapSize-2 \t 1 \t 1 ns/op \t 11.88 CheckoutFunction-MB \t 16.94 GeneratorFunction-MB \t 15.06 HealthFunction-MB \t 16.94 max-MB\n" +
			hangLine + chatLine + exchangeLine + requiredLine + idleLine + tracingLine), 0, []string{fmt.Sprintf("all %d budgets met", len(Budgets))}},
		{"a mangled result", nil, "BenchmarkFilter/quick/clean-2 \t 1629386 \t fast ns/op\n", 2, nil},
		{"no such file", []string{"testdata/none.txt"}, "", 2, nil},
		{"two files", []string{"a", "b"}, "", 2, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out, errs bytes.Buffer
			status := run(c.args, strings.NewReader(c.stdin), &out, &errs)
			if status != c.status {
				t.Errorf("status %d, want %d\n%s%s", status, c.status, out.String(), errs.String())
			}
			for _, s := range c.says {
				if !strings.Contains(out.String(), s) {
					t.Errorf("the report does not say %q:\n%s", s, out.String())
				}
			}
		})
	}
}

func TestTableAlignsItsColumns(t *testing.T) {
	table := Table([]Row{{Budget: "a", Measured: "3.11 % (716 µs)", Limit: "≤ 1 %", Verdict: Fail}, {Budget: "longer budget", Measured: "x", Limit: "0", Verdict: Pass}})
	lines := strings.Split(strings.TrimSuffix(table, "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d lines, want 4:\n%s", len(lines), table)
	}
	for _, l := range lines[1:] {
		if len([]rune(l)) != len([]rune(lines[0])) {
			t.Errorf("ragged table:\n%s", table)
			break
		}
	}
}
