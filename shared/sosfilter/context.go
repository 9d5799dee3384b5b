package sosfilter

import (
	"unicode"
	"unicode/utf8"
)

// judge applies an entry's case rule and context rule (GAP-I) to one
// occurrence, s[start:end]. ok is false when the occurrence is ordinary
// English and no hit at all; otherwise act is what it calls for, the
// entry's action or, where the rules find it ambiguous, Quarantine.
func judge(s string, isHTML bool, start, end int, e *entry) (act Action, ok bool) {
	act = e.action
	if e.caseRule != caseAny {
		switch caseShape(s, isHTML, start, end) {
		case shapeLower:
			if e.caseRule == caseCommon {
				return Pass, false // the English word
			}
			act = Quarantine
		case shapeUpper, shapeNone:
			// The crew's spelling: the entry's action.
		default:
			act = Quarantine // Capitalised or mixed: a person decides
		}
	}
	var c Action
	switch e.context {
	case ctxNone:
		return act, true
	case ctxManifold, ctxManifolds:
		c, ok = manifoldRule(s, isHTML, start, end, e.context == ctxManifolds)
	case ctxUtterance:
		c, ok = utteranceRule(s, isHTML, start, end)
	case ctxFinal:
		c, ok = finalRule(s, isHTML, end)
	case ctxAmount:
		c, ok = amountRule(s, isHTML, start, end)
	}
	if !ok {
		return Pass, false
	}
	return max(act, c), true
}

// Case shapes of an occurrence's letters.
const (
	shapeNone  = iota // no cased letter ("10-4", symbols)
	shapeLower        // all lowercase
	shapeUpper        // all capitals
	shapeTitle        // a capital, then lowercase
	shapeMixed        // anything else
)

// caseShape looks at the letters of s[start:end] as the reader sees them
// (full-width, accented and look-alike letters by their base letter).
func caseShape(s string, isHTML bool, start, end int) int {
	upper, lower, firstUpper := 0, 0, false
	look := func(r rune) {
		b := baseRune(r)
		switch {
		case unicode.IsUpper(b):
			if upper+lower == 0 {
				firstUpper = true
			}
			upper++
		case unicode.IsLower(b):
			lower++
		}
	}
	for i := start; i < end; {
		r, size, str, kind := decode(s, i, isHTML)
		i += size
		switch kind {
		case kindRune:
			look(r)
		case kindString:
			for _, r := range str {
				look(r)
			}
		}
	}
	switch {
	case upper == 0 && lower == 0:
		return shapeNone
	case upper == 0:
		return shapeLower
	case lower == 0:
		return shapeUpper
	case firstUpper && upper == 1:
		return shapeTitle
	}
	return shapeMixed
}

// The manifold rule. "manifold" is the CSDM noun ("the manifold shows
// strain") and an ordinary English adjective ("the options are manifold",
// "manifold benefits") and engineering noun ("the intake manifold"). In
// order:
//
//  1. Capitalised in mid-sentence (a name: Manifold Markets) or in mixed
//     case: quarantine. All capitals reads as lowercase.
//  2. Followed by a physics noun ("manifold curvature"): quarantine.
//  3. After an engineering word ("exhaust manifold"): ordinary.
//  4. Singular only: after a form of "be", a linking verb or a degree
//     adverb ("are manifold", "truly manifold"): ordinary (predicative
//     adjective); followed by a word that is not a verb or function word
//     ("manifold benefits", "the manifold ways"): ordinary (attributive
//     adjective).
//  5. What is left is a noun. After a determiner or possessive ("the
//     manifold", "its manifold", "the idea's manifold"), or an article and
//     one common adjective ("the whole manifold"): replaced. Otherwise
//     the sentence cannot be repaired reliably: quarantine.
func manifoldRule(s string, isHTML bool, start, end int, plural bool) (Action, bool) {
	switch caseShape(s, isHTML, start, end) {
	case shapeTitle:
		if !sentenceStart(s, isHTML, start) {
			return Quarantine, true
		}
	case shapeMixed:
		return Quarantine, true
	}
	pt := prevToken(s, isHTML, start)
	nt := nextToken(s, isHTML, end)
	if nt.kind == tokWord && nt.in(physicsNouns) {
		return Quarantine, true
	}
	if pt.kind == tokWord && pt.in(engineeringWords) {
		return Pass, false
	}
	if !plural {
		if pt.kind == tokWord && pt.in(linkingWords) {
			return Pass, false
		}
		if nt.kind == tokWord && !nt.in(nounFollowers) {
			return Pass, false
		}
	}
	if pt.kind == tokWord && (pt.in(determiners) || pt.in(possessives) || pt.possessive()) {
		return Replace, true
	}
	if pt.kind == tokWord && pt.in(adjectives) {
		if p2 := prevToken(s, isHTML, pt.start); p2.kind == tokWord && (p2.in(dropDeterminers) || p2.in(possessives)) {
			return Replace, true
		}
	}
	return Quarantine, true
}

// utteranceRule: the radio reply ("Copy that.") stands alone: at the start
// of a sentence or after a comma, colon, semicolon, dash or bracket, and
// followed by punctuation or the end. "Rivals can copy that feature" is
// ordinary.
func utteranceRule(s string, isHTML bool, start, end int) (Action, bool) {
	if !finalToken(s, isHTML, end) {
		return Pass, false
	}
	if sentenceStart(s, isHTML, start) {
		return Replace, true
	}
	if pt := prevToken(s, isHTML, start); pt.kind == tokPunct {
		switch pt.r {
		case ',', ';', ':', '(', 0x2013, 0x2014:
			return Replace, true
		}
	}
	return Pass, false
}

// finalRule: the radio use ends its phrase ("time to hammer down!");
// followed by a word ("hammer down the price") it is ordinary.
func finalRule(s string, isHTML bool, end int) (Action, bool) {
	if finalToken(s, isHTML, end) {
		return Replace, true // the entry's own action decides (judge takes the stronger)
	}
	return Pass, false
}

// finalToken reports the end of the text or closing punctuation after end.
func finalToken(s string, isHTML bool, end int) bool {
	nt := nextToken(s, isHTML, end)
	if nt.kind == tokEnd {
		return true
	}
	if nt.kind != tokPunct {
		return false
	}
	switch nt.r {
	case '.', ',', '!', '?', ';', ':', ')', ']', '"', '\'', 0x2019, 0x201d, 0x2026, 0x2013, 0x2014, '-':
		return true
	}
	return false
}

// amountRule: 0.042 is the damping constant, except as money ("$0.042",
// "USD 0.042") or a percentage ("0.042%", "0.042 percent"), which are
// ordinary numbers. Before a verb, preposition or "constant", or at the
// end of a phrase, it is replaced; before anything else (a unit, a range)
// the substitute would be wrong, so it quarantines.
func amountRule(s string, isHTML bool, start, end int) (Action, bool) {
	pt := prevToken(s, isHTML, start)
	if pt.kind == tokPunct && unicode.Is(unicode.Sc, pt.r) {
		return Pass, false
	}
	if pt.kind == tokWord && pt.in(currencyCodes) {
		return Pass, false
	}
	nt := nextToken(s, isHTML, end)
	switch nt.kind {
	case tokEnd:
		return Replace, true
	case tokWord:
		switch {
		case nt.is("percent") || nt.is("per") || nt.is("pct"):
			return Pass, false
		case nt.in(amountFollowers):
			return Replace, true
		}
		return Quarantine, true
	}
	if nt.r == '%' {
		return Pass, false
	}
	if after := nextToken(s, isHTML, nt.end); after.kind == tokWord && after.digit {
		return Quarantine, true // a range or ratio: "0.042–0.05"
	}
	return Replace, true
}

// Token kinds.
const (
	tokEnd   = iota // the start or end of the text
	tokWord         // letters and digits, with inner apostrophes
	tokPunct        // one other visible character, in r
)

// token is a word or punctuation mark next to an occurrence, lowercased
// into a fixed buffer so that looking at it allocates nothing.
type token struct {
	kind       int
	r          rune
	start, end int // original offsets
	b          [24]byte
	n          int
	other      bool // a letter outside a-z, or too long: matches no list
	upper      bool // the first letter is a capital
	digit      bool // starts with a digit
}

// in reports a word in the set (lowercase ASCII words only). The
// conversion in a map index allocates nothing.
func (t *token) in(set map[string]bool) bool {
	return t.kind == tokWord && !t.other && set[string(t.b[:t.n])]
}

// is reports the word w.
func (t *token) is(w string) bool {
	return t.kind == tokWord && !t.other && string(t.b[:t.n]) == w
}

// possessive reports a word like "idea's" or "users'".
func (t *token) possessive() bool {
	if t.kind != tokWord || t.other || t.n < 3 {
		return false
	}
	w := t.b[:t.n]
	return (w[t.n-2] == '\'' && w[t.n-1] == 's') || w[t.n-1] == '\''
}

func (t *token) put(r rune) {
	b := baseRune(r)
	if t.n == 0 && !t.other {
		t.upper = unicode.IsUpper(b)
		t.digit = unicode.IsDigit(b)
	}
	b = lowerFold(b)
	if isApostrophe(b) {
		b = '\''
	}
	if b >= utf8.RuneSelf || t.n == len(t.b) {
		t.other = true
		return
	}
	t.b[t.n] = byte(b)
	t.n++
}

func isApostrophe(r rune) bool { return r == '\'' || r == 0x2019 || r == 0x02bc }

func isWordRune(r rune) bool {
	b := baseRune(r)
	return unicode.IsLetter(b) || unicode.IsDigit(b)
}

// nextToken reads the word or punctuation after s[i], skipping white
// space and invisible characters.
func nextToken(s string, isHTML bool, i int) token {
	var t token
	for i < len(s) {
		r, size, str, kind := decode(s, i, isHTML)
		if kind == kindString {
			r, _ = utf8.DecodeRuneInString(str)
		}
		switch {
		case kind == kindSoft || unicode.IsSpace(r):
			i += size
			continue
		case isWordRune(r):
			t.kind, t.start = tokWord, i
			for i < len(s) {
				r, size, str, kind := decode(s, i, isHTML)
				if kind == kindString {
					r, _ = utf8.DecodeRuneInString(str)
				}
				if kind == kindSoft {
					i += size
					continue
				}
				if !isWordRune(r) && !(isApostrophe(r) && i+size < len(s) && nextIsWord(s, isHTML, i+size)) {
					break
				}
				t.put(r)
				i += size
			}
			t.end = i
			return t
		default:
			t.kind, t.r, t.start, t.end = tokPunct, r, i, i+size
			return t
		}
	}
	t.start, t.end = i, i
	return t
}

func nextIsWord(s string, isHTML bool, i int) bool {
	r, _, str, kind := decode(s, i, isHTML)
	if kind == kindString {
		r, _ = utf8.DecodeRuneInString(str)
	}
	return kind != kindSoft && isWordRune(r)
}

// prevToken reads the word or punctuation before s[i].
func prevToken(s string, isHTML bool, i int) token {
	var t token
	for i > 0 {
		r, start, kind := decodeBack(s, i, isHTML)
		switch {
		case kind == kindSoft || unicode.IsSpace(r):
			i = start
			continue
		case isWordRune(r):
			t.kind, t.end = tokWord, i
			var rev [32]rune
			n := 0
			for i > 0 {
				r, start, kind := decodeBack(s, i, isHTML)
				if kind == kindSoft {
					i = start
					continue
				}
				if !isWordRune(r) && !(isApostrophe(r) && start > 0 && prevIsWord(s, isHTML, start)) {
					break
				}
				if n < len(rev) {
					rev[n] = r
				}
				n++
				i = start
			}
			if n > len(rev) {
				t.other = true
				n = len(rev)
			}
			for j := n - 1; j >= 0; j-- {
				t.put(rev[j])
			}
			t.start = i
			return t
		default:
			t.kind, t.r, t.start, t.end = tokPunct, r, start, i
			return t
		}
	}
	t.start, t.end = 0, 0
	return t
}

func prevIsWord(s string, isHTML bool, i int) bool {
	r, _, kind := decodeBack(s, i, isHTML)
	return kind != kindSoft && isWordRune(r)
}

// sentenceStart reports whether s[i] begins a sentence or a line: nothing
// but white space, opening quotes or brackets and list bullets before it,
// back to the start of the text, a line break, or a full stop, question or
// exclamation mark that does not close an abbreviation ("e.g.").
func sentenceStart(s string, isHTML bool, i int) bool {
	for i > 0 {
		r, start, kind := decodeBack(s, i, isHTML)
		if kind == kindSoft {
			i = start
			continue
		}
		switch r {
		case '\n', '\r', 0x2028, 0x2029:
			return true
		case '.', '!', '?', 0x2026:
			if r == '.' {
				if pt := prevToken(s, isHTML, start); pt.kind == tokWord && pt.in(abbreviations) {
					return false
				}
			}
			return true
		case ' ', '\t', 0xa0, '"', '\'', '(', '[', 0x201c, 0x2018, 0xab, '*', 0x2022, '-', 0x2013, 0x2014:
			i = start
			continue
		}
		return false
	}
	return true
}

var (
	// dropDeterminers go with the term: "the TMM" becomes "our analysis".
	dropDeterminers = set("the", "a", "an", "this", "these", "those")
	// possessives stay and take the bare substitute: "your analysis".
	possessives = set("my", "our", "your", "his", "her", "its", "their", "each", "every")
	// determiners mark the next word as a noun (the manifold rule).
	determiners = set("the", "a", "an", "this", "that", "these", "those", "my", "our", "your", "his", "her",
		"its", "their", "each", "every", "no", "any")
	// adjectives are the common ones that may stand between an article and
	// a term ("the current TMM" becomes "the current analysis").
	adjectives = set("current", "new", "latest", "overall", "high", "low", "final", "full", "whole", "entire",
		"same", "internal", "underlying", "initial", "updated", "original", "combined", "total", "average",
		"strong", "weak", "previous", "first", "last", "next", "main", "core", "raw", "revised", "own")
	physicsNouns = set("curvature", "geometry", "topology", "tensor", "tensors", "kernel", "kernels", "damping",
		"collapse", "coherence", "decoherence", "entropy", "turbulence", "dynamics", "physics", "spacetime", "lattice")
	engineeringWords = set("intake", "exhaust", "hydraulic", "pneumatic", "vacuum", "fuel", "gas", "water", "air",
		"oil", "coolant", "brake", "steam", "distribution", "valve", "pipe", "heating", "plumbing", "cooling",
		"irrigation", "gauge", "radiator", "cylinder", "turbo", "header", "engine", "manifold")
	linkingWords = set("are", "is", "were", "was", "be", "been", "being", "remain", "remains", "remained", "seem",
		"seems", "seemed", "appear", "appears", "appeared", "become", "becomes", "became", "truly", "very", "so",
		"too", "indeed", "genuinely", "equally", "quite", "both", "and", "or", "more", "most", "less", "how", "as",
		"grow", "grows", "proved", "prove", "proves")
	// nounFollowers are verbs and function words: after them, "manifold"
	// was a noun.
	nounFollowers = set("is", "was", "are", "were", "has", "have", "had", "shows", "showed", "shown", "suggests",
		"suggested", "indicates", "indicated", "predicts", "predicted", "remains", "becomes", "became",
		"collapses", "collapsed", "curves", "curved", "bends", "holds", "held", "of", "in", "at", "for", "to",
		"with", "and", "or", "but", "that", "which", "where", "as", "from", "by", "on", "under", "over", "into",
		"itself", "can", "will", "would", "could", "should", "may", "might", "must", "does", "did", "here",
		"there", "when", "while", "because", "if")
	amountFollowers = set("is", "was", "are", "were", "and", "or", "in", "on", "for", "to", "of", "as", "with",
		"which", "that", "from", "by", "at", "constant")
	currencyCodes = set("usd", "cad", "eur", "gbp", "jpy", "aud", "chf", "inr", "cny", "nzd", "sek", "nok", "dkk")
	// abbreviations end in a full stop that does not end the sentence;
	// "e.g." and "i.e." are seen as their last letter.
	abbreviations = set("g", "e", "dr", "mr", "mrs", "ms", "vs", "cf", "approx", "prof", "st")
)

func set(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}
