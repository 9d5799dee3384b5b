package main

import (
	"context"
	"strings"
	"testing"

	"42sisters.ai/oracle/shared/gemini"
	"42sisters.ai/oracle/shared/oracle"
)

// TestSales works each row of the margins' table out by hand: revenue in
// US dollars at the dated rate, Stripe's fee on a card payment only, the
// verdict's infrastructure on the verdicts only, and the model's tokens
// at Gemini's prices, a chat month as its exchanges times one exchange.
func TestSales(t *testing.T) {
	quick := tokens{In: 1000, Out: 100}
	most := tokens{In: 10000, Out: 500, Thought: 20000}
	verdicts := []verdictTokens{{Tier: oracle.TierQuick, Typical: quick, Most: most}}
	chat := chatCost{Usage: gemini.Usage{PromptTokens: 3000, OutputTokens: 300}, MostInput: 12000, MostOutput: 2800}
	rows := sales(verdicts, chat, 0.0002, 3)
	if len(rows) != 4 {
		t.Fatalf("%d rows, want the card sale, the agent's, and two chat months", len(rows))
	}
	model := func(in, out int) float64 { return float64(in)*0.30/1e6 + float64(out)*2.50/1e6 }
	for i, tc := range []struct {
		what                string
		revenue, fee, infra float64 // Stripe's percentage rounded to the cent: 3 on C$1, 15 on C$5
		typical, atMost     float64 // the model's cost
	}{
		{"Quick Take, C$1.00 by card", 1.00 * usdPerCAD, 0.33 * usdPerCAD, 0.0002, model(1000, 100), model(10000, 20500)},
		{"Quick Take, 0.05 USDC by an agent", 0.05, 0, 0.0002, model(1000, 100), model(10000, 20500)},
		{"a typical month, 60 exchanges", 5 * usdPerCAD, 0.45 * usdPerCAD, 0, 60 * model(3000, 300), 60 * model(12000, 2800)},
		{"the daily cap every day, 90 exchanges", 5 * usdPerCAD, 0.45 * usdPerCAD, 0, 90 * model(3000, 300), 90 * model(12000, 2800)},
	} {
		r := rows[i]
		if !strings.Contains(r.What, tc.what) {
			t.Errorf("row %d is %q, want %q", i, r.What, tc.what)
		}
		fee := tc.fee
		if !near(r.Revenue, tc.revenue) || !near(r.Fee, fee) || !near(r.Infra, tc.infra) ||
			!near(r.Typical.cost(), tc.typical) || !near(r.Most.cost(), tc.atMost) {
			t.Errorf("%s: %+v (typical $%v, at most $%v), want revenue %v fee %v infra %v model %v and %v",
				r.What, r, r.Typical.cost(), r.Most.cost(), tc.revenue, fee, tc.infra, tc.typical, tc.atMost)
		}
		if want := tc.revenue - fee - tc.infra - tc.typical; !near(r.margin(r.Typical), want) {
			t.Errorf("%s: margin %v, want %v", r.What, r.margin(r.Typical), want)
		}
		if want := tc.revenue - fee - tc.infra - tc.atMost; !near(r.margin(r.Most), want) {
			t.Errorf("%s: least margin %v, want %v", r.What, r.margin(r.Most), want)
		}
	}
	var out strings.Builder
	printModel(&out, verdicts, rows)
	for _, s := range []string{GeminiPricesDate, ExchangeRateDate, "Quick Take", "margin", "at a loss at most: Quick Take, 0.05 USDC"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("the table lacks %q:\n%s", s, out.String())
		}
	}
}

// Each tier's verdict is measured with the generator's own request: a
// longer tier's prompt and reply are longer, the ceiling (the longest
// query, the retry, the bounds' reply, the thinking budget) above it.
func TestVerdictTokensAreMeasured(t *testing.T) {
	vs, err := measureVerdicts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 3 {
		t.Fatalf("%d tiers measured", len(vs))
	}
	for i, v := range vs {
		if v.Typical.In < typicalQueryChars/4 || v.Typical.Out == 0 {
			t.Errorf("%s: typical %+v, want the query's tokens in and a reply out", v.Tier, v.Typical)
		}
		if v.Most.In < 2*oracle.MaxQueryUnits/4 || v.Most.Out != 2*((replyChars(v.Tier)+3)/4) || v.Most.Thought != 2*flashThinkingBudget {
			t.Errorf("%s: ceiling %+v", v.Tier, v.Most)
		}
		if i > 0 && (v.Typical.In <= vs[i-1].Typical.In || v.Most.Out <= vs[i-1].Most.Out) {
			t.Errorf("%s costs no more than %s: %+v, %+v", v.Tier, vs[i-1].Tier, v, vs[i-1])
		}
	}
}
