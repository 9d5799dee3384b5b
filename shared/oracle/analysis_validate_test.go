package oracle

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// The spec's examples (SPEC_ORACLE_VERDICT_PIPELINE "Examples 1-3"), one
// valid reply per tier.
const (
	exampleQuick = `{ "verdict": "AMBER", "summary": "The instinct is sound but the timing is missing — this needs a 6-month runway before you pull the trigger." }`

	exampleFull = `{
  "verdict": "GREEN",
  "summary": "Demand is real, the channel is underserved, and the format fits the audience.",
  "breakdown": {
    "Stability":   { "verdict": "GREEN", "analysis": "Executive appetite for AI signal exists..." },
    "Turbulence":  { "verdict": "AMBER", "analysis": "Crowded with noise, differentiation required..." },
    "Change Rate": { "verdict": "RED",   "analysis": "AI news cycle is moving faster than weekly..." },
    "Completion":  { "verdict": "AMBER", "analysis": "Distribution strategy not specified..." },
    "Curvature":   { "verdict": "GREEN", "analysis": "Non-linear upside via enterprise licensing..." }
  }
}`

	exampleStrategy = `{
  "verdict": "AMBER",
  "summary": "The economics can work, but only if the lease and the delivery demand check out first.",
  "breakdown": {
    "Stability":   { "verdict": "AMBER", "analysis": "Delivery demand is steady in dense areas." },
    "Turbulence":  { "verdict": "RED",   "analysis": "Platform fees and competition squeeze margins." },
    "Change Rate": { "verdict": "AMBER", "analysis": "Delivery apps change terms often." },
    "Completion":  { "verdict": "AMBER", "analysis": "No numbers yet on occupancy or menu costs." },
    "Curvature":   { "verdict": "GREEN", "analysis": "One kitchen can host several brands." }
  },
  "strategy": {
    "next_step": "Model the ghost kitchen unit economics at 60% occupancy before signing any lease.",
    "alternative": "License the brand to existing kitchens instead of acquiring real estate.",
    "tests": [
      "Run delivery-only menus from a shared kitchen for 90 days to validate demand.",
      "Survey 20 potential B2B clients for catering demand in the target area.",
      "Verify the failing restaurant's lease terms — assignment clauses are often blocking."
    ]
  }
}`
)

var examples = map[Tier]string{TierQuick: exampleQuick, TierFull: exampleFull, TierStrategy: exampleStrategy}

// edit decodes a tier's example, lets change alter it and encodes it again,
// so each case below breaks exactly one rule of an otherwise valid reply.
func edit(t *testing.T, tier Tier, change func(doc map[string]any)) []byte {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal([]byte(examples[tier]), &doc); err != nil {
		t.Fatalf("example %s: %v", tier, err)
	}
	change(doc)
	raw, err := json.Marshal(doc)
	if err != nil {
		t.Fatalf("encoding edited %s example: %v", tier, err)
	}
	return raw
}

func sub(doc map[string]any, keys ...string) map[string]any {
	for _, k := range keys {
		doc = doc[k].(map[string]any)
	}
	return doc
}

func TestParseAnalysisAcceptsEveryTier(t *testing.T) {
	cases := []struct {
		name string
		tier Tier
		raw  []byte
	}{
		{"quick example", TierQuick, []byte(exampleQuick)},
		{"full example", TierFull, []byte(exampleFull)},
		{"strategy example", TierStrategy, []byte(exampleStrategy)},
		{"quick NULL", TierQuick, []byte(`{"verdict":"NULL","summary":"There is not enough here to judge: say what you would sell and to whom."}`)},
		{"full NULL", TierFull, edit(t, TierFull, func(d map[string]any) { d["verdict"] = "NULL" })},
		{"strategy NULL", TierStrategy, edit(t, TierStrategy, func(d map[string]any) { d["verdict"] = "NULL" })},
		{"keys in any order", TierQuick, []byte(`{"summary":"Go.","verdict":"GREEN"}`)},
		{"surrounding whitespace", TierQuick, []byte("\n\t {\"verdict\":\"RED\",\"summary\":\"Stop.\"} \r\n")},
		{"newline and tab in text", TierQuick, []byte(`{"verdict":"RED","summary":"Stop.\n\tThe market is gone."}`)},
		{"summary at the bound", TierQuick, edit(t, TierQuick, func(d map[string]any) { d["summary"] = strings.Repeat("é", MaxSummaryChars) })},
		{"analysis at the bound", TierFull, edit(t, TierFull, func(d map[string]any) {
			sub(d, "breakdown", "Curvature")["analysis"] = strings.Repeat("字", MaxAnalysisChars)
		})},
		{"test at the bound", TierStrategy, edit(t, TierStrategy, func(d map[string]any) {
			sub(d, "strategy")["tests"].([]any)[2] = strings.Repeat("🍁", MaxStrategyChars)
		})},
		{"escaped text", TierQuick, []byte(`{"verdict":"GREEN","summary":"\u00e9t\u00e9 \"quoted\" \u2028 <b>&amp;</b>"}`)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, err := ParseAnalysis(c.tier, c.raw)
			if err != nil {
				t.Fatalf("valid %s reply refused: %v", c.tier, err)
			}
			if err := a.Validate(c.tier); err != nil {
				t.Fatalf("accepted analysis does not re-validate: %v", err)
			}
		})
	}
}

func TestParseAnalysisDecodesTheFields(t *testing.T) {
	a, err := ParseAnalysis(TierStrategy, []byte(exampleStrategy))
	if err != nil {
		t.Fatal(err)
	}
	if a.Verdict != VerdictAmber || !strings.HasPrefix(a.Summary, "The economics") {
		t.Errorf("verdict %q summary %q", a.Verdict, a.Summary)
	}
	if n := a.Breakdown["Change Rate"]; n.Verdict != VerdictAmber || n.Analysis != "Delivery apps change terms often." {
		t.Errorf("Change Rate = %+v", n)
	}
	if a.Strategy == nil || len(a.Strategy.Tests) != 3 || !strings.HasPrefix(a.Strategy.Tests[2], "Verify") {
		t.Errorf("strategy = %+v", a.Strategy)
	}
}

func TestParseAnalysisRefuses(t *testing.T) {
	long := strings.Repeat("Really long text. ", 100)
	cases := []struct {
		name  string
		tier  Tier
		raw   []byte
		field string // the error must name it
	}{
		// The reply as a whole.
		{"empty reply", TierQuick, nil, "reply"},
		{"blank reply", TierQuick, []byte(" \n "), "reply"},
		{"markdown fence", TierQuick, []byte("```json\n" + exampleQuick + "\n```"), "code fence"},
		{"bare fence", TierQuick, []byte("```\n" + exampleQuick + "\n```"), "code fence"},
		{"text before the object", TierQuick, []byte("Here is my verdict: " + exampleQuick), "reply"},
		{"text after the object", TierQuick, []byte(exampleQuick + " Hope this helps!"), "data after"},
		{"fence after the object", TierQuick, []byte(exampleQuick + "\n```"), "data after"},
		{"two objects", TierQuick, []byte(exampleQuick + exampleQuick), "data after"},
		{"malformed JSON", TierQuick, []byte(`{"verdict":"GREEN","summary":"x",}`), "well-formed"},
		{"an array", TierQuick, []byte(`[` + exampleQuick + `]`), "reply must be an object"},
		{"a string", TierQuick, []byte(`"GREEN"`), "reply must be an object"},
		{"invalid UTF-8", TierQuick, []byte("{\"verdict\":\"GREEN\",\"summary\":\"ok \xff\"}"), "UTF-8"},
		{"too large", TierQuick, append([]byte(exampleQuick), bytes.Repeat([]byte(" "), MaxReplyBytes)...), "bytes long"},
		{"unknown tier", "premium", []byte(exampleQuick), "unknown tier"},

		// Keys and types.
		{"unknown field", TierQuick, edit(t, TierQuick, func(d map[string]any) { d["confidence"] = "high" }), `"confidence"`},
		{"key in other case", TierQuick, []byte(`{"Verdict":"GREEN","summary":"Go."}`), `"Verdict"`},
		{"duplicate key", TierQuick, []byte(`{"verdict":"GREEN","summary":"Go.","verdict":"RED"}`), `"verdict" appears twice`},
		{"verdict missing", TierQuick, []byte(`{"summary":"Go."}`), "verdict"},
		{"verdict null", TierQuick, []byte(`{"verdict":null,"summary":"Go."}`), "verdict must be a string"},
		{"verdict a number", TierQuick, []byte(`{"verdict":1,"summary":"Go."}`), "verdict must be a string"},
		{"verdict lower case", TierQuick, []byte(`{"verdict":"green","summary":"Go."}`), "verdict must be GREEN"},
		{"verdict unknown", TierQuick, []byte(`{"verdict":"YELLOW","summary":"Go."}`), "verdict must be GREEN"},
		{"verdict padded", TierQuick, []byte(`{"verdict":" GREEN","summary":"Go."}`), "verdict must be GREEN"},

		// The summary.
		{"summary missing", TierQuick, []byte(`{"verdict":"GREEN"}`), "summary is empty"},
		{"summary null", TierQuick, []byte(`{"verdict":"GREEN","summary":null}`), "summary must be a string"},
		{"summary an object", TierQuick, []byte(`{"verdict":"GREEN","summary":{"text":"Go."}}`), "summary must be a string"},
		{"summary empty", TierQuick, []byte(`{"verdict":"GREEN","summary":""}`), "summary is empty"},
		{"summary blank", TierQuick, []byte(`{"verdict":"GREEN","summary":" \n\t "}`), "summary is empty"},
		{"summary too long", TierQuick, edit(t, TierQuick, func(d map[string]any) { d["summary"] = strings.Repeat("é", MaxSummaryChars+1) }), "summary is 601 characters"},
		{"summary with a bell", TierQuick, []byte(`{"verdict":"GREEN","summary":"Go.\u0007"}`), "summary contains the control character U+0007"},
		{"summary with a carriage return", TierQuick, []byte(`{"verdict":"GREEN","summary":"Go.\r"}`), "U+000D"},
		{"summary with an escape sequence", TierQuick, []byte(`{"verdict":"GREEN","summary":"\u001b[2JGo."}`), "U+001B"},
		{"summary with a C1 control", TierQuick, []byte("{\"verdict\":\"GREEN\",\"summary\":\"Go.\u0085\"}"), "U+0085"},
		{"summary with a NUL", TierQuick, []byte(`{"verdict":"GREEN","summary":"Go.\u0000"}`), "U+0000"},

		// What a tier may hold.
		{"quick with a breakdown", TierQuick, []byte(`{"verdict":"GREEN","summary":"Go.","breakdown":{}}`), "breakdown is not part of a Quick Take"},
		{"quick with a null breakdown", TierQuick, []byte(`{"verdict":"GREEN","summary":"Go.","breakdown":null}`), "breakdown must be an object"},
		{"quick with a strategy", TierQuick, edit(t, TierQuick, func(d map[string]any) {
			d["strategy"] = map[string]any{"next_step": "a", "alternative": "b", "tests": []any{"1", "2", "3"}}
		}), "strategy is not part of a Quick Take"},
		{"full without breakdown", TierFull, []byte(exampleQuick), "breakdown is missing"},
		{"full with a strategy", TierFull, edit(t, TierFull, func(d map[string]any) {
			d["strategy"] = map[string]any{"next_step": "a", "alternative": "b", "tests": []any{"1", "2", "3"}}
		}), "strategy is not part of a Full Breakdown"},
		{"strategy without strategy", TierStrategy, []byte(exampleFull), "strategy is missing"},
		{"strategy without breakdown", TierStrategy, edit(t, TierStrategy, func(d map[string]any) { delete(d, "breakdown") }), "breakdown is missing"},

		// The breakdown.
		{"dimension missing", TierFull, edit(t, TierFull, func(d map[string]any) { delete(sub(d, "breakdown"), "Completion") }), `breakdown["Completion"] is missing`},
		{"extra dimension", TierFull, edit(t, TierFull, func(d map[string]any) {
			sub(d, "breakdown")["Momentum"] = map[string]any{"verdict": "GREEN", "analysis": "x"}
		}), `breakdown["Momentum"] is not one of the five dimensions`},
		{"dimension in other case", TierFull, edit(t, TierFull, func(d map[string]any) {
			b := sub(d, "breakdown")
			b["stability"] = b["Stability"]
			delete(b, "Stability")
		}), `breakdown["stability"] is not one of`},
		{"dimension twice", TierFull, []byte(strings.Replace(exampleFull, `"Turbulence"`, `"Stability"`, 1)), `breakdown field "Stability" appears twice`},
		{"breakdown an array", TierFull, edit(t, TierFull, func(d map[string]any) { d["breakdown"] = []any{} }), "breakdown must be an object"},
		{"dimension a string", TierFull, edit(t, TierFull, func(d map[string]any) { sub(d, "breakdown")["Curvature"] = "GREEN" }), `breakdown["Curvature"] must be an object`},
		{"dimension verdict NULL", TierFull, edit(t, TierFull, func(d map[string]any) { sub(d, "breakdown", "Turbulence")["verdict"] = "NULL" }), `breakdown["Turbulence"].verdict must be GREEN, AMBER or RED`},
		{"dimension verdict unknown", TierFull, edit(t, TierFull, func(d map[string]any) { sub(d, "breakdown", "Turbulence")["verdict"] = "BLUE" }), `breakdown["Turbulence"].verdict`},
		{"dimension verdict missing", TierFull, edit(t, TierFull, func(d map[string]any) { delete(sub(d, "breakdown", "Turbulence"), "verdict") }), `breakdown["Turbulence"].verdict`},
		{"dimension analysis empty", TierFull, edit(t, TierFull, func(d map[string]any) { sub(d, "breakdown", "Change Rate")["analysis"] = " " }), `breakdown["Change Rate"].analysis is empty`},
		{"dimension analysis too long", TierFull, edit(t, TierFull, func(d map[string]any) {
			sub(d, "breakdown", "Change Rate")["analysis"] = strings.Repeat("x", MaxAnalysisChars+1)
		}), `breakdown["Change Rate"].analysis is 1001 characters`},
		{"dimension analysis with a control character", TierFull, edit(t, TierFull, func(d map[string]any) { sub(d, "breakdown", "Completion")["analysis"] = "a\vb" }), `breakdown["Completion"].analysis contains the control character U+000B`},
		{"dimension unknown field", TierFull, edit(t, TierFull, func(d map[string]any) { sub(d, "breakdown", "Stability")["score"] = 0.9 }), `breakdown["Stability"] field "score"`},
		{"dimension duplicate field", TierFull, []byte(strings.Replace(exampleFull, `"analysis": "Executive`, `"verdict": "RED", "analysis": "Executive`, 1)), `breakdown["Stability"] field "verdict" appears twice`},

		// The strategy.
		{"strategy a string", TierStrategy, edit(t, TierStrategy, func(d map[string]any) { d["strategy"] = "do it" }), "strategy must be an object"},
		{"next step empty", TierStrategy, edit(t, TierStrategy, func(d map[string]any) { sub(d, "strategy")["next_step"] = "" }), "strategy.next_step is empty"},
		{"next step missing", TierStrategy, edit(t, TierStrategy, func(d map[string]any) { delete(sub(d, "strategy"), "next_step") }), "strategy.next_step is empty"},
		{"alternative too long", TierStrategy, edit(t, TierStrategy, func(d map[string]any) { sub(d, "strategy")["alternative"] = long }), "strategy.alternative is 1800 characters"},
		{"two tests", TierStrategy, edit(t, TierStrategy, func(d map[string]any) { sub(d, "strategy")["tests"] = []any{"a", "b"} }), "strategy.tests must hold exactly 3 tests, has 2"},
		{"four tests", TierStrategy, edit(t, TierStrategy, func(d map[string]any) { sub(d, "strategy")["tests"] = []any{"a", "b", "c", "d"} }), "has 4"},
		{"no tests", TierStrategy, edit(t, TierStrategy, func(d map[string]any) { sub(d, "strategy")["tests"] = []any{} }), "has 0"},
		{"tests missing", TierStrategy, edit(t, TierStrategy, func(d map[string]any) { delete(sub(d, "strategy"), "tests") }), "has 0"},
		{"tests null", TierStrategy, edit(t, TierStrategy, func(d map[string]any) { sub(d, "strategy")["tests"] = nil }), "strategy.tests must be an array"},
		{"tests a string", TierStrategy, edit(t, TierStrategy, func(d map[string]any) { sub(d, "strategy")["tests"] = "a, b, c" }), "strategy.tests must be an array"},
		{"empty test", TierStrategy, edit(t, TierStrategy, func(d map[string]any) { sub(d, "strategy")["tests"] = []any{"a", "", "c"} }), "strategy.tests[1] is empty"},
		{"test a number", TierStrategy, edit(t, TierStrategy, func(d map[string]any) { sub(d, "strategy")["tests"] = []any{"a", "b", 3} }), "strategy.tests[2] must be a string"},
		{"test too long", TierStrategy, edit(t, TierStrategy, func(d map[string]any) { sub(d, "strategy")["tests"] = []any{long, "b", "c"} }), "strategy.tests[0] is 1800 characters"},
		{"strategy unknown field", TierStrategy, edit(t, TierStrategy, func(d map[string]any) { sub(d, "strategy")["budget"] = "C$5,000" }), `strategy field "budget"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, err := ParseAnalysis(c.tier, c.raw)
			if err == nil {
				t.Fatalf("accepted: %+v", a)
			}
			if ErrorCode(err) != CodeInvalid {
				t.Fatalf("code %s, want %s: %v", ErrorCode(err), CodeInvalid, err)
			}
			msg := ErrorMessage(err)
			if !strings.Contains(msg, c.field) {
				t.Errorf("error %q does not name %q", msg, c.field)
			}
			// The model's text is never echoed at length.
			if len(msg) > 160 || strings.Contains(msg, "Really long") {
				t.Errorf("error message quotes too much: %q", msg)
			}
		})
	}
}

func TestValidateStoredAnalysis(t *testing.T) {
	notes := map[string]DimensionNote{}
	for _, d := range Dimensions {
		notes[d] = DimensionNote{Verdict: VerdictGreen, Analysis: "Fine."}
	}
	strategy := &Strategy{NextStep: "Call ten customers.", Alternative: "Sell the recipe instead.", Tests: []string{"a", "b", "c"}}
	cases := []struct {
		name  string
		tier  Tier
		a     Analysis
		field string // "" means valid
	}{
		{"quick", TierQuick, Analysis{Verdict: VerdictRed, Summary: "No."}, ""},
		{"full", TierFull, Analysis{Verdict: VerdictNull, Summary: "Too vague.", Breakdown: notes}, ""},
		{"strategy", TierStrategy, Analysis{Verdict: VerdictGreen, Summary: "Yes.", Breakdown: notes, Strategy: strategy}, ""},
		{"zero value", TierQuick, Analysis{}, "verdict"},
		{"quick with an empty breakdown", TierQuick, Analysis{Verdict: VerdictRed, Summary: "No.", Breakdown: map[string]DimensionNote{}}, "breakdown is not part"},
		{"full with an empty breakdown", TierFull, Analysis{Verdict: VerdictRed, Summary: "No.", Breakdown: map[string]DimensionNote{}}, `breakdown["Stability"] is missing`},
		{"strategy with nil tests", TierStrategy, Analysis{Verdict: VerdictGreen, Summary: "Yes.", Breakdown: notes, Strategy: &Strategy{NextStep: "a", Alternative: "b"}}, "has 0"},
		{"invalid UTF-8", TierQuick, Analysis{Verdict: VerdictRed, Summary: "No\xff"}, "summary is not valid UTF-8"},
		{"unknown tier", "QUICK", Analysis{Verdict: VerdictRed, Summary: "No."}, "unknown tier"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.a.Validate(c.tier)
			if c.field == "" {
				if err != nil {
					t.Fatalf("valid analysis refused: %v", err)
				}
				return
			}
			if ErrorCode(err) != CodeInvalid || !strings.Contains(ErrorMessage(err), c.field) {
				t.Fatalf("got %v, want an invalid error naming %q", err, c.field)
			}
		})
	}
}

func TestCanonicalJSON(t *testing.T) {
	cases := []struct {
		name  string
		tier  Tier
		forms []string // equivalent replies
		want  string
	}{
		{
			name: "quick",
			tier: TierQuick,
			forms: []string{
				`{"verdict":"AMBER","summary":"Wait <6 months> & save — then go."}`,
				"{\n  \"summary\" : \"Wait <6 months> & save \\u2014 then go.\",\n  \"verdict\" : \"AMBER\"\n}\n",
			},
			want: `{"summary":"Wait <6 months> & save — then go.","verdict":"AMBER"}`,
		},
		{
			name: "strategy",
			tier: TierStrategy,
			forms: []string{
				exampleStrategy,
				string(edit(t, TierStrategy, func(map[string]any) {})),
				`{"strategy":{"tests":["Run delivery-only menus from a shared kitchen for 90 days to validate demand.","Survey 20 potential B2B clients for catering demand in the target area.","Verify the failing restaurant's lease terms — assignment clauses are often blocking."],"alternative":"License the brand to existing kitchens instead of acquiring real estate.","next_step":"Model the ghost kitchen unit economics at 60% occupancy before signing any lease."},` +
					`"breakdown":{"Curvature":{"analysis":"One kitchen can host several brands.","verdict":"GREEN"},"Completion":{"analysis":"No numbers yet on occupancy or menu costs.","verdict":"AMBER"},"Change Rate":{"analysis":"Delivery apps change terms often.","verdict":"AMBER"},"Turbulence":{"analysis":"Platform fees and competition squeeze margins.","verdict":"RED"},"Stability":{"analysis":"Delivery demand is steady in dense areas.","verdict":"AMBER"}},` +
					`"summary":"The economics can work, but only if the lease and the delivery demand check out first.","verdict":"AMBER"}`,
			},
			want: `{"breakdown":{"Change Rate":{"analysis":"Delivery apps change terms often.","verdict":"AMBER"},"Completion":{"analysis":"No numbers yet on occupancy or menu costs.","verdict":"AMBER"},"Curvature":{"analysis":"One kitchen can host several brands.","verdict":"GREEN"},"Stability":{"analysis":"Delivery demand is steady in dense areas.","verdict":"AMBER"},"Turbulence":{"analysis":"Platform fees and competition squeeze margins.","verdict":"RED"}},` +
				`"strategy":{"alternative":"License the brand to existing kitchens instead of acquiring real estate.","next_step":"Model the ghost kitchen unit economics at 60% occupancy before signing any lease.","tests":["Run delivery-only menus from a shared kitchen for 90 days to validate demand.","Survey 20 potential B2B clients for catering demand in the target area.","Verify the failing restaurant's lease terms — assignment clauses are often blocking."]},` +
				`"summary":"The economics can work, but only if the lease and the delivery demand check out first.","verdict":"AMBER"}`,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for i, form := range c.forms {
				a, err := ParseAnalysis(c.tier, []byte(form))
				if err != nil {
					t.Fatalf("form %d refused: %v", i, err)
				}
				got, err := a.CanonicalJSON()
				if err != nil {
					t.Fatalf("form %d: %v", i, err)
				}
				if string(got) != c.want {
					t.Errorf("form %d canonical bytes:\n got %s\nwant %s", i, got, c.want)
				}
				again, err := a.CanonicalJSON()
				if err != nil || !bytes.Equal(again, got) {
					t.Errorf("form %d: a second encoding differs", i)
				}
			}
		})
	}
}

func TestCanonicalJSONRoundTrips(t *testing.T) {
	for tier, raw := range examples {
		a, err := ParseAnalysis(tier, []byte(raw))
		if err != nil {
			t.Fatalf("%s: %v", tier, err)
		}
		canonical, err := a.CanonicalJSON()
		if err != nil {
			t.Fatalf("%s: %v", tier, err)
		}
		back, err := ParseAnalysis(tier, canonical)
		if err != nil {
			t.Fatalf("%s: canonical bytes refused: %v", tier, err)
		}
		if !reflect.DeepEqual(back, a) {
			t.Errorf("%s: round trip changed the analysis:\n got %+v\nwant %+v", tier, back, a)
		}
	}
}

func TestCanonicalJSONRefusesInvalidUTF8(t *testing.T) {
	// encoding/json would write both as U+FFFD: different analyses, one hash.
	for _, a := range []Analysis{
		{Verdict: VerdictRed, Summary: "No\xff"},
		{Verdict: VerdictRed, Summary: "No", Breakdown: map[string]DimensionNote{"Stability\xfe": {Verdict: VerdictRed, Analysis: "x"}}},
		{Verdict: VerdictRed, Summary: "No", Strategy: &Strategy{Tests: []string{"\xc3"}}},
	} {
		if _, err := a.CanonicalJSON(); ErrorCode(err) != CodeInvalid {
			t.Errorf("CanonicalJSON(%+v) = %v, want an invalid error", a, err)
		}
	}
}

func FuzzParseAnalysis(f *testing.F) {
	for i, tier := range Tiers() {
		f.Add(uint8(i), []byte(examples[tier]))
		f.Add(uint8(i), []byte("```json\n"+examples[tier]+"\n```"))
		f.Add(uint8(i), []byte(examples[tier]+"{}"))
	}
	f.Add(uint8(0), []byte(`{"verdict":"NULL","summary":"\ud800 \u2028 <&>"}`))
	f.Add(uint8(0), []byte(`{"verdict":"GREEN","summary":"Go.","verdict":"RED"}`))
	f.Fuzz(func(t *testing.T, tierIndex uint8, raw []byte) {
		tier := Tiers()[int(tierIndex)%len(Tiers())]
		a, err := ParseAnalysis(tier, raw)
		if err != nil {
			if ErrorCode(err) != CodeInvalid {
				t.Fatalf("refusal with code %s: %v", ErrorCode(err), err)
			}
			return
		}
		if err := a.Validate(tier); err != nil {
			t.Fatalf("accepted analysis does not re-validate: %v", err)
		}
		canonical, err := a.CanonicalJSON()
		if err != nil {
			t.Fatalf("accepted analysis has no canonical form: %v", err)
		}
		back, err := ParseAnalysis(tier, canonical)
		if err != nil {
			t.Fatalf("canonical bytes %q refused: %v", canonical, err)
		}
		if !reflect.DeepEqual(back, a) {
			t.Fatalf("round trip changed the analysis:\n got %+v\nwant %+v", back, a)
		}
		again, err := back.CanonicalJSON()
		if err != nil || !bytes.Equal(again, canonical) {
			t.Fatalf("canonical bytes are not stable: %q then %q", canonical, again)
		}
	})
}
