package fakegemini_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"42sisters.ai/oracle/shared/oracle"
)

// decodeDocument strictly decodes a verdict document: one JSON object with
// no unknown fields.
func decodeDocument(t *testing.T, text string) oracle.Analysis {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(text))
	dec.DisallowUnknownFields()
	var a oracle.Analysis
	if err := dec.Decode(&a); err != nil {
		t.Fatalf("not a verdict document: %v: %s", err, text)
	}
	if dec.More() {
		t.Fatalf("data after the document: %s", text)
	}
	return a
}

// checkDocument checks that text is a valid verdict document for tier.
func checkDocument(t *testing.T, tier oracle.Tier, text string) oracle.Analysis {
	t.Helper()
	a := decodeDocument(t, text)
	if _, err := oracle.ParseVerdict(string(a.Verdict)); err != nil || a.Summary == "" {
		t.Errorf("verdict %q, summary %q", a.Verdict, a.Summary)
	}
	if tier == oracle.TierQuick {
		if a.Breakdown != nil || a.Strategy != nil {
			t.Errorf("quick take with a breakdown or strategy: %s", text)
		}
		return a
	}
	if len(a.Breakdown) != len(oracle.Dimensions) {
		t.Errorf("breakdown has %d dimensions, want %d: %s", len(a.Breakdown), len(oracle.Dimensions), text)
	}
	for _, dim := range oracle.Dimensions {
		note, ok := a.Breakdown[dim]
		if !ok || note.Analysis == "" {
			t.Errorf("dimension %s missing or without analysis: %s", dim, text)
		}
		if note.Verdict != oracle.VerdictGreen && note.Verdict != oracle.VerdictAmber && note.Verdict != oracle.VerdictRed {
			t.Errorf("dimension %s has verdict %q, want GREEN, AMBER or RED", dim, note.Verdict)
		}
	}
	if tier == oracle.TierFull {
		if a.Strategy != nil {
			t.Errorf("full breakdown with a strategy: %s", text)
		}
		return a
	}
	s := a.Strategy
	if s == nil || s.NextStep == "" || s.Alternative == "" || len(s.Tests) != 3 {
		t.Fatalf("strategy = %+v, want a next step, an alternative and 3 tests", s)
	}
	if s.Tests[0] == "" || s.Tests[0] == s.Tests[1] || s.Tests[1] == s.Tests[2] || s.Tests[0] == s.Tests[2] {
		t.Errorf("tests are not three distinct texts: %q", s.Tests)
	}
	return a
}

// dimensionCounts counts the breakdown's dimension verdicts.
func dimensionCounts(a oracle.Analysis) map[oracle.Verdict]int {
	n := map[oracle.Verdict]int{}
	for _, note := range a.Breakdown {
		n[note.Verdict]++
	}
	return n
}

// TestVerdictsAreValidConsistentAndVaried generates many prompts for every
// tier: each answer is a valid document whose breakdown agrees with its
// verdict (a majority of dimensions share a GREEN, AMBER or RED verdict; a
// NULL verdict has a RED dimension), and all four verdicts occur.
func TestVerdictsAreValidConsistentAndVaried(t *testing.T) {
	f := newFixture(t)
	for _, tier := range oracle.Tiers() {
		t.Run(string(tier), func(t *testing.T) {
			seen := map[oracle.Verdict]int{}
			for i := range 60 {
				a := checkDocument(t, tier, f.generate(t, "system", fmt.Sprintf("Idea number %d", i), tier))
				seen[a.Verdict]++
				if tier == oracle.TierQuick {
					continue
				}
				n := dimensionCounts(a)
				if a.Verdict == oracle.VerdictNull {
					if n[oracle.VerdictRed] == 0 {
						t.Errorf("NULL verdict without a RED dimension: %v", n)
					}
				} else if n[a.Verdict] < 3 {
					t.Errorf("%s verdict with dimensions %v: no majority agrees", a.Verdict, n)
				}
			}
			if len(seen) != 4 {
				t.Errorf("verdicts seen over 60 prompts: %v, want all four", seen)
			}
		})
	}
}

func TestSamePromptSameAnswer(t *testing.T) {
	f := newFixture(t)
	for _, tier := range oracle.Tiers() {
		first := f.generate(t, "system", "Should I open a bakery?", tier)
		if again := f.generate(t, "system", "Should I open a bakery?", tier); again != first {
			t.Errorf("%s: the same prompt got\n%s\nthen\n%s", tier, first, again)
		}
		if other := f.generate(t, "another system", "Should I open a bakery?", tier); other == first {
			t.Errorf("%s: a different system instruction got the same answer", tier)
		}
	}
}

func TestContentScenarios(t *testing.T) {
	f := newFixture(t)
	user := "Should I open a bakery?"
	plain := f.generate(t, "s", user, oracle.TierStrategy)

	t.Run("fenced", func(t *testing.T) {
		f.control(t, `{"fenced":true}`)
		text := f.generate(t, "s", user, oracle.TierStrategy)
		inner, ok := strings.CutPrefix(text, "```json\n")
		inner, ok2 := strings.CutSuffix(inner, "\n```")
		if !ok || !ok2 || inner != plain {
			t.Errorf("want the plain answer inside a ```json fence, got %s", text)
		}
	})
	t.Run("malformed", func(t *testing.T) {
		f.control(t, `{"malformed":true}`)
		text := f.generate(t, "s", user, oracle.TierStrategy)
		if json.Valid([]byte(text)) || text == "" || !strings.HasPrefix(plain, text) {
			t.Errorf("want the answer cut off, not JSON, got %s", text)
		}
	})
	for _, v := range []oracle.Verdict{oracle.VerdictGreen, oracle.VerdictAmber, oracle.VerdictRed, oracle.VerdictNull} {
		t.Run("verdict "+string(v), func(t *testing.T) {
			f.control(t, `{"verdict":"`+string(v)+`"}`)
			a := checkDocument(t, oracle.TierFull, f.generate(t, "s", user, oracle.TierFull))
			if a.Verdict != v {
				t.Errorf("verdict %s, want %s", a.Verdict, v)
			}
		})
	}
	t.Run("leak terms", func(t *testing.T) {
		f.control(t, `{"leak_terms":["Φζ","AION"]}`)
		a := checkDocument(t, oracle.TierStrategy, f.generate(t, "s", user, oracle.TierStrategy))
		texts := []string{a.Summary, a.Strategy.NextStep, a.Strategy.Alternative}
		texts = append(texts, a.Strategy.Tests...)
		for _, note := range a.Breakdown {
			texts = append(texts, note.Analysis)
		}
		for _, s := range texts {
			if !strings.Contains(s, "Φζ") || !strings.Contains(s, "AION") {
				t.Errorf("text without the leak terms: %q", s)
			}
		}
	})
	t.Run("inconsistent", func(t *testing.T) {
		for v, opposite := range map[oracle.Verdict]oracle.Verdict{
			oracle.VerdictGreen: oracle.VerdictRed,
			oracle.VerdictAmber: oracle.VerdictGreen,
			oracle.VerdictRed:   oracle.VerdictGreen,
			oracle.VerdictNull:  oracle.VerdictGreen,
		} {
			f.control(t, `{"inconsistent":true,"verdict":"`+string(v)+`"}`)
			a := checkDocument(t, oracle.TierFull, f.generate(t, "s", user, oracle.TierFull))
			if n := dimensionCounts(a); a.Verdict != v || n[opposite] != len(oracle.Dimensions) {
				t.Errorf("verdict %s with dimensions %v, want %s with all %s", a.Verdict, n, v, opposite)
			}
		}
	})
	t.Run("incomplete", func(t *testing.T) {
		f.control(t, `{"incomplete":true}`)
		text := f.generate(t, "s", user, oracle.TierStrategy)
		var fields map[string]json.RawMessage
		if err := json.Unmarshal([]byte(text), &fields); err != nil {
			t.Fatalf("want valid JSON, got %s", text)
		}
		if _, ok := fields["summary"]; ok || fields["verdict"] == nil || fields["breakdown"] == nil || fields["strategy"] == nil {
			t.Errorf("want everything but the summary, got %s", text)
		}
	})
	t.Run("scenario used up", func(t *testing.T) {
		if again := f.generate(t, "s", user, oracle.TierStrategy); again != plain {
			t.Errorf("after the scenarios the answer changed:\n%s\nthen\n%s", plain, again)
		}
	})
}

// TestSentencesArePlainEnglish keeps jargon and the internal vocabulary of
// the SOS filter out of the fake's sentences, so that only leak_terms can
// put it there.
func TestSentencesArePlainEnglish(t *testing.T) {
	f := newFixture(t)
	banned := []string{"TMM", "coherence", "LATTICE", "Φ", "Ψ", "kernel", "AION", "ASTRA", "NOUS", "synergy", "leverage"}
	var all bytes.Buffer
	for i := range 40 {
		all.WriteString(f.generate(t, "s", fmt.Sprintf("idea %d", i), oracle.TierStrategy))
	}
	for _, word := range banned {
		if strings.Contains(strings.ToLower(all.String()), strings.ToLower(word)) {
			t.Errorf("the fake's text contains %q", word)
		}
	}
}
