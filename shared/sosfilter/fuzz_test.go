package sosfilter

import (
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
		for _, c := range refDecompose(r) {
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

// refDecompose is r's compatibility decomposition, but for a Hangul
// syllable, which is one character as written and as read: its jamo are
// no letters a reader spells a word with (and the block list holds none).
// The filter reads the decomposition tables, which leave the syllables
// whole (Unicode decomposes them by algorithm instead).
func refDecompose(r rune) string {
	if 0xac00 <= r && r <= 0xd7a3 {
		return string(r)
	}
	return norm.NFKD.String(string(r))
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
// occurrence, except a lowercase common word (ordinary English).
func refLeaks(list []refEntry, text string) []string {
	t := refFold(text)
	var leaks []string
	for _, e := range list {
		for _, term := range e.terms {
			if len(term) == 0 {
				continue
			}
			at := refFind(t, term, e.match)
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

// FuzzFilter: arbitrary text never makes the filter panic; PASS gives the
// input back; QUARANTINE gives nothing; REPLACE gives a text the filter
// itself passes; and no text the filter lets out holds a blocked term by
// the reference matcher, written or disguised (spelt out, with digits).
func FuzzFilter(f *testing.F) {
	flt := newFilter(f)
	list := refList(f)
	for _, vc := range cleanVerdicts[:6] {
		f.Add(vc.a.Summary)
	}
	for _, tc := range substitutions {
		f.Add(tc.in)
	}
	for _, s := range []string{"A\u200bION agrees.", "ＡＩＯＮ", "coherence\u00a0score", "Φ = 0.042", "Ω=97.4%", "the options are manifold",
		"<p>AI&#79;N</p>", "Dr. Logos", "C.L.O.D.", "GL\u00adOSS", "the AION team", "AION, ASTRA and NOUS agree.", "10-4", "$0.042", "Σ. ▶",
		"A I O N", "G.L.O.S.S", "A/I/O/N", "GL0SS", "A1ON", "4 1 0 N", "ᴀɪᴏɴ", "ɢʟᴏss", "Ꭺ I O N", "k i l l b o x", "\u202eN O I A\u202c",
		"B2B in Q4 at 10x", "A/B, e.g. U.S."} {
		f.Add(s)
		f.Add("The verdict: " + s + " holds.")
	}
	f.Fuzz(func(t *testing.T, text string) {
		r := flt.Text(text)
		switch r.Action {
		case Pass:
			if r.Text != text {
				t.Fatalf("PASS changed %q to %q", text, r.Text)
			}
			if len(r.Hits) > 0 {
				t.Fatalf("PASS with hits %+v", r.Hits)
			}
		case Quarantine:
			if r.Text != "" || r.Reason == "" {
				t.Fatalf("QUARANTINE gave text %q, reason %q", r.Text, r.Reason)
			}
		case Replace:
			if again := flt.Text(r.Text); again.Action != Pass {
				t.Fatalf("%q became %q, which is %s %+v", text, r.Text, again.Action, again.Hits)
			}
		default:
			t.Fatalf("action %v", r.Action)
		}
		if leaks := refLeaks(list, r.Text); len(leaks) > 0 {
			t.Fatalf("%q gave %s %q, which holds %v", text, r.Action, r.Text, leaks)
		}
		if leaks := refDisguisedLeaks(list, r.Text); len(leaks) > 0 {
			t.Fatalf("%q gave %s %q, which shows %v", text, r.Action, r.Text, leaks)
		}
		// The other entry points: no panic, and the same judgement.
		out, rep := flt.Analysis(oracle.Analysis{Summary: text, Breakdown: map[string]oracle.DimensionNote{"Stability": {Analysis: text}}})
		if (rep.Action == Pass) != (r.Action == Pass) || (rep.Action == Pass && out.Summary != text) {
			t.Fatalf("Analysis %s, Text %s for %q", rep.Action, r.Action, text)
		}
		if m := flt.Mail(text, text, text, Own{}); r.Action != Pass && m.Action == Pass {
			t.Fatalf("Mail passed %q, which Text does not", text)
		}
	})
}

// The reference of the disguise view, written apart from disguise.go: the
// whole text is cut into words first, then runs are joined and digits
// read, then every letter term is compared word by word.

type refWord struct {
	chars    []refChar // folded letters and digits, with their shapes
	seps     int       // visible characters between it and the word before
	newlines int
	gap      rune // ' ' (separators only), '.' (a full stop, then separators) or '|'
}

// refWords cuts text into words: letters and digits (a character counts as
// what its folded form starts with), an apostrophe between two of them
// inside the word, and anything else visible between words.
func refWords(text string) []refWord {
	type item struct {
		kind  int // 0 separator, 1 letter, 2 digit, 3 apostrophe
		chars []refChar
		nl    bool
		first rune
	}
	var items []item
	for _, r := range text {
		if ignorable(r) {
			continue
		}
		var folded []refChar
		for _, c := range refDecompose(r) {
			if c == 0x0345 {
				c = 0x03b9
			} else if unicode.In(c, unicode.M) || ignorable(c) {
				continue
			}
			shapes := []rune{c}
			if latin := readsAs(c); latin != "" {
				shapes = []rune(latin)
			}
			for _, s := range shapes {
				folded = append(folded, refChar{r: unicode.ToLower(unicode.ToUpper(s)), shape: s})
			}
		}
		if len(folded) == 0 {
			continue
		}
		first := folded[0].r
		switch {
		case first < 0x80 && isDigit(first):
			items = append(items, item{kind: 2, chars: folded[:1]})
		case unicode.IsLetter(first):
			items = append(items, item{kind: 1, chars: folded})
		case isApostrophe(first):
			items = append(items, item{kind: 3, first: first})
		default:
			items = append(items, item{kind: 0, nl: first == '\n' || first == 0x2028 || first == 0x2029, first: first})
		}
	}
	var words []refWord
	var cur *refWord
	seps, nl, gap := 0, 0, ' '
	for i, it := range items {
		inside := it.kind == 3 && cur != nil && i+1 < len(items) && (items[i+1].kind == 1 || items[i+1].kind == 2)
		switch {
		case it.kind == 1 || it.kind == 2:
			if cur == nil {
				words = append(words, refWord{seps: seps, newlines: nl, gap: gap})
				cur = &words[len(words)-1]
				seps, nl, gap = 0, 0, ' '
			}
			cur.chars = append(cur.chars, it.chars...)
		case inside:
			cur.chars = append(cur.chars, refChar{r: '\'', shape: '\''})
		default:
			cur = nil
			switch {
			case it.kind == 0 && (unicode.IsSpace(it.first) || it.first == 0x2212 || it.first == 0x2800 || unicode.In(it.first, unicode.Pd, unicode.Pc)):
			case it.first == '.' && seps == 0:
				gap = '.'
			default:
				gap = '|'
			}
			seps++
			if it.nl {
				nl++
			}
		}
	}
	return words
}

var refLeet = map[rune]rune{'0': 'o', '1': '1', '2': 'z', '3': 'e', '4': 'a', '5': 's', '6': 'g', '7': 't', '8': 'b', '9': 'g'}

// refView is a word of the disguise view and what stands before it.
type refView struct {
	chars []refChar
	gap   rune
}

// refDisguisedView joins the runs of one-character words and reads digits
// as letters where a word (or a run) has a letter.
func refDisguisedView(words []refWord) []refView {
	var out []refView
	for i := 0; i < len(words); {
		j := i + 1
		if len(words[i].chars) == 1 {
			for j < len(words) && len(words[j].chars) == 1 && words[j].seps <= 3 && words[j].newlines < 2 {
				j++
			}
		}
		var w []refChar
		letter, digit := false, false
		for _, rw := range words[i:j] {
			for _, c := range rw.chars {
				w = append(w, c)
				letter = letter || unicode.IsLetter(c.r)
				digit = digit || isDigit(c.r)
			}
		}
		if letter && (digit || j > i+1) {
			for k, c := range w {
				if l, ok := refLeet[c.r]; ok {
					w[k].r = l
				}
			}
		}
		out = append(out, refView{chars: w, gap: words[i].gap})
		i = j
	}
	return out
}

// refDisguisedLeaks lists the letter terms the disguise view of text shows
// as whole words, by refLeaks' case rule.
func refDisguisedLeaks(list []refEntry, text string) []string {
	view := refDisguisedView(refWords(text))
	// A term's words run together are a word of their own: where the list
	// has that word as a term, its case rule is the word's ("C.L.O.D."
	// matches in any case, but its letters run together are CLOD, whose
	// lowercase is the English "clod").
	wordRule := map[string]string{}
	for _, e := range list {
		for _, term := range e.terms {
			if tw, _ := refTermWords(term); len(tw) == 1 {
				wordRule[tw[0]] = e.rule
			}
		}
	}
	var leaks []string
	for _, e := range list {
		for _, term := range e.terms {
			tw, gaps := refTermWords(term)
			if tw == nil {
				continue
			}
			forms := []refForm{{tw, gaps}}
			rules := []string{e.rule}
			if len(tw) > 1 {
				joined := strings.Join(tw, "")
				forms = append(forms, refForm{words: []string{joined}})
				rule, ok := wordRule[joined]
				if !ok {
					rule = e.rule
				}
				rules = append(rules, rule)
			}
			for i, form := range forms {
				for _, upper := range refFindWords(view, form) {
					if rules[i] != "common" || upper {
						leaks = append(leaks, e.id+" disguised as "+strings.Join(form.words, " "))
					}
				}
			}
		}
	}
	return leaks
}

// refFindWords finds form as whole words of view, 1 standing for i or l;
// for each place, whether a letter there is a capital.
func refFindWords(view []refView, form refForm) []bool {
	var found []bool
	for i := 0; i+len(form.words) <= len(view); i++ {
		upper, same := false, true
		for k, part := range form.words {
			if k > 0 && view[i+k].gap != form.gaps[k-1] {
				same = false
				break
			}
			w := view[i+k].chars
			// The last word may go on after an apostrophe ("GL0SS's").
			last := k == len(form.words)-1
			if len(w) != len([]rune(part)) && !(last && len(w) > len([]rune(part)) && w[len([]rune(part))].r == '\'') {
				same = false
				break
			}
			for n, pc := range []rune(part) {
				c := w[n]
				if c.r != pc && !(c.r == '1' && (pc == 'i' || pc == 'l')) {
					same = false
					break
				}
				upper = upper || unicode.IsUpper(c.shape)
			}
			if !same {
				break
			}
		}
		if same {
			found = append(found, upper)
		}
	}
	return found
}

// refForm is a term as words and what stands between them.
type refForm struct {
	words []string
	gaps  []rune
}

// refTermWords is a term's words and the gaps between them (' ', or '.'
// for "dr. logos") if it is made of ASCII letters only; nil otherwise.
func refTermWords(term []rune) ([]string, []rune) {
	var words []string
	var gaps []rune
	cur := ""
	gap := ' '
	for _, r := range append(term, ' ') {
		switch {
		case r == ' ' || r == '.':
			if cur != "" {
				if len(words) > 0 {
					gaps = append(gaps, gap)
				}
				words = append(words, cur)
				cur, gap = "", ' '
			}
			if r == '.' {
				gap = '.'
			}
		case r == '\'':
		case 'a' <= r && r <= 'z':
			cur += string(r)
		default:
			return nil, nil
		}
	}
	return words, gaps
}
