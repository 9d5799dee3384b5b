package sosfilter

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// edit is one replacement: s[start:end] becomes text.
type edit struct {
	start, end int
	e          *entry
	dotted     bool // the last term's abbreviation may own the full stop after it
	text       string
}

// substitute replaces every Replace span of s, so
// that the English still reads:
//
//   - Neighbouring terms with the same substitute, joined by "and", "or",
//     a comma or a slash, become one ("AION and ASTRA" is "our analysis
//     team", not "our analysis team and our analysis team").
//   - A substitute with its own determiner ("our analysis", "the system")
//     takes the place of a determiner before the term ("the TMM shows" is
//     "our analysis shows"); after a possessive it loses its own ("your TMM
//     score" is "your analysis score"), as it does after an article and a
//     common adjective ("the current TMM" is "the current analysis").
//   - "a"/"an" before a substitute without a determiner agrees with it.
//   - A substitute at the start of a sentence or line is capitalised.
//   - A word the substitute already ends with is not repeated ("the AION
//     team" is "our analysis team").
//   - A dotted abbreviation's final full stop goes with it before a
//     lowercase word or a comma, and stays where it ends the sentence.
//
// The result is then checked around every insertion (no "the our", "a
// our", no doubled word, no lowercase sentence start); ok is false when a
// check fails, and the caller quarantines rather than deliver broken
// English.
func (f *Filter) substitute(s string, spans []span) (string, bool) {
	var edits []edit
	for _, sp := range spans {
		if sp.act != Replace {
			continue
		}
		p := f.patterns[sp.pat]
		e := &f.entries[p.entry]
		if n := len(edits); n > 0 && edits[n-1].e.sub == e.sub && connector(s[edits[n-1].end:sp.start]) {
			edits[n-1].end, edits[n-1].dotted = sp.end, p.dotted
			continue
		}
		edits = append(edits, edit{start: sp.start, end: sp.end, e: e, dotted: p.dotted})
	}
	if len(edits) == 0 {
		return s, true
	}
	low := 0
	for i := range edits {
		ed := &edits[i]
		high := len(s)
		if i+1 < len(edits) {
			high = edits[i+1].start
		}
		f.shape(s, ed, low, high)
		low = ed.end
	}
	var b strings.Builder
	b.Grow(len(s) + 24*len(edits))
	inserted := make([][2]int, 0, len(edits))
	prev := 0
	for _, ed := range edits {
		b.WriteString(s[prev:ed.start])
		at := b.Len()
		b.WriteString(ed.text)
		inserted = append(inserted, [2]int{at, b.Len()})
		prev = ed.end
	}
	b.WriteString(s[prev:])
	out := b.String()
	for _, in := range inserted {
		if !readsWell(out, in[0], in[1]) {
			return "", false
		}
	}
	return out, true
}

// shape decides one edit's extent and text; it may widen the edit over a
// determiner, an article, a final full stop or a doubled word, but never
// past low (the previous edit's end) or high (the next edit's start).
func (f *Filter) shape(s string, ed *edit, low, high int) {
	e := ed.e
	if ed.dotted && ed.end < high && s[ed.end] == '.' {
		nt := nextToken(s, false, ed.end+1)
		if (nt.kind == tokWord && !nt.upper && !nt.digit) || (nt.kind == tokPunct && strings.ContainsRune(",;:", nt.r)) {
			ed.end++
		}
	}
	text := e.sub
	pt := prevToken(s, false, ed.start)
	if e.subDet {
		switch {
		case pt.in(dropDeterminers):
			if pt.start >= low {
				ed.start = pt.start
			}
		case pt.in(possessives) || pt.possessive():
			text = e.bare
		case pt.in(adjectives):
			if p2 := prevToken(s, false, pt.start); p2.in(dropDeterminers) || p2.in(possessives) || p2.possessive() {
				text = e.bare
			}
		}
	} else if (pt.is("a") || pt.is("an")) && pt.start >= low {
		article := "a"
		if startsWithVowel(text) {
			article = "an"
		}
		if pt.upper {
			article = capitalize(article)
		}
		ed.start = pt.start
		text = article + " " + text
	}
	if sentenceStart(s, false, ed.start) {
		text = capitalize(text)
	}
	if nt := nextToken(s, false, ed.end); nt.kind == tokWord && nt.end <= high && nt.is(lastWord(text)) {
		ed.end = nt.end
	}
	ed.text = text
}

// readsWell checks the inserted text out[a:b] against its neighbours.
func readsWell(out string, a, b int) bool {
	ins := out[a:b]
	first, last := firstWord(ins), lastWord(ins)
	if pt := prevToken(out, false, a); pt.kind == tokWord {
		if pt.is(first) {
			return false // "our our"
		}
		if (first == "our" || first == "the") && (pt.in(possessives) || pt.in(determiners) || pt.in(adjectives)) {
			return false // "the our", "a our", "new our"
		}
		if (pt.is("a") && startsWithVowel(ins)) || (pt.is("an") && !startsWithVowel(ins)) {
			return false // "a our"
		}
	}
	if nt := nextToken(out, false, b); nt.kind == tokWord && nt.is(last) {
		return false // "team team"
	}
	if r, _ := utf8.DecodeRuneInString(ins); unicode.IsLower(r) && sentenceStart(out, false, a) {
		return false
	}
	return true
}

// connector reports the text between two terms that joins them as one
// noun phrase.
func connector(gap string) bool {
	switch strings.Join(strings.Fields(strings.ToLower(gap)), " ") {
	case ",", "and", ", and", "&", "or", ", or", "/", "+":
		return true
	}
	return false
}

func firstWord(s string) string {
	s = strings.ToLower(s)
	if i := strings.IndexByte(s, ' '); i >= 0 {
		return s[:i]
	}
	return s
}

func lastWord(s string) string {
	s = strings.ToLower(s)
	return s[strings.LastIndexByte(s, ' ')+1:]
}

func startsWithVowel(s string) bool {
	return s != "" && strings.ContainsRune("aeiouAEIOU", rune(s[0]))
}

func capitalize(s string) string {
	r, size := utf8.DecodeRuneInString(s)
	if size == 0 || unicode.IsUpper(r) {
		return s
	}
	return string(unicode.ToUpper(r)) + s[size:]
}

// words counts the words of s (runs of letters and digits), for the
// contamination density.
func words(s string) int {
	n, in := 0, false
	for _, r := range s {
		w := unicode.IsLetter(r) || unicode.IsDigit(r)
		if w && !in {
			n++
		}
		in = w
	}
	return n
}
