// Package crosscheck scores the model's raw verdict reply for structural
// coherence before it is stored or delivered (SPEC_ORACLE_TMM_CROSSCHECK).
//
// The reply is mapped to the three TMM variables and scored with
//
//	C = 1 − (E_D + V_r×Φ) / V_t,  Φ = PHI = 0.042
//
// and it is approved only when C ≥ Ω (OMEGA = 1 − 0.042/1.61803398875 ≈
// 0.97404) and the top-level verdict does not contradict the majority of
// its dimensions (the majority rule, below). The check is structural only: it cannot tell a plausible but wrong
// verdict from a right one (invariant 7). It is pure: no I/O, no state, no
// logging; the caller writes the oracle_log.jsonl entry from the Decision.
//
// # Reading the reply
//
// The reply is read loosely, so that a malformed or incomplete reply can be
// scored rather than refused: it must be valid UTF-8 holding exactly one JSON
// value, and that value must be an object; anything else (a parse error, a
// markdown fence, trailing data, an array, a bare string) is malformed JSON.
// Keys are matched exactly (case-sensitive); a repeated key keeps its last
// value; unknown keys are ignored. oracle.ParseAnalysis remains the strict
// gate for what is stored; this package only scores.
//
// A field is "missing" when its key is absent, its value is JSON null or its
// value has the wrong JSON type (a summary that is a number, a breakdown that
// is a string). A field that is present with an empty string is not missing:
// the spec's V_t and V_r rules already score emptiness. "Non-empty" means
// non-empty after trimming surrounding white space (strings.TrimSpace).
//
// Only the fields of the requested tier are read: a quick reply is scored on
// verdict and summary alone (V_t at most 2.0), a full reply adds the
// breakdown (at most 7.0), a strategy reply adds the strategy block.
//
// # Required fields per tier
//
//   - quick: verdict, summary
//   - full: verdict, summary, breakdown, and for each of the five
//     oracle.Dimensions the dimension object with its verdict and analysis
//   - strategy: everything full requires, plus strategy with next_step,
//     alternative and tests (an array)
//
// # E_D (decoherence energy)
//
//   - 2.0: malformed JSON (see above), or a tier that is not quick, full or
//     strategy. V_t is forced to 1.0 and V_r is 0.0 (nothing was read), so
//     C = −1: always rejected.
//   - 1.0: the top-level verdict is missing or is not exactly one of GREEN,
//     AMBER, RED, NULL (case-sensitive, no surrounding spaces).
//   - 0.5: otherwise, when any other required field is missing, or a
//     dimension's verdict is present but not one of the four tokens.
//   - 0.0: otherwise.
//
// # V_t (evidence units), floored at 1.0
//
//   - verdict: 1.0 when it is a valid token
//   - summary: 1.0 when non-empty
//   - each dimension whose verdict is a valid token and whose analysis is
//     non-empty: 1.0 (at most 5.0)
//   - strategy.next_step, strategy.alternative: 1.0 each when non-empty
//   - strategy.tests: 0.5 for each non-empty string entry, at most 3 entries
//
// The maxima are therefore 2.0 (quick), 7.0 (full) and 10.5 (strategy).
//
// # V_r (inconsistencies)
//
// A dimension is "present" when its verdict is one of the four tokens.
//
//   - +2.0 top_level_conflict: the top-level verdict is GREEN, AMBER or RED
//     and strictly more than half of the present dimensions share one label
//     that differs from it (2×count > present). With no present dimension, or
//     no label above half, there is no conflict. A top-level NULL is never in
//     conflict: invariant 8 makes contradictory NULL the only NULL penalty.
//   - +0.5 empty_analysis:<Dimension> for each present dimension whose
//     analysis is empty (or missing).
//   - +1.0 short_summary: the summary, trimmed, is empty, missing or shorter
//     than 10 characters, counted as Unicode code points (runes), as
//     oracle.MaxSummaryChars counts them.
//   - +1.5 contradictory_null: the top-level verdict is NULL, at least one
//     dimension is present and every present dimension is GREEN or AMBER.
//   - +2.0 strategy_missing (strategy tier): the strategy block is missing.
//   - +1.0 too_few_tests (strategy tier): the strategy block is present and
//     has fewer than 2 non-empty string tests. A missing block is scored by
//     strategy_missing alone, not twice.
//
// # The majority rule
//
// The formula tolerates a conflict (V_r +2.0 scores C ≈ 0.988 for a GREEN
// verdict over five RED dimensions, above Ω), so a verdict that says the
// opposite of its own breakdown would pass it. The majority rule, the gate
// the spec's dimension_conflict reason names, refuses it. The top-level
// verdict contradicts the majority of its dimensions when it is GREEN and
// strictly more than half of the present dimensions are RED, or it is RED
// and strictly more than half are GREEN: the two ends of the one colour
// scale, as oracle.Diverge counts a significant divergence. Nothing else
// contradicts:
//
//   - AMBER, as the top-level verdict or as the majority, is the scale's
//     middle: mostly GREEN with one thing to fix, or mostly RED with a way
//     through, is what AMBER means; a one-step difference is left to the
//     formula's conflict penalty.
//   - NULL is off the scale. A top-level NULL says the signal is too weak to
//     judge and is never in contradiction (invariant 8; the prompt asks for
//     the dimensions to be judged under it, and contradictory_null is the
//     formula's only NULL penalty). A NULL dimension counts as present but
//     holds no colour, so it can only keep a majority from forming.
//   - The quick tier has no dimensions.
//
// A contradiction is reported in Decision.Contradiction whatever the
// formula decided, so that a retry can name it to the model.
//
// # Decision
//
// Approved is true iff C is finite, C ≥ 0, C ≥ OMEGA and the top-level
// verdict does not contradict the majority of its dimensions. Rule says
// which rule decided: formula when the formula's verdict on C stands (an
// approval, or a rejection by C), majority when the formula approved and
// the majority rule refused. A negative C is a
// hard failure that is never compared to Ω (failure mode 6) and always adds
// the flag degenerate_manifold. The reason of a rejection by the majority
// rule is dimension_conflict; of a rejection by the formula, the first that
// applies of:
//
//  1. field_missing: the reply was parsed but E_D is 0.5 or 1.0. It comes
//     first because VC-2 (verdict missing, summary empty) demands it although
//     that reply also has C < 0; the flags still carry degenerate_manifold.
//  2. degenerate_manifold: C < 0 (or not a number). From Check this is the
//     malformed JSON and invalid tier case (E_D = 2.0, C = −1): with E_D = 0
//     the largest reachable V_r×Φ is well below 1 ≤ V_t, so C stays positive.
//  3. dimension_conflict: the top_level_conflict flag is set.
//  4. low_coherence: anything else.
//
// An approved decision has reason pass, whatever its flags. Since V_t ≤ 10.5,
// any E_D ≥ 0.5 gives C ≤ 0.953 < Ω: a reply with a missing field is never
// approved, and the majority rule only ever decides for a complete reply.
package crosscheck

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"strings"
	"unicode/utf8"

	"42sisters.ai/oracle/shared/oracle"
)

// The TMM constants (SPEC_TMM_FORMULA, invariants 1 and 2). They are
// constants, defined once here, and no function takes them as a parameter.
const (
	// PHI is Φ, the resonance weight of V_r.
	PHI = 0.042
	// OMEGA is Ω, the approval threshold: 1 − 0.042/1.61803398875 ≈ 0.97404.
	OMEGA = 1 - PHI/goldenRatio

	goldenRatio = 1.61803398875
)

// Reason is the decision's crosscheck_reason.
type Reason string

// Reasons; see the package documentation for their precedence.
const (
	ReasonPass               Reason = "pass"
	ReasonFieldMissing       Reason = "field_missing"
	ReasonDegenerateManifold Reason = "degenerate_manifold"
	ReasonDimensionConflict  Reason = "dimension_conflict"
	ReasonLowCoherence       Reason = "low_coherence"
)

// Rule names the rule that decided a Decision.
type Rule string

// Rules; see the package documentation.
const (
	// RuleFormula: the TMM formula decided, C against Ω.
	RuleFormula Rule = "formula"
	// RuleMajority: the formula approved, and the top-level verdict
	// contradicts the majority of its dimensions.
	RuleMajority Rule = "majority"
)

// Contradiction is a top-level verdict that contradicts the majority of its
// dimensions: Verdict over Majority, which Dimensions (in oracle.Dimensions
// order) hold, out of Present dimensions with a valid verdict. It holds only
// fixed names, never the model's text.
type Contradiction struct {
	Verdict    oracle.Verdict `json:"verdict"`
	Majority   oracle.Verdict `json:"majority"`
	Dimensions []string       `json:"dimensions"`
	Present    int            `json:"present"`
}

// Flags. The ones ending in ":" are prefixes completed by a field path
// ("field_missing:breakdown.Change Rate.analysis") or a dimension name
// ("empty_analysis:Stability", "verdict_invalid:Curvature"). Every flag is
// built from these and the fixed names of oracle.Dimensions, never from the
// model's text.
const (
	FlagMalformedJSON           = "malformed_json"
	FlagTierInvalid             = "tier_invalid"
	FlagVerdictInvalid          = "verdict_invalid" // the top-level verdict
	FlagDimensionVerdictInvalid = "verdict_invalid:"
	FlagFieldMissing            = "field_missing:"
	FlagTopLevelConflict        = "top_level_conflict"
	FlagEmptyAnalysis           = "empty_analysis:"
	FlagShortSummary            = "short_summary"
	FlagContradictoryNull       = "contradictory_null"
	FlagStrategyMissing         = "strategy_missing"
	FlagTooFewTests             = "too_few_tests"
	FlagDegenerateManifold      = "degenerate_manifold"
)

// LabelUnknown is the verdict_label of a reply whose top-level verdict is
// missing or invalid, or that could not be read.
const LabelUnknown = "UNKNOWN"

// The mapping's fixed values (see the package documentation).
const (
	minSummaryChars  = 10 // runes
	maxScoredTests   = 3
	minStrategyTests = 2

	edMalformed = 2.0
	edVerdict   = 1.0
	edField     = 0.5
)

// Decision is the crosscheck's result. The first six fields are the spec's
// Cross-Check Decision; Rule says which rule decided, Contradiction is set
// when the majority rule finds one (even if the formula rejected the reply
// first), and VT, VR and ED are the inputs of the score, for audit.
type Decision struct {
	Approved       bool           `json:"approved"`
	CoherenceScore float64        `json:"coherence_score"`
	Threshold      float64        `json:"threshold"`
	VerdictLabel   string         `json:"verdict_label"`
	Flags          []string       `json:"flags"` // never nil
	Reason         Reason         `json:"crosscheck_reason"`
	Rule           Rule           `json:"rule"`
	Contradiction  *Contradiction `json:"contradiction,omitempty"`
	VT             float64        `json:"v_t"`
	VR             float64        `json:"v_r"`
	ED             float64        `json:"e_d"`
}

// Coherence is the TMM formula C = 1 − (E_D + V_r×PHI) / V_t. Check always
// passes V_t ≥ 1; a caller passing V_t ≤ 0 gets the formula's infinity or
// NaN, which Check's approval rule would reject.
func Coherence(eD, vR, vT float64) float64 {
	return 1 - (eD+vR*PHI)/vT
}

// Check scores the model's raw reply for a tier and decides whether it may be
// delivered. It never fails: a reply that cannot be read is a rejection.
func Check(tier oracle.Tier, raw []byte) Decision {
	s := scorer{tier: tier, label: LabelUnknown, flags: make([]string, 0, 4)}
	if _, err := oracle.ParseTier(string(tier)); err != nil {
		return s.unreadable(FlagTierInvalid)
	}
	doc, ok := parse(raw)
	if !ok {
		return s.unreadable(FlagMalformedJSON)
	}
	s.score(doc)
	return s.decide()
}

// parse reads the reply loosely: one JSON object of valid UTF-8, nothing else.
func parse(raw []byte) (map[string]any, bool) {
	// encoding/json would silently turn invalid UTF-8 into U+FFFD.
	if !utf8.Valid(raw) {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	// Numbers are never scored; as json.Number a huge one cannot fail to
	// convert and make a well-formed reply look malformed.
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false
	}
	doc, ok := v.(map[string]any)
	return doc, ok
}

// scorer accumulates one reply's variables and flags.
type scorer struct {
	tier           oracle.Tier
	label          string
	flags          []string
	vT, vR         float64
	verdictBad     bool // E_D 1.0
	fieldMissing   bool // E_D 0.5
	unreadableCase bool // E_D 2.0
	conflict       bool
	contradiction  *Contradiction
}

func (s *scorer) flag(f string) { s.flags = append(s.flags, f) }

func (s *scorer) missing(path string) {
	s.fieldMissing = true
	s.flag(FlagFieldMissing + path)
}

func (s *scorer) unreadable(flag string) Decision {
	s.unreadableCase = true
	s.flag(flag)
	return s.decide()
}

func (s *scorer) score(doc map[string]any) {
	top, topOK := s.verdict(doc)
	s.summary(doc)
	if s.tier == oracle.TierFull || s.tier == oracle.TierStrategy {
		s.breakdown(doc, top, topOK)
	}
	if s.tier == oracle.TierStrategy {
		s.strategy(doc)
	}
}

func (s *scorer) verdict(doc map[string]any) (oracle.Verdict, bool) {
	v, ok := doc["verdict"]
	if !ok || v == nil {
		s.verdictBad = true
		s.flag(FlagFieldMissing + "verdict")
		return "", false
	}
	str, _ := v.(string)
	if !validVerdict(str) {
		s.verdictBad = true
		s.flag(FlagVerdictInvalid)
		return "", false
	}
	s.label = str
	s.vT++
	return oracle.Verdict(str), true
}

func (s *scorer) summary(doc map[string]any) {
	sum, ok := text(doc, "summary")
	if !ok {
		s.missing("summary")
	}
	sum = strings.TrimSpace(sum)
	if sum != "" {
		s.vT++
	}
	if utf8.RuneCountInString(sum) < minSummaryChars {
		s.vR += 1.0
		s.flag(FlagShortSummary)
	}
}

func (s *scorer) breakdown(doc map[string]any, top oracle.Verdict, topOK bool) {
	bd, ok := object(doc, "breakdown")
	if !ok {
		s.missing("breakdown")
		return
	}
	var counts [4]int // by verdictIndex
	present := 0
	for _, dim := range oracle.Dimensions {
		note, ok := object(bd, dim)
		if !ok {
			s.missing("breakdown." + dim)
			continue
		}
		label := ""
		if v, ok := note["verdict"]; !ok || v == nil {
			s.missing("breakdown." + dim + ".verdict")
		} else if str, _ := v.(string); !validVerdict(str) {
			s.fieldMissing = true
			s.flag(FlagDimensionVerdictInvalid + dim)
		} else {
			label = str
		}
		analysis, ok := text(note, "analysis")
		if !ok {
			s.missing("breakdown." + dim + ".analysis")
		}
		if label == "" {
			continue
		}
		present++
		counts[verdictIndex(oracle.Verdict(label))]++
		if strings.TrimSpace(analysis) != "" {
			s.vT++
		} else {
			s.vR += 0.5
			s.flag(FlagEmptyAnalysis + dim)
		}
	}
	if !topOK || present == 0 {
		return
	}
	if top == oracle.VerdictNull {
		if counts[verdictIndex(oracle.VerdictRed)] == 0 && counts[verdictIndex(oracle.VerdictNull)] == 0 {
			s.vR += 1.5
			s.flag(FlagContradictoryNull)
		}
		return
	}
	for i, n := range counts {
		if 2*n > present && i != verdictIndex(top) {
			s.conflict = true
			s.vR += 2.0
			s.flag(FlagTopLevelConflict)
			if majority := verdictOf(i); opposite(top, majority) {
				// Read again, only now: the common case allocates nothing.
				names := make([]string, 0, n)
				for _, dim := range oracle.Dimensions {
					note, _ := object(bd, dim)
					if v, _ := note["verdict"].(string); v == string(majority) {
						names = append(names, dim)
					}
				}
				s.contradiction = &Contradiction{Verdict: top, Majority: majority, Dimensions: names, Present: present}
			}
			return
		}
	}
}

// opposite reports whether two verdicts are the two ends of the colour
// scale: GREEN and RED, either way round.
func opposite(a, b oracle.Verdict) bool {
	return (a == oracle.VerdictGreen && b == oracle.VerdictRed) || (a == oracle.VerdictRed && b == oracle.VerdictGreen)
}

func (s *scorer) strategy(doc map[string]any) {
	st, ok := object(doc, "strategy")
	if !ok {
		s.missing("strategy")
		s.vR += 2.0
		s.flag(FlagStrategyMissing)
		return
	}
	for _, key := range [...]string{"next_step", "alternative"} {
		v, ok := text(st, key)
		if !ok {
			s.missing("strategy." + key)
		}
		if strings.TrimSpace(v) != "" {
			s.vT++
		}
	}
	tests, ok := st["tests"].([]any)
	if !ok {
		s.missing("strategy.tests")
	}
	n := 0
	for _, t := range tests {
		if str, ok := t.(string); ok && strings.TrimSpace(str) != "" {
			n++
		}
	}
	s.vT += 0.5 * float64(min(n, maxScoredTests))
	if n < minStrategyTests {
		s.vR += 1.0
		s.flag(FlagTooFewTests)
	}
}

// decide turns the accumulated variables into the Decision.
func (s *scorer) decide() Decision {
	var eD float64
	switch {
	case s.unreadableCase:
		eD, s.vT, s.vR = edMalformed, 1.0, 0.0
	case s.verdictBad:
		eD = edVerdict
	case s.fieldMissing:
		eD = edField
	}
	vT := max(s.vT, 1.0)
	c := Coherence(eD, s.vR, vT)
	degenerate := c < 0 || math.IsNaN(c)
	if degenerate {
		s.flag(FlagDegenerateManifold)
	}
	approved := !degenerate && !math.IsInf(c, 0) && c >= OMEGA
	rule := RuleFormula
	if approved && s.contradiction != nil {
		approved, rule = false, RuleMajority
	}
	var reason Reason
	switch {
	case approved:
		reason = ReasonPass
	case rule == RuleMajority:
		reason = ReasonDimensionConflict
	case eD > 0 && !s.unreadableCase:
		reason = ReasonFieldMissing
	case degenerate:
		reason = ReasonDegenerateManifold
	case s.conflict:
		reason = ReasonDimensionConflict
	default:
		reason = ReasonLowCoherence
	}
	return Decision{
		Approved:       approved,
		CoherenceScore: c,
		Threshold:      OMEGA,
		VerdictLabel:   s.label,
		Flags:          s.flags,
		Reason:         reason,
		Rule:           rule,
		Contradiction:  s.contradiction,
		VT:             vT,
		VR:             s.vR,
		ED:             eD,
	}
}

// text returns a string field; ok is false when it is absent, null or not a
// string.
func text(m map[string]any, key string) (string, bool) {
	s, ok := m[key].(string)
	return s, ok
}

// object returns an object field; ok is false when it is absent, null or not
// an object.
func object(m map[string]any, key string) (map[string]any, bool) {
	o, ok := m[key].(map[string]any)
	return o, ok
}

func validVerdict(s string) bool {
	_, err := oracle.ParseVerdict(s)
	return err == nil
}

// verdictOf is verdictIndex's inverse.
func verdictOf(i int) oracle.Verdict {
	return [...]oracle.Verdict{oracle.VerdictGreen, oracle.VerdictAmber, oracle.VerdictRed, oracle.VerdictNull}[i]
}

// verdictIndex maps a valid token to 0..3.
func verdictIndex(v oracle.Verdict) int {
	switch v {
	case oracle.VerdictGreen:
		return 0
	case oracle.VerdictAmber:
		return 1
	case oracle.VerdictRed:
		return 2
	}
	return 3
}
