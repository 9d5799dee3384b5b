package sosfilter

import (
	"slices"
	"strings"
	"testing"
	"unicode"

	"golang.org/x/text/unicode/norm"

	"42sisters.ai/oracle/shared/oracle"
)

// The reference matcher: slow, simple and written apart from the scanner.
// It normalises a whole string into a slice of characters (each with its
// original offset and its letter as the reader sees it) using
// norm.NFKD.String rather than the decomposition tables the scanner reads,
// and looks for every term with a naive comparison at every position. It
// shares with the filter only the definition of folding (which characters
// are equal), not its implementation.

type refChar struct {
	r     rune // folded
	shape rune // the letter with its case
	off   int  // original offset
	soft  bool // an invisible character before it
}

func refFold(s string) []refChar {
	var out []refChar
	soft := false
	for off, r := range s {
		if ignorable(r) {
			soft = true
			continue
		}
		for _, c := range norm.NFKD.String(string(r)) {
			if c == 0x0345 {
				c = 0x03b9
			} else if unicode.In(c, unicode.M) {
				continue
			}
			if unicode.IsSpace(c) || c == '-' || c == '_' || c == 0x2212 || c == 0x2800 || unicode.In(c, unicode.Pd, unicode.Pc) {
				if n := len(out); n > 0 && (out[n-1].r == ' ' || out[n-1].r == '.') {
					continue // one separator for a run, none after a full stop; soft stays pending
				}
				out = append(out, refChar{r: ' ', shape: ' ', off: off, soft: soft})
				soft = false
				continue
			}
			shapes := []rune{c}
			if latin := readsAs(c); latin != "" {
				shapes = []rune(latin)
			}
			for _, shape := range shapes {
				out = append(out, refChar{r: unicode.ToLower(unicode.ToUpper(shape)), shape: shape, off: off, soft: soft})
				soft = false
			}
		}
	}
	return out
}

func refTerm(term string) []rune {
	var rs []rune
	for _, c := range refFold(term) {
		rs = append(rs, c.r)
	}
	for len(rs) > 0 && rs[0] == ' ' {
		rs = rs[1:]
	}
	for len(rs) > 0 && rs[len(rs)-1] == ' ' {
		rs = rs[:len(rs)-1]
	}
	return rs
}

// refFind reports the start indexes of term in text, as a word for match
// "word" (no letter or digit touching it, no decimal point and digit
// touching a number) or the start of one for "prefix".
func refFind(text []refChar, term []rune, match string) []int {
	var at []int
	for i := 0; i+len(term) <= len(text); i++ {
		ok := true
		for j, r := range term {
			if text[i+j].r != r {
				ok = false
				break
			}
		}
		if !ok || (match != "exact" && !refBoundaries(text, i, i+len(term), match == "word")) {
			continue
		}
		at = append(at, i)
	}
	return at
}

func refBoundaries(text []refChar, i, j int, right bool) bool {
	first, last := text[i].r, text[j-1].r
	if isAlnum(first) && i > 0 && !text[i].soft {
		p := text[i-1].r
		if isAlnum(p) || (isDigit(first) && (p == '.' || p == ',') && i > 1 && isDigit(text[i-2].r)) {
			return false
		}
	}
	if right && isAlnum(last) && j < len(text) && !text[j].soft {
		n := text[j].r
		if isAlnum(n) || (isDigit(last) && (n == '.' || n == ',') && j+1 < len(text) && isDigit(text[j+1].r)) {
			return false
		}
	}
	return true
}

type refEntry struct {
	id    string
	terms [][]rune
	match string // "word", "prefix", "exact"
	rule  string // "any", "common", "name"
}

func refList(tb testing.TB) []refEntry {
	var out []refEntry
	for _, e := range shippedList(tb).Entries {
		if e.Context != "" {
			continue // the grammar rules have their own tests
		}
		re := refEntry{id: e.ID, match: e.Match, rule: e.Case}
		for _, t := range e.Terms {
			if re.match == "word" {
				t = strings.TrimSuffix(t, ".")
			}
			re.terms = append(re.terms, refTerm(t))
		}
		out = append(out, re)
	}
	return out
}

// refLeaks lists the terms in text that no reader may see: every
// occurrence, except a lowercase common word (ordinary English) and a term
// the query holds (the echo rule).
func refLeaks(list []refEntry, text, query string) []string {
	t, q := refFold(text), refFold(query)
	var leaks []string
	for _, e := range list {
		for _, term := range e.terms {
			if len(term) == 0 {
				continue
			}
			at := refFind(t, term, e.match)
			if len(at) == 0 || refEchoed(q, term, e.match) {
				continue
			}
			for _, i := range at {
				if e.rule == "common" {
					upper := false
					for _, c := range t[i : i+len(term)] {
						upper = upper || unicode.IsUpper(c.shape)
					}
					if !upper {
						continue
					}
				}
				leaks = append(leaks, e.id+" at "+string(term))
			}
		}
	}
	return leaks
}

// refEchoed reports a term the query holds, in any of the spellings the
// filter treats as the same term: as listed, with its parts joined
// ("coherencescore"), or without the spaces around a symbol ("Φ=0.042").
// Being generous here only makes the check weaker, never wrong.
func refEchoed(q []refChar, term []rune, match string) bool {
	joined := slices.DeleteFunc(slices.Clone(term), func(r rune) bool { return r == ' ' })
	return len(refFind(q, term, match)) > 0 || len(refFind(q, joined, match)) > 0
}

// FuzzFilter: arbitrary text and query never make the filter panic; PASS
// gives the input back; QUARANTINE gives nothing; REPLACE gives a text the
// filter itself passes; and no text the filter lets out holds a blocked
// term by the reference matcher, except what the echo rule exempts.
func FuzzFilter(f *testing.F) {
	flt := newFilter(f)
	list := refList(f)
	for _, vc := range cleanVerdicts[:6] {
		f.Add(vc.a.Summary, vc.query)
	}
	for _, tc := range substitutions {
		f.Add(tc.in, "")
	}
	for _, s := range []string{"A\u200bION agrees.", "ＡＩＯＮ", "coherence\u00a0score", "Φ = 0.042", "Ω=97.4%", "the options are manifold",
		"<p>AI&#79;N</p>", "Dr. Logos", "C.L.O.D.", "GL\u00adOSS", "the AION team", "AION, ASTRA and NOUS agree.", "10-4", "$0.042", "Σ. ▶"} {
		f.Add(s, "")
		f.Add("The verdict: "+s+" holds.", s)
	}
	f.Fuzz(func(t *testing.T, text, query string) {
		r := flt.Text(text, query)
		switch r.Action {
		case Pass:
			if r.Text != text {
				t.Fatalf("PASS changed %q to %q", text, r.Text)
			}
			for _, h := range r.Hits {
				if !h.Echo {
					t.Fatalf("PASS with an unexempted hit %+v", h)
				}
			}
		case Quarantine:
			if r.Text != "" || r.Reason == "" {
				t.Fatalf("QUARANTINE gave text %q, reason %q", r.Text, r.Reason)
			}
		case Replace:
			if again := flt.Text(r.Text, query); again.Action != Pass {
				t.Fatalf("%q became %q, which is %s %+v", text, r.Text, again.Action, again.Hits)
			}
		default:
			t.Fatalf("action %v", r.Action)
		}
		if leaks := refLeaks(list, r.Text, query); len(leaks) > 0 {
			t.Fatalf("%q (query %q) gave %s %q, which holds %v", text, query, r.Action, r.Text, leaks)
		}
		// The other entry points: no panic, and the same judgement.
		out, rep := flt.Analysis(oracle.Analysis{Summary: text, Breakdown: map[string]oracle.DimensionNote{"Stability": {Analysis: text}}}, query)
		if (rep.Action == Pass) != (r.Action == Pass) || (rep.Action == Pass && out.Summary != text) {
			t.Fatalf("Analysis %s, Text %s for %q", rep.Action, r.Action, text)
		}
		if m := flt.Mail(text, text, text, query); r.Action != Pass && m.Action == Pass {
			t.Fatalf("Mail passed %q, which Text does not", text)
		}
	})
}
