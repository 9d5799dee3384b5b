package crosscheck

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"42sisters.ai/oracle/shared/oracle"
)

// Compile-time proof that neither the check nor the formula takes Φ or Ω as
// a parameter (VC-6: the constants cannot be overridden).
var (
	_ func(oracle.Tier, []byte) Decision = Check
	_ func(eD, vR, vT float64) float64   = Coherence
)

const (
	goodSummary  = "Demand is real, the channel is underserved, and the format fits."
	goodAnalysis = "Executive appetite for the signal exists and is growing."
	tol          = 1e-12
)

func mustJSON(v any) []byte {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return raw
}

// notes builds a breakdown of the five dimensions, in oracle.Dimensions
// order, all with the same analysis.
func notes(verdicts [5]string, analysis string) map[string]any {
	bd := map[string]any{}
	for i, dim := range oracle.Dimensions {
		bd[dim] = map[string]any{"verdict": verdicts[i], "analysis": analysis}
	}
	return bd
}

func all(v string) [5]string { return [5]string{v, v, v, v, v} }

var mixed = [5]string{"GREEN", "AMBER", "RED", "AMBER", "GREEN"}

func strategyBlock(tests int) map[string]any {
	list := []string{}
	for i := range tests {
		list = append(list, strings.Repeat("Run a ninety-day delivery-only pilot. ", i+1))
	}
	return map[string]any{
		"next_step":   "Model the unit economics at 60% occupancy before signing any lease.",
		"alternative": "License the brand to existing kitchens instead of buying real estate.",
		"tests":       list,
	}
}

func quick(verdict, summary string) []byte {
	return mustJSON(map[string]any{"verdict": verdict, "summary": summary})
}

func full(verdict, summary string, bd map[string]any) []byte {
	return mustJSON(map[string]any{"verdict": verdict, "summary": summary, "breakdown": bd})
}

func strategy(verdict, summary string, bd, st map[string]any) []byte {
	return mustJSON(map[string]any{"verdict": verdict, "summary": summary, "breakdown": bd, "strategy": st})
}

// with returns a copy of the JSON object raw with key set to value (or
// removed when value is the remove sentinel).
type removeT struct{}

var remove removeT

func with(raw []byte, key string, value any) []byte {
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		panic(err)
	}
	if _, ok := value.(removeT); ok {
		delete(doc, key)
	} else {
		doc[key] = value
	}
	return mustJSON(doc)
}

type want struct {
	approved bool
	reason   Reason
	eD       float64
	vR       float64
	vT       float64
	c        float64
	label    string
	flags    []string
}

func checkDecision(t *testing.T, got Decision, w want) {
	t.Helper()
	if got.Approved != w.approved {
		t.Errorf("approved = %v, want %v (C = %v)", got.Approved, w.approved, got.CoherenceScore)
	}
	if got.Reason != w.reason {
		t.Errorf("reason = %q, want %q", got.Reason, w.reason)
	}
	if got.ED != w.eD || got.VR != w.vR || got.VT != w.vT {
		t.Errorf("(E_D, V_r, V_t) = (%v, %v, %v), want (%v, %v, %v)", got.ED, got.VR, got.VT, w.eD, w.vR, w.vT)
	}
	if math.Abs(got.CoherenceScore-w.c) > tol {
		t.Errorf("C = %.15f, want %.15f", got.CoherenceScore, w.c)
	}
	if got.CoherenceScore != Coherence(got.ED, got.VR, got.VT) {
		t.Errorf("C = %v is not Coherence(%v, %v, %v)", got.CoherenceScore, got.ED, got.VR, got.VT)
	}
	if got.Threshold != OMEGA {
		t.Errorf("threshold = %v, want OMEGA", got.Threshold)
	}
	if got.VerdictLabel != w.label {
		t.Errorf("verdict_label = %q, want %q", got.VerdictLabel, w.label)
	}
	if got.Flags == nil {
		t.Error("flags is nil, want a non-nil slice")
	}
	if !slices.Equal(got.Flags, w.flags) {
		t.Errorf("flags = %q, want %q", got.Flags, w.flags)
	}
	// The majority rule decides only a dimension_conflict the formula would
	// have approved; everything else is the formula's.
	wantRule := RuleFormula
	if !w.approved && w.reason == ReasonDimensionConflict && w.c >= OMEGA {
		wantRule = RuleMajority
	}
	if got.Rule != wantRule {
		t.Errorf("rule = %q, want %q", got.Rule, wantRule)
	}
}

// c computes the expected score independently of Coherence.
func c(eD, vR, vT float64) float64 { return 1 - (eD+vR*0.042)/vT }

func TestCheck(t *testing.T) {
	fullOK := full("GREEN", goodSummary, notes(mixed, goodAnalysis))
	strategyOK := strategy("AMBER", goodSummary, notes(mixed, goodAnalysis), strategyBlock(3))

	// The spec's "severely malformed" example (V_t 2, V_r 5.5, E_D 0.5): a
	// GREEN full breakdown with a one-letter summary whose five dimensions
	// are all RED without analysis, one of them lacking the key altogether.
	severe := notes(all("RED"), "")
	severe["Curvature"] = map[string]any{"verdict": "RED"}
	// The same numbers reached in the strategy tier: a NULL verdict over a
	// GREEN/AMBER breakdown, four analyses empty, an empty strategy block.
	severeNull := notes([5]string{"GREEN", "GREEN", "AMBER", "GREEN", "AMBER"}, "")
	severeNull["Stability"] = map[string]any{"verdict": "GREEN", "analysis": goodAnalysis}

	threeOfFive := notes([5]string{"RED", "RED", "GREEN", "x", "x"}, goodAnalysis)
	threeOfFive["Completion"] = "RED" // not an object: missing
	threeOfFive["Curvature"] = nil    // null: missing

	halfSplit := notes([5]string{"RED", "RED", "GREEN", "GREEN", "green"}, goodAnalysis)

	cases := []struct {
		name string
		tier oracle.Tier
		raw  []byte
		want want
	}{
		// VC-1 and the spec's first worked example.
		{"VC-1 perfect quick take", oracle.TierQuick, quick("GREEN", goodSummary),
			want{true, ReasonPass, 0, 0, 2, 1, "GREEN", nil}},
		{"perfect full breakdown", oracle.TierFull, fullOK,
			want{true, ReasonPass, 0, 0, 7, 1, "GREEN", nil}},
		{"perfect strategy session", oracle.TierStrategy, strategyOK,
			want{true, ReasonPass, 0, 0, 10.5, 1, "AMBER", nil}},

		// VC-2: verdict missing and summary empty, in every tier. The quick
		// case has C = −0.042 < 0, yet the reason is field_missing.
		{"VC-2 quick", oracle.TierQuick, []byte(`{"summary": ""}`),
			want{false, ReasonFieldMissing, 1, 1, 1, c(1, 1, 1), LabelUnknown,
				[]string{"field_missing:verdict", "short_summary", "degenerate_manifold"}}},
		{"VC-2 quick, verdict null", oracle.TierQuick, []byte(`{"verdict": null, "summary": ""}`),
			want{false, ReasonFieldMissing, 1, 1, 1, c(1, 1, 1), LabelUnknown,
				[]string{"field_missing:verdict", "short_summary", "degenerate_manifold"}}},
		{"VC-2 full", oracle.TierFull, with(full("GREEN", "", notes(mixed, goodAnalysis)), "verdict", remove),
			want{false, ReasonFieldMissing, 1, 1, 5, c(1, 1, 5), LabelUnknown,
				[]string{"field_missing:verdict", "short_summary"}}},
		{"VC-2 strategy", oracle.TierStrategy, with(strategy("GREEN", "", notes(mixed, goodAnalysis), strategyBlock(3)), "verdict", remove),
			want{false, ReasonFieldMissing, 1, 1, 8.5, c(1, 1, 8.5), LabelUnknown,
				[]string{"field_missing:verdict", "short_summary"}}},

		// VC-3: top-level GREEN, all five dimensions RED. V_r = 2 and
		// C = 1 − 0.084/7 ≈ 0.988 ≥ Ω: the formula would pass it; the
		// majority rule rejects it (TestVC3WorstCaseConflict).
		{"VC-3 GREEN over five RED", oracle.TierFull, full("GREEN", goodSummary, notes(all("RED"), goodAnalysis)),
			want{false, ReasonDimensionConflict, 0, 2, 7, c(0, 2, 7), "GREEN", []string{"top_level_conflict"}}},
		// The spec's second worked example: conflict plus a short summary.
		{"conflict and short summary (≈0.982)", oracle.TierFull, full("GREEN", "Go for it", notes(all("RED"), goodAnalysis)),
			want{false, ReasonDimensionConflict, 0, 3, 7, 0.982, "GREEN", []string{"short_summary", "top_level_conflict"}}},
		// A one-step conflict is the formula's alone.
		{"GREEN over mostly AMBER passes the formula", oracle.TierFull, full("GREEN", "Go for it", notes(all("AMBER"), goodAnalysis)),
			want{true, ReasonPass, 0, 3, 7, 0.982, "GREEN", []string{"short_summary", "top_level_conflict"}}},
		// The spec's third worked example, from two real payloads.
		{"severely malformed full (≈0.635)", oracle.TierFull, full("GREEN", "x", severe),
			want{false, ReasonFieldMissing, 0.5, 5.5, 2, 1 - 0.731/2, "GREEN", []string{
				"short_summary", "empty_analysis:Stability", "empty_analysis:Turbulence", "empty_analysis:Change Rate",
				"empty_analysis:Completion", "field_missing:breakdown.Curvature.analysis", "empty_analysis:Curvature",
				"top_level_conflict"}}},
		{"severely malformed strategy (≈0.635)", oracle.TierStrategy, strategy("NULL", "", severeNull, map[string]any{}),
			want{false, ReasonFieldMissing, 0.5, 5.5, 2, 1 - 0.731/2, "NULL", []string{
				"short_summary", "empty_analysis:Turbulence", "empty_analysis:Change Rate", "empty_analysis:Completion",
				"empty_analysis:Curvature", "contradictory_null", "field_missing:strategy.next_step",
				"field_missing:strategy.alternative", "field_missing:strategy.tests", "too_few_tests"}}},

		// Conflict as the rejection reason: the analyses are empty, so the
		// dimensions add no evidence and the inconsistencies weigh more.
		{"dimension_conflict", oracle.TierFull, full("GREEN", goodSummary, notes(all("RED"), " ")),
			want{false, ReasonDimensionConflict, 0, 4.5, 2, c(0, 4.5, 2), "GREEN", []string{
				"empty_analysis:Stability", "empty_analysis:Turbulence", "empty_analysis:Change Rate",
				"empty_analysis:Completion", "empty_analysis:Curvature", "top_level_conflict"}}},
		{"low_coherence: quick with empty summary", oracle.TierQuick, quick("GREEN", ""),
			want{false, ReasonLowCoherence, 0, 1, 1, c(0, 1, 1), "GREEN", []string{"short_summary"}}},
		{"quick with a short summary passes", oracle.TierQuick, quick("RED", "No."),
			want{true, ReasonPass, 0, 1, 2, c(0, 1, 2), "RED", []string{"short_summary"}}},

		// Majority: strictly more than half of the present dimensions.
		{"no majority label: no conflict", oracle.TierFull, full("GREEN", goodSummary, notes([5]string{"RED", "RED", "AMBER", "AMBER", "GREEN"}, goodAnalysis)),
			want{true, ReasonPass, 0, 0, 7, 1, "GREEN", nil}},
		{"majority agrees with top level", oracle.TierFull, full("RED", goodSummary, notes([5]string{"RED", "RED", "RED", "AMBER", "GREEN"}, goodAnalysis)),
			want{true, ReasonPass, 0, 0, 7, 1, "RED", nil}},
		{"majority of three present dimensions", oracle.TierFull, full("GREEN", goodSummary, threeOfFive),
			want{false, ReasonFieldMissing, 0.5, 2, 5, c(0.5, 2, 5), "GREEN", []string{
				"field_missing:breakdown.Completion", "field_missing:breakdown.Curvature", "top_level_conflict"}}},
		{"exactly half is not a majority", oracle.TierFull, full("AMBER", goodSummary, halfSplit),
			want{false, ReasonFieldMissing, 0.5, 0, 6, c(0.5, 0, 6), "AMBER", []string{"verdict_invalid:Curvature"}}},

		// Invariant 8: NULL is a valid verdict.
		{"NULL over a mixed breakdown", oracle.TierFull, full("NULL", goodSummary, notes(mixed, goodAnalysis)),
			want{true, ReasonPass, 0, 0, 7, 1, "NULL", nil}},
		{"NULL over mostly RED", oracle.TierFull, full("NULL", goodSummary, notes(all("RED"), goodAnalysis)),
			want{true, ReasonPass, 0, 0, 7, 1, "NULL", nil}},
		{"NULL over NULL dimensions", oracle.TierFull, full("NULL", goodSummary, notes(all("NULL"), goodAnalysis)),
			want{true, ReasonPass, 0, 0, 7, 1, "NULL", nil}},
		{"contradictory NULL over GREEN", oracle.TierFull, full("NULL", goodSummary, notes(all("GREEN"), goodAnalysis)),
			want{true, ReasonPass, 0, 1.5, 7, c(0, 1.5, 7), "NULL", []string{"contradictory_null"}}},
		{"contradictory NULL over GREEN and AMBER", oracle.TierStrategy,
			strategy("NULL", goodSummary, notes([5]string{"GREEN", "AMBER", "AMBER", "GREEN", "AMBER"}, goodAnalysis), strategyBlock(3)),
			want{true, ReasonPass, 0, 1.5, 10.5, c(0, 1.5, 10.5), "NULL", []string{"contradictory_null"}}},
		{"contradictory NULL without analyses", oracle.TierFull, full("NULL", goodSummary, notes(all("GREEN"), "")),
			want{false, ReasonLowCoherence, 0, 4, 2, c(0, 4, 2), "NULL", []string{
				"empty_analysis:Stability", "empty_analysis:Turbulence", "empty_analysis:Change Rate",
				"empty_analysis:Completion", "empty_analysis:Curvature", "contradictory_null"}}},

		// Strategy tier.
		{"strategy block missing", oracle.TierStrategy, fullOK,
			want{false, ReasonFieldMissing, 0.5, 2, 7, c(0.5, 2, 7), "GREEN", []string{"field_missing:strategy", "strategy_missing"}}},
		{"strategy block null", oracle.TierStrategy, with(fullOK, "strategy", nil),
			want{false, ReasonFieldMissing, 0.5, 2, 7, c(0.5, 2, 7), "GREEN", []string{"field_missing:strategy", "strategy_missing"}}},
		{"strategy with one test", oracle.TierStrategy, strategy("AMBER", goodSummary, notes(mixed, goodAnalysis), strategyBlock(1)),
			want{true, ReasonPass, 0, 1, 9.5, c(0, 1, 9.5), "AMBER", []string{"too_few_tests"}}},
		{"strategy with two tests", oracle.TierStrategy, strategy("AMBER", goodSummary, notes(mixed, goodAnalysis), strategyBlock(2)),
			want{true, ReasonPass, 0, 0, 10, 1, "AMBER", nil}},
		{"strategy with five tests scores three", oracle.TierStrategy, strategy("AMBER", goodSummary, notes(mixed, goodAnalysis), strategyBlock(5)),
			want{true, ReasonPass, 0, 0, 10.5, 1, "AMBER", nil}},
		{"blank tests do not count", oracle.TierStrategy, strategy("AMBER", goodSummary, notes(mixed, goodAnalysis),
			map[string]any{"next_step": "Do it.", "alternative": "Or not.", "tests": []any{"", "  ", 7, "Pilot it."}}),
			want{true, ReasonPass, 0, 1, 9.5, c(0, 1, 9.5), "AMBER", []string{"too_few_tests"}}},
		{"strategy block ignored in full tier", oracle.TierFull, with(fullOK, "strategy", "nonsense"),
			want{true, ReasonPass, 0, 0, 7, 1, "GREEN", nil}},
		{"breakdown ignored in quick tier", oracle.TierQuick, full("GREEN", goodSummary, notes(all("RED"), "")),
			want{true, ReasonPass, 0, 0, 2, 1, "GREEN", nil}},

		// Missing and invalid fields.
		{"breakdown missing", oracle.TierFull, quick("GREEN", goodSummary),
			want{false, ReasonFieldMissing, 0.5, 0, 2, c(0.5, 0, 2), "GREEN", []string{"field_missing:breakdown"}}},
		{"summary not a string", oracle.TierQuick, with(quick("GREEN", ""), "summary", 42),
			want{false, ReasonFieldMissing, 0.5, 1, 1, c(0.5, 1, 1), "GREEN", []string{"field_missing:summary", "short_summary"}}},
		{"verdict lower case", oracle.TierQuick, quick("green", goodSummary),
			want{false, ReasonFieldMissing, 1, 0, 1, 0, LabelUnknown, []string{"verdict_invalid"}}},
		{"verdict with spaces", oracle.TierFull, full(" GREEN", goodSummary, notes(mixed, goodAnalysis)),
			want{false, ReasonFieldMissing, 1, 0, 6, c(1, 0, 6), LabelUnknown, []string{"verdict_invalid"}}},
		{"verdict not a string", oracle.TierQuick, with(quick("GREEN", goodSummary), "verdict", true),
			want{false, ReasonFieldMissing, 1, 0, 1, 0, LabelUnknown, []string{"verdict_invalid"}}},
		{"empty object", oracle.TierStrategy, []byte(`{}`),
			want{false, ReasonFieldMissing, 1, 3, 1, c(1, 3, 1), LabelUnknown, []string{
				"field_missing:verdict", "field_missing:summary", "short_summary", "field_missing:breakdown",
				"field_missing:strategy", "strategy_missing", "degenerate_manifold"}}},

		// Summary length is counted in runes after trimming.
		{"nine runes in eighteen bytes is short", oracle.TierQuick, quick("GREEN", "ééééééééé"),
			want{true, ReasonPass, 0, 1, 2, c(0, 1, 2), "GREEN", []string{"short_summary"}}},
		{"ten runes is not short", oracle.TierQuick, quick("GREEN", "éééééééééé"),
			want{true, ReasonPass, 0, 0, 2, 1, "GREEN", nil}},
		{"padding does not count", oracle.TierQuick, quick("GREEN", "   Go for it   \n"),
			want{true, ReasonPass, 0, 1, 2, c(0, 1, 2), "GREEN", []string{"short_summary"}}},

		// Loose reading of a well-formed object.
		{"unknown keys and huge numbers ignored", oracle.TierQuick, with(quick("GREEN", goodSummary), "x", json.RawMessage(`1e400`)),
			want{true, ReasonPass, 0, 0, 2, 1, "GREEN", nil}},
		{"last duplicate key wins", oracle.TierQuick, []byte(`{"verdict":"BLUE","verdict":"RED","summary":"` + goodSummary + `"}`),
			want{true, ReasonPass, 0, 0, 2, 1, "RED", nil}},
		{"keys are case-sensitive", oracle.TierQuick, []byte(`{"Verdict":"RED","summary":"` + goodSummary + `"}`),
			want{false, ReasonFieldMissing, 1, 0, 1, 0, LabelUnknown, []string{"field_missing:verdict"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkDecision(t, Check(tc.tier, tc.raw), tc.want)
		})
	}
}

// Malformed JSON: E_D = 2, V_t forced to 1, C = −1, never approved. The
// score is negative, so the reason is degenerate_manifold (failure mode 6).
func TestCheckMalformed(t *testing.T) {
	malformed := map[string]string{
		"truncated":        `{"verdict": "GREEN", "summary": "Demand is re`,
		"empty":            ``,
		"white space":      " \n\t",
		"markdown fence":   "```json\n{\"verdict\":\"GREEN\",\"summary\":\"" + goodSummary + "\"}\n```",
		"trailing data":    `{"verdict":"GREEN","summary":"` + goodSummary + `"} and more`,
		"two objects":      `{"verdict":"GREEN","summary":"` + goodSummary + `"}{}`,
		"array":            `[{"verdict":"GREEN","summary":"` + goodSummary + `"}]`,
		"bare string":      `"GREEN"`,
		"null":             `null`,
		"invalid UTF-8":    "{\"verdict\":\"GREEN\",\"summary\":\"" + goodSummary + "\xff\"}",
		"single quotes":    `{'verdict':'GREEN'}`,
		"trailing comma":   `{"verdict":"GREEN","summary":"` + goodSummary + `",}`,
		"unquoted verdict": `{"verdict":GREEN}`,
	}
	for name, raw := range malformed {
		for _, tier := range oracle.Tiers() {
			t.Run(name+"/"+string(tier), func(t *testing.T) {
				checkDecision(t, Check(tier, []byte(raw)), want{false, ReasonDegenerateManifold, 2, 0, 1, -1, LabelUnknown,
					[]string{"malformed_json", "degenerate_manifold"}})
			})
		}
	}
}

func TestCheckInvalidTier(t *testing.T) {
	for _, tier := range []oracle.Tier{"", "Quick", "quick ", "enterprise"} {
		checkDecision(t, Check(tier, quick("GREEN", goodSummary)), want{false, ReasonDegenerateManifold, 2, 0, 1, -1, LabelUnknown,
			[]string{"tier_invalid", "degenerate_manifold"}})
	}
}

// Every reply oracle.ParseAnalysis accepts passes the formula: it has all
// fields (E_D 0, V_t at its maximum, no empty analysis, three tests), so its
// V_r is at most a conflict (2.0) or a contradictory NULL (1.5) plus a short
// summary (1.0), and C ≥ 1 − 3×0.042/7 ≈ 0.982 > Ω. With the strict parser
// upstream, the formula therefore rejects only what the parser already
// refuses; of what the parser accepts, the crosscheck rejects only a
// contradiction, by the majority rule.
func TestStrictReplyPassesTheFormula(t *testing.T) {
	cases := []struct {
		tier          oracle.Tier
		raw           []byte
		vR            float64
		contradiction bool
	}{
		{oracle.TierQuick, quick("GREEN", "Go."), 1, false},
		{oracle.TierFull, full("GREEN", "Go.", notes(all("RED"), goodAnalysis)), 3, true},
		{oracle.TierFull, full("NULL", "Go.", notes(all("GREEN"), goodAnalysis)), 2.5, false},
		{oracle.TierFull, full("AMBER", "Go.", notes(all("RED"), goodAnalysis)), 3, false},
		{oracle.TierStrategy, strategy("RED", "Go.", notes(all("GREEN"), goodAnalysis), strategyBlock(3)), 3, true},
	}
	for _, tc := range cases {
		if _, err := oracle.ParseAnalysis(tc.tier, tc.raw); err != nil {
			t.Fatalf("%s: the strict parser refuses the case: %v", tc.tier, err)
		}
		d := Check(tc.tier, tc.raw)
		if d.CoherenceScore < OMEGA || d.VR != tc.vR || d.ED != 0 {
			t.Errorf("%s: V_r %v, E_D %v, C %v; want C ≥ Ω, V_r %v, E_D 0", tc.tier, d.VR, d.ED, d.CoherenceScore, tc.vR)
		}
		wantRule := RuleFormula
		if tc.contradiction {
			wantRule = RuleMajority
		}
		if d.Approved == tc.contradiction || d.Rule != wantRule || (d.Contradiction != nil) != tc.contradiction {
			t.Errorf("%s: approved %v by rule %q, contradiction %+v; want approved %v by rule %q",
				tc.tier, d.Approved, d.Rule, d.Contradiction, !tc.contradiction, wantRule)
		}
	}
}

// The majority rule: which top-level verdicts contradict the majority of
// their dimensions. Every breakdown here is complete and the summary long,
// so the formula approves each one (C ≥ 0.988): only the rule decides.
func TestMajorityRule(t *testing.T) {
	const G, A, R, N = "GREEN", "AMBER", "RED", "NULL"
	cases := []struct {
		top  string
		dims [5]string
		// majority and holders are the contradiction's, "" for none.
		majority string
		holders  []string
	}{
		// GREEN against RED, and RED against GREEN: the two ends of the scale.
		{G, [5]string{R, R, R, R, R}, R, oracle.Dimensions},
		{G, [5]string{R, R, R, G, G}, R, []string{"Stability", "Turbulence", "Change Rate"}},
		{G, [5]string{G, R, R, A, R}, R, []string{"Turbulence", "Change Rate", "Curvature"}},
		{R, [5]string{G, G, G, G, G}, G, oracle.Dimensions},
		{R, [5]string{A, G, G, R, G}, G, []string{"Turbulence", "Change Rate", "Curvature"}},
		// Two of five is no majority, whatever the rest are.
		{G, [5]string{R, R, A, A, G}, "", nil},
		{G, [5]string{R, R, N, N, G}, "", nil},
		{R, [5]string{G, G, N, A, A}, "", nil},
		// One step is not a contradiction: GREEN or RED over AMBER, AMBER
		// over anything.
		{G, [5]string{A, A, A, A, A}, "", nil},
		{R, [5]string{A, A, A, G, G}, "", nil},
		{A, [5]string{G, G, G, G, G}, "", nil},
		{A, [5]string{R, R, R, R, R}, "", nil},
		// NULL is off the scale: a NULL top never contradicts, and a NULL
		// majority holds no colour.
		{N, [5]string{G, G, G, G, G}, "", nil},
		{N, [5]string{R, R, R, R, R}, "", nil},
		{G, [5]string{N, N, N, R, R}, "", nil},
		{R, [5]string{N, N, N, N, G}, "", nil},
		// Agreement.
		{G, [5]string{G, G, G, R, R}, "", nil},
		{R, [5]string{R, R, R, G, G}, "", nil},
	}
	for _, tc := range cases {
		for _, tier := range []oracle.Tier{oracle.TierFull, oracle.TierStrategy} {
			t.Run(fmt.Sprintf("%s/%s over %v", tier, tc.top, tc.dims), func(t *testing.T) {
				raw := full(tc.top, goodSummary, notes(tc.dims, goodAnalysis))
				if tier == oracle.TierStrategy {
					raw = strategy(tc.top, goodSummary, notes(tc.dims, goodAnalysis), strategyBlock(3))
				}
				d := Check(tier, raw)
				if d.ED != 0 || d.CoherenceScore < OMEGA {
					t.Fatalf("the formula rejects the case: E_D %v, C %v", d.ED, d.CoherenceScore)
				}
				if tc.majority == "" {
					if !d.Approved || d.Reason != ReasonPass || d.Rule != RuleFormula || d.Contradiction != nil {
						t.Errorf("approved %v, reason %q, rule %q, contradiction %+v; want approved by the formula",
							d.Approved, d.Reason, d.Rule, d.Contradiction)
					}
					return
				}
				want := Contradiction{Verdict: oracle.Verdict(tc.top), Majority: oracle.Verdict(tc.majority), Dimensions: tc.holders, Present: 5}
				if d.Approved || d.Reason != ReasonDimensionConflict || d.Rule != RuleMajority || d.Contradiction == nil ||
					d.Contradiction.Verdict != want.Verdict || d.Contradiction.Majority != want.Majority ||
					!slices.Equal(d.Contradiction.Dimensions, want.Dimensions) || d.Contradiction.Present != want.Present {
					t.Errorf("approved %v, reason %q, rule %q, contradiction %+v; want rejected by the majority rule with %+v",
						d.Approved, d.Reason, d.Rule, d.Contradiction, want)
				}
			})
		}
	}
	// The quick tier has no dimensions, even when the reply carries some.
	if d := Check(oracle.TierQuick, full(G, goodSummary, notes(all(R), goodAnalysis))); !d.Approved || d.Contradiction != nil {
		t.Errorf("quick tier: %+v, want approved without a contradiction", d)
	}
	// The majority counts the present dimensions only: with two missing,
	// two RED of three present is a majority (the formula rejects the reply
	// for its missing fields, and the contradiction is still reported).
	partial := notes([5]string{R, R, G, G, G}, goodAnalysis)
	delete(partial, "Completion")
	delete(partial, "Curvature")
	d := Check(oracle.TierFull, full(G, goodSummary, partial))
	if d.Approved || d.Rule != RuleFormula || d.Reason != ReasonFieldMissing || d.Contradiction == nil || d.Contradiction.Present != 3 {
		t.Errorf("partial breakdown: %+v, want rejected by the formula (field_missing) with the contradiction over 3 present", d)
	}
}

// VC-3, with the spec's worst-case conflict payload: a complete Full
// Breakdown, top-level GREEN, all five dimensions RED. V_r = 2.0 (the
// conflict), V_t = 7, E_D = 0, so C = 1 − 2×0.042/7 = 0.988 ≥ Ω: the
// formula alone would deliver it. The majority rule rejects it.
func TestVC3WorstCaseConflict(t *testing.T) {
	d := Check(oracle.TierFull, full("GREEN", goodSummary, notes(all("RED"), goodAnalysis)))
	if d.VR != 2 || d.VT != 7 || d.ED != 0 {
		t.Fatalf("(V_r, V_t, E_D) = (%v, %v, %v), want (2, 7, 0)", d.VR, d.VT, d.ED)
	}
	if got := fmt.Sprintf("%.3f", d.CoherenceScore); got != "0.988" || d.CoherenceScore < OMEGA {
		t.Fatalf("C = %v (%s), want 0.988, above Ω", d.CoherenceScore, got)
	}
	if d.Approved || d.Reason != ReasonDimensionConflict || d.Rule != RuleMajority {
		t.Fatalf("approved %v, reason %q, rule %q; want rejected: dimension_conflict by the majority rule", d.Approved, d.Reason, d.Rule)
	}
}

// Failure mode 6: a negative C is a hard fail whatever Ω is.
func TestNegativeCoherence(t *testing.T) {
	got := Check(oracle.TierQuick, []byte(`{"verdict":`))
	if got.CoherenceScore >= 0 || got.Approved || got.Reason != ReasonDegenerateManifold {
		t.Errorf("malformed reply: C = %v, approved %v, reason %q; want C < 0, rejected, degenerate_manifold",
			got.CoherenceScore, got.Approved, got.Reason)
	}
	// A parsed reply with C < 0 is rejected and flagged degenerate, but VC-2
	// makes field_missing its reason.
	got = Check(oracle.TierQuick, []byte(`{"verdict":"BLUE","summary":"short"}`))
	if got.CoherenceScore >= 0 || got.Approved || got.Reason != ReasonFieldMissing || !slices.Contains(got.Flags, FlagDegenerateManifold) {
		t.Errorf("invalid verdict, short summary: %+v; want C < 0, rejected, field_missing, flagged degenerate_manifold", got)
	}
}

// The spec's worked examples, on the formula alone.
func TestCoherence(t *testing.T) {
	cases := []struct {
		eD, vR, vT, want float64
	}{
		{0, 0, 2, 1},                   // clean quick take
		{0, 3, 7, 1 - 0.126/7},         // ≈0.982
		{0.5, 5.5, 2, 1 - 0.731/2},     // ≈0.635
		{2, 0, 1, -1},                  // malformed
		{1, 1, 1, -0.042},              // VC-2 quick
		{0, 100, 1, 1 - 100*0.042},     // V_r far above V_t/Φ
		{0, 2, 7, 1 - 2*0.042/7},       // VC-3
		{0.5, 0, 10.5, 1 - 0.5/10.5},   // best score with a missing field
		{0, 1.5, 7, 1 - 1.5*0.042/7.0}, // contradictory NULL
	}
	for _, tc := range cases {
		if got := Coherence(tc.eD, tc.vR, tc.vT); math.Abs(got-tc.want) > tol {
			t.Errorf("Coherence(%v, %v, %v) = %.15f, want %.15f", tc.eD, tc.vR, tc.vT, got, tc.want)
		}
	}
	if got := Coherence(0, 0, 2); got != 1 {
		t.Errorf("perfect coherence = %v, want exactly 1", got)
	}
	if got := Coherence(0, 3, 7); math.Abs(got-0.982) > 5e-4 || got < OMEGA {
		t.Errorf("second worked example = %v, want ≈0.982 and ≥ Ω", got)
	}
	if got := Coherence(0.5, 5.5, 2); math.Abs(got-0.635) > 5e-4 || got >= OMEGA {
		t.Errorf("third worked example = %v, want ≈0.635 and < Ω", got)
	}
	// Any missing field rejects, even at the largest V_t (10.5).
	if got := Coherence(0.5, 0, 10.5); got >= OMEGA {
		t.Errorf("E_D 0.5 at V_t 10.5 scores %v ≥ Ω", got)
	}
}

// VC-6: the constants.
func TestConstants(t *testing.T) {
	if PHI != 0.042 {
		t.Errorf("PHI = %v, want 0.042", PHI)
	}
	// Computed at run time in float64, not as an exact constant expression.
	phi, golden := 0.042, 1.61803398875
	if want := 1 - phi/golden; math.Abs(OMEGA-want) > 1e-12 {
		t.Errorf("OMEGA = %.15f, want 1 - 0.042/1.61803398875 = %.15f", OMEGA, want)
	}
	if math.Abs(OMEGA-0.97404) > 5e-6 {
		t.Errorf("OMEGA = %.15f, want ≈0.97404", OMEGA)
	}
	for _, tier := range oracle.Tiers() {
		if d := Check(tier, nil); d.Threshold != OMEGA {
			t.Errorf("%s: threshold = %v, want OMEGA", tier, d.Threshold)
		}
	}
}

// The decision encodes as the spec's object plus the audit inputs, with
// flags as [] rather than null.
func TestDecisionJSON(t *testing.T) {
	raw, err := json.Marshal(Check(oracle.TierQuick, quick("GREEN", goodSummary)))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]json.RawMessage
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	keys := make([]string, 0, len(got))
	for k := range got {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	wantKeys := []string{"approved", "coherence_score", "crosscheck_reason", "e_d", "flags", "rule", "threshold", "v_r", "v_t", "verdict_label"}
	if !slices.Equal(keys, wantKeys) {
		t.Errorf("keys = %q, want %q", keys, wantKeys)
	}
	for k, w := range map[string]string{"approved": "true", "coherence_score": "1", "flags": "[]", "crosscheck_reason": `"pass"`, "rule": `"formula"`, "verdict_label": `"GREEN"`} {
		if string(got[k]) != w {
			t.Errorf("%s = %s, want %s", k, got[k], w)
		}
	}
	var threshold float64
	if err := json.Unmarshal(got["threshold"], &threshold); err != nil || threshold != OMEGA {
		t.Errorf("threshold = %s, want OMEGA", got["threshold"])
	}
}

// The decision does not share state between calls.
func TestCheckIsPure(t *testing.T) {
	raw := full("GREEN", "x", notes(all("RED"), ""))
	a, b := Check(oracle.TierFull, raw), Check(oracle.TierFull, raw)
	a.Flags[0] = "changed"
	if b.Flags[0] == "changed" {
		t.Error("two decisions share their flags")
	}
	if c := Check(oracle.TierFull, raw); c.Flags[0] == "changed" {
		t.Error("a decision's flags alias later ones")
	}
}

func FuzzCheck(f *testing.F) {
	seeds := [][]byte{
		quick("GREEN", goodSummary),
		quick("NULL", ""),
		full("GREEN", "x", notes(all("RED"), "")),
		full("NULL", goodSummary, notes(all("GREEN"), goodAnalysis)),
		full("RED", goodSummary, notes(all("GREEN"), goodAnalysis)), // the majority rule
		strategy("AMBER", goodSummary, notes(mixed, goodAnalysis), strategyBlock(3)),
		strategy("NULL", "", notes(mixed, ""), map[string]any{}),
		[]byte(`{}`), []byte(`{"verdict":`), []byte(`[]`), []byte("\xff"),
		[]byte(`{"breakdown":{"Stability":null,"Curvature":{"verdict":7}},"strategy":{"tests":[1,"",null]}}`),
	}
	for _, s := range seeds {
		for i := range oracle.Tiers() {
			f.Add(uint8(i), s)
		}
	}
	f.Fuzz(func(t *testing.T, tierIndex uint8, raw []byte) {
		tiers := append(oracle.Tiers(), "bogus")
		tier := tiers[int(tierIndex)%len(tiers)]
		d := Check(tier, raw)
		c := d.CoherenceScore
		if math.IsNaN(c) || math.IsInf(c, 0) {
			t.Fatalf("non-finite C %v", c)
		}
		if d.Approved && (c < OMEGA || c < 0 || d.Reason != ReasonPass || d.ED != 0 || d.Contradiction != nil) {
			t.Fatalf("approved with C %v, reason %q, E_D %v, contradiction %+v", c, d.Reason, d.ED, d.Contradiction)
		}
		// The majority rule decides only what the formula approves, and
		// only for a contradiction.
		switch d.Rule {
		case RuleMajority:
			if d.Approved || d.Reason != ReasonDimensionConflict || d.Contradiction == nil || c < OMEGA || d.ED != 0 {
				t.Fatalf("majority rule with approved %v, reason %q, contradiction %+v, C %v, E_D %v", d.Approved, d.Reason, d.Contradiction, c, d.ED)
			}
		case RuleFormula:
			if !d.Approved && c >= OMEGA {
				t.Fatalf("the formula rejected C %v ≥ Ω", c)
			}
		default:
			t.Fatalf("rule %q", d.Rule)
		}
		if x := d.Contradiction; x != nil && (!slices.Contains(d.Flags, FlagTopLevelConflict) || 2*len(x.Dimensions) <= x.Present ||
			!((x.Verdict == oracle.VerdictGreen && x.Majority == oracle.VerdictRed) || (x.Verdict == oracle.VerdictRed && x.Majority == oracle.VerdictGreen))) {
			t.Fatalf("contradiction %+v with flags %q", x, d.Flags)
		}
		if !d.Approved && d.Reason == ReasonPass {
			t.Fatal("rejected with reason pass")
		}
		if c < 0 && !slices.Contains(d.Flags, FlagDegenerateManifold) {
			t.Fatalf("C %v < 0 without the degenerate_manifold flag", c)
		}
		if d.Flags == nil || d.Threshold != OMEGA {
			t.Fatalf("flags %v, threshold %v", d.Flags, d.Threshold)
		}
		if c != Coherence(d.ED, d.VR, d.VT) {
			t.Fatalf("C %v is not Coherence(%v, %v, %v)", c, d.ED, d.VR, d.VT)
		}
		maxVT := map[oracle.Tier]float64{oracle.TierQuick: 2, oracle.TierFull: 7, oracle.TierStrategy: 10.5}[tier]
		if d.VT < 1 || d.VT > max(maxVT, 1) || d.VR < 0 || !slices.Contains([]float64{0, 0.5, 1, 2}, d.ED) {
			t.Fatalf("out of range: V_t %v (max %v), V_r %v, E_D %v", d.VT, maxVT, d.VR, d.ED)
		}
		if d.VerdictLabel != LabelUnknown && !validVerdict(d.VerdictLabel) {
			t.Fatalf("verdict_label %q", d.VerdictLabel)
		}
		if _, err := json.Marshal(d); err != nil {
			t.Fatalf("decision does not encode: %v", err)
		}
		// A reply the strict parser accepts is complete, so no field is
		// missing, and its worst inconsistencies still score above Ω (see
		// TestStrictReplyPassesTheFormula): only the majority rule can
		// reject it.
		if _, err := oracle.ParseAnalysis(tier, raw); err == nil && (d.ED != 0 || c < OMEGA || d.Approved != (d.Contradiction == nil)) {
			t.Fatalf("ParseAnalysis accepts the reply but E_D = %v, C = %v, approved %v, contradiction %+v, flags %q", d.ED, c, d.Approved, d.Contradiction, d.Flags)
		}
	})
}

func BenchmarkCheck(b *testing.B) {
	summary := "The economics can work, but only if the lease and the delivery demand check out first."
	bd := map[string]any{}
	for i, dim := range oracle.Dimensions {
		bd[dim] = map[string]any{"verdict": mixed[i], "analysis": strings.Repeat("Delivery demand is steady in dense areas. ", 6)}
	}
	payloads := []struct {
		tier oracle.Tier
		raw  []byte
	}{
		{oracle.TierQuick, quick("AMBER", summary)},
		{oracle.TierFull, full("AMBER", summary, bd)},
		{oracle.TierStrategy, strategy("AMBER", summary, bd, strategyBlock(3))},
		{oracle.TierFull, []byte(`{"verdict": "AMBER", "summary": "The economics can work, but only if the lea`)},
	}
	for i, p := range payloads {
		name := string(p.tier)
		if i == len(payloads)-1 {
			name = "malformed"
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(p.raw)))
			b.ReportAllocs()
			for b.Loop() {
				if d := Check(p.tier, p.raw); d.Approved != (i < len(payloads)-1) {
					b.Fatalf("unexpected decision %+v", d)
				}
			}
		})
	}
}
