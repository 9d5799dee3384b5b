package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/infra/sam"
)

func TestGoals(t *testing.T) {
	for _, tc := range []struct {
		name          string
		verdict, idle float64
		missed        []string // what the error names; none: no error
	}{
		{"both met", 0.0002, 4.59, nil},
		{"the idle month over", 0.0002, 5.01, []string{"the idle month costs $5.01"}},
		{"a verdict over", 0.0006, 4.59, []string{"a verdict costs $0.000600"}},
		{"both over", 0.0006, 17.03, []string{"a verdict costs", "the idle month costs $17.03"}},
		{"at the goals: not under them", goalPerVerdict, goalIdle, []string{"a verdict costs", "the idle month costs $5.00"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := goals(tc.verdict, tc.idle)
			if (err != nil) != (len(tc.missed) > 0) {
				t.Fatalf("goals(%v, %v) = %v", tc.verdict, tc.idle, err)
			}
			for _, m := range tc.missed {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("%v does not say %q", err, m)
				}
			}
		})
	}
}

// TestRunFailsWhenAGoalIsNotMet runs make cost's command on figures of a
// cheap run and of a dear one: the first passes, so the template's idle
// month is within its goal; the second's verdicts are over theirs, and the
// command fails after printing every figure.
func TestRunFailsWhenAGoalIsNotMet(t *testing.T) {
	for _, tc := range []struct {
		name   string
		emails int // SES's $0.0001 each, for 100 orders
		fails  bool
	}{
		{"a verdict within its goal", 100, false},
		{"a verdict over its goal (ten emails each)", 1000, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			figures := filepath.Join(t.TempDir(), "burst.json")
			b, err := json.Marshal(report{Form: "test", Runs: []measuredRun{{Name: "test", Orders: 100, Emails: tc.emails, Seconds: 1}}})
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(figures, b, 0o600); err != nil {
				t.Fatal(err)
			}
			var out strings.Builder
			err = run([]string{figures}, &out)
			if tc.fails != (err != nil) {
				t.Fatalf("run: %v, want failing %v\n%s", err, tc.fails, out.String())
			}
			if !strings.Contains(out.String(), "COST: $") {
				t.Errorf("the figures were not printed before the verdict:\n%s", out.String())
			}
		})
	}
}

// BenchmarkIdleMonth reports make cost's idle month of template.yaml as a
// deploy of it would bill (USD/month), for make bench's budget: the daily
// smoke test's verdict is priced at its goal's ceiling, as a bench run
// has no burst to measure it.
func BenchmarkIdleMonth(b *testing.B) {
	tmpl, err := sam.Load(filepath.Join(filepath.Dir(provision.TemplatePath()), "template.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	var idle []idleLine
	for i := 0; i < b.N; i++ {
		if idle, _, err = idleMonth(tmpl, goalPerVerdict); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(idleTotal(idle), "USD/month")
}
