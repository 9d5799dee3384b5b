package sosfilter

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// A Russian or Ukrainian sentence is written in Cyrillic letters, several
// of which look like Greek ones ("п" π, "ф" φ, "и" ͷ, "к" κ, "л" λ, "є"
// ε), and every Greek letter is a listed symbol (GAP-C): read as what they
// look like, such letters held every Russian verdict for review. Inside a
// word written wholly in Cyrillic, such a letter is that word's letter,
// not a symbol's disguise ("Фаза", "п'ять"); so are the conjunctions and
// the preposition of one letter in a Cyrillic sentence (oneLetterWords).
// Everything else still reads as the symbol, from any script:
//
//   - a look-alike standing alone ("the Ф factor") or among symbols;
//   - a look-alike in a word of another script, or of several ("kaп");
//   - a word that is the term whole ("ЛС" reads ΛC: it looks the same);
//   - a look-alike of another script in its own word: Cherokee, Armenian,
//     Coptic and the other scripts no verdict is written in, and Latin,
//     whose letters with hooks and bars ("ɅC", "ꞷQ") look like the
//     symbols in the words an adversary would write them in.
//
// Greek letters are the listed symbols themselves, not look-alikes: a
// Greek sentence is held by design (GAP-C).

// oneLetterWords are the Cyrillic words of one letter that read as a
// symbol: the Russian and Ukrainian conjunctions "и" and "й" (and), the
// preposition "к" (towards), the Ukrainian "є" (is). Any other letter
// alone is read as what it looks like, even in a sentence of its script:
// "Ф" alone is Φ.
const oneLetterWords = "иИйЙкКєЄ"

// ownWordsRule names the rule below in the filter's Version.
const ownWordsRule = "symbol look-alikes: Cyrillic letters of Cyrillic words, and " + oneLetterWords + " in Cyrillic sentences, are their words' own"

// inOwnWords reports whether a term matched at s[start:end] reads as a
// listed symbol only through Cyrillic letters of Cyrillic words, as the
// comment above says: then the match is a sentence in Russian or
// Ukrainian, not a disguise, and is dropped.
func inOwnWords(s string, isHTML bool, start, end int) bool {
	found := false
	for i := start; i < end; {
		r, size, _, kind := decode(s, i, isHTML)
		if kind == kindRune && symbolLookAlike(r) {
			if !unicode.Is(unicode.Cyrillic, r) {
				return false
			}
			from, to, letters, own := wordAround(s, isHTML, i, i+size)
			switch {
			case !own:
				return false
			case from < start || to > end:
				// A letter of a longer word.
			case letters == 1 && strings.ContainsRune(oneLetterWords, r) && inCyrillicSentence(s, isHTML, from, to):
			default:
				return false
			}
			found = true
		}
		i += size
	}
	return found
}

// symbolLookAlike reports a letter that reads as a listed symbol: its
// letter (a "й" is an "и" with a breve) is in the look-alike table with a
// reading that is not Latin.
func symbolLookAlike(r rune) bool {
	if r < utf8.RuneSelf {
		return false
	}
	var enc [utf8.UTFMax]byte
	if d := norm.NFKD.Properties(enc[:utf8.EncodeRune(enc[:], r)]).Decomposition(); d != nil {
		r, _ = utf8.DecodeRune(d)
	}
	reads := readsAs(r)
	return reads != "" && reads[0] >= utf8.RuneSelf
}

// inCyrillicSentence reports whether the word at s[from:to] has a word
// beside it on its line (past spaces, punctuation and what is not seen: a
// tag, a zero-width space) on at least one side, and no word beside it
// that is not wholly Cyrillic. A digit or a symbol ends the search on its
// side: "5 и 6" has no word beside it, and "<p>И вот" (an email's source)
// has "вот".
func inCyrillicSentence(s string, isHTML bool, from, to int) bool {
	before, okBefore := wordBefore(s, isHTML, from)
	after, okAfter := wordAfter(s, isHTML, to)
	return okBefore && okAfter && (before || after)
}

// maxWord bounds how far wordAround reads either way, in bytes: no
// Russian or Ukrainian word is longer, and a longer run of letters (a
// thousand "п" in a row) is read as what it looks like, in time linear in
// the text.
const maxWord = 128

// wordAround finds the word that holds s[at:end]: where it starts and
// ends, how many letters it has, and whether every letter is Cyrillic.
// Marks belong to the word, and so do apostrophes between two letters
// (Ukrainian "п'ять").
func wordAround(s string, isHTML bool, at, end int) (from, to, letters int, own bool) {
	own = true
	from, to = at, end
	for from > 0 {
		if at-from > maxWord {
			return from, to, 0, false
		}
		r, i, kind := decodeBack(s, from, isHTML)
		if kind != kindRune {
			break
		}
		if isApostrophe(r) {
			// Inside the word only between two letters.
			if i == 0 {
				break
			}
			if p, _, k := decodeBack(s, i, isHTML); k != kindRune || !unicode.IsLetter(p) {
				break
			}
		} else if !unicode.IsLetter(r) && !unicode.IsMark(r) {
			break
		}
		from = i
	}
	for to < len(s) {
		if to-end > maxWord {
			return from, to, 0, false
		}
		r, size, _, kind := decode(s, to, isHTML)
		if kind != kindRune {
			break
		}
		if isApostrophe(r) {
			if to+size >= len(s) {
				break
			}
			if n, _, _, k := decode(s, to+size, isHTML); k != kindRune || !unicode.IsLetter(n) {
				break
			}
		} else if !unicode.IsLetter(r) && !unicode.IsMark(r) {
			break
		}
		to += size
	}
	for i := from; i < to; {
		r, size, _, _ := decode(s, i, isHTML)
		i += size
		if unicode.IsLetter(r) {
			letters++
			if !unicode.Is(unicode.Cyrillic, r) {
				own = false
			}
		}
	}
	return from, to, letters, own
}

// wordBefore looks for the word just before s[:at] on its line, as
// inCyrillicSentence says. found reports one there, ok that it is wholly
// Cyrillic or that there is none.
func wordBefore(s string, isHTML bool, at int) (found, ok bool) {
	for i := at; i > 0; {
		r, j, kind := decodeBack(s, i, isHTML)
		switch {
		case kind == kindSoft:
		case unicode.IsLetter(r):
			_, _, _, own := wordAround(s, isHTML, j, i)
			return true, own
		case r == '\n' || r == '\u2029' || (!unicode.IsSpace(r) && !unicode.IsPunct(r)):
			return false, true
		}
		i = j
	}
	return false, true
}

// wordAfter is wordBefore's mirror, from s[at:].
func wordAfter(s string, isHTML bool, at int) (found, ok bool) {
	for i := at; i < len(s); {
		r, size, str, kind := decode(s, i, isHTML)
		if kind == kindString {
			r, _ = utf8.DecodeRuneInString(str)
		}
		switch {
		case kind == kindSoft:
		case unicode.IsLetter(r):
			_, _, _, own := wordAround(s, isHTML, i, i+size)
			return true, own
		case r == '\n' || r == '\u2029' || (!unicode.IsSpace(r) && !unicode.IsPunct(r)):
			return false, true
		}
		i += size
	}
	return false, true
}
