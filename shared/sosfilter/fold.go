package sosfilter

import (
	"html"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// sep is the one byte every separator becomes in the matching stream: white
// space of any kind, hyphens and dashes, underscores. A run of them is one
// sep, so "coherence\u00a0\u2009score", "coherence-score" and
// "coherence_score" all read "coherence score".
const sep = ' '

// foldMax bounds what one character folds to. The longest compatibility
// decomposition in Unicode is 18 code points (33 bytes in UTF-8); every
// folded code point takes at most 4 bytes.
const foldMax = 80

// foldRune writes the matching form of r into buf and returns its length.
// soft reports a character that is invisible in the text (a format or
// control character, a filler): it folds to nothing and counts as a word
// boundary, so "A\u200bION" reads "aion" and "TMM\u200bshows" still ends a
// word after "tmm".
//
// The matching form is the compatibility decomposition (the K of NFKC,
// from golang.org/x/text/unicode/norm) with every combining mark removed,
// separators turned into sep, the letters of other scripts and the small
// capitals that read as Latin letters turned into those (readsAs), and the
// case folded: full-width "ＡＩＯＮ", circled "ⒶⒾⓄⓃ", "AIÓN", Cyrillic
// "АІОN" and small capitals "ᴀɪᴏɴ" all read "aion". Composition, the C of
// NFKC, is left out on purpose: once the marks are gone there is nothing
// left to compose, and leaving it out is what lets one character be folded
// alone, without a buffer, on the way through the text.
func foldRune(r rune, buf *[foldMax]byte) (n int, soft bool) {
	if r < utf8.RuneSelf {
		switch {
		case 'A' <= r && r <= 'Z':
			buf[0] = byte(r) + 'a' - 'A'
		case r == ' ' || ('\t' <= r && r <= '\r') || r == '-' || r == '_':
			buf[0] = sep
		case r < ' ' || r == 0x7f:
			return 0, true
		default:
			buf[0] = byte(r)
		}
		return 1, false
	}
	if ignorable(r) {
		return 0, true
	}
	if l := parenthesized(r); l != 0 {
		return foldOne(rune(l), buf, 0), false
	}
	var enc [utf8.UTFMax]byte
	m := utf8.EncodeRune(enc[:], r)
	d := norm.NFKD.Properties(enc[:m]).Decomposition()
	if d == nil {
		return foldOne(r, buf, 0), false
	}
	for len(d) > 0 {
		c, size := utf8.DecodeRune(d)
		n = foldOne(c, buf, n)
		d = d[size:]
	}
	return n, false
}

// foldOne appends the matching form of one decomposed code point at buf[n:].
func foldOne(r rune, buf *[foldMax]byte, n int) int {
	if r < utf8.RuneSelf {
		switch {
		case 'A' <= r && r <= 'Z':
			buf[n] = byte(r) + 'a' - 'A'
		case r == ' ' || ('\t' <= r && r <= '\r') || r == '-' || r == '_':
			buf[n] = sep
		case r < ' ' || r == 0x7f:
			return n
		default:
			buf[n] = byte(r)
		}
		return n + 1
	}
	if r == 0x0345 {
		r = 0x03b9 // the iota subscript: a combining mark that is the letter ι
	} else if unicode.In(r, unicode.Mn, unicode.Me, unicode.Mc) || ignorable(r) {
		return n
	}
	if isSeparator(r) {
		buf[n] = sep
		return n + 1
	}
	if reads := readsAs(r); reads != "" {
		// Latin letters, in their case, or a listed symbol, folded already.
		for i := 0; i < len(reads) && n < foldMax; i++ {
			buf[n] = lowerASCII(reads[i])
			n++
		}
		return n
	}
	r = lowerFold(r)
	if n+utf8.RuneLen(r) > foldMax {
		return n // cannot happen with Unicode's decompositions; never overflow
	}
	return n + utf8.EncodeRune(buf[n:], r)
}

// lowerFold folds case for one code point. Going through the upper case
// first joins what lower-casing alone keeps apart: final sigma ς with σ,
// dotless ı with i.
func lowerFold(r rune) rune {
	if r < utf8.RuneSelf {
		if 'A' <= r && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}
	return unicode.ToLower(unicode.ToUpper(r))
}

// isSeparator reports the characters that separate the parts of a phrase:
// any white space (no-break and thin spaces included), dashes and hyphens,
// connector punctuation, the minus sign and the blank braille pattern,
// which renders as a space.
func isSeparator(r rune) bool {
	return unicode.IsSpace(r) || r == 0x2212 || r == 0x2800 || unicode.In(r, unicode.Pd, unicode.Pc)
}

// ignorable reports a character a reader does not see: Unicode format
// characters (Cf: zero-width space and joiners, soft hyphen, BOM, bidi
// controls, tag characters), controls other than white space, and the
// default-ignorable fillers and selectors that render as nothing.
func ignorable(r rune) bool {
	switch {
	case r < utf8.RuneSelf:
		return (r < ' ' && (r < '\t' || r > '\r')) || r == 0x7f
	case r == 0x034f, r == 0x115f, r == 0x1160, r == 0x17b4, r == 0x17b5, r == 0x3164, r == 0xffa0,
		0x180b <= r && r <= 0x180f, 0xfe00 <= r && r <= 0xfe0f, 0xe0000 <= r && r <= 0xe0fff:
		return true
	}
	return unicode.Is(unicode.Cf, r) || (unicode.Is(unicode.Cc, r) && !unicode.IsSpace(r))
}

//go:generate sh -c "/usr/bin/python3 lookalikes.py | gofmt > lookalikes.go"

// lookAlike is one letter that a reader takes for Latin letters, and the
// letters it reads as, in their case.
type lookAlike struct {
	r     rune
	reads string
}

// readsAs returns what r reads as, or "" when it is not a look-alike: the
// Latin letters, in their case, of the letters of other scripts that UTS
// #39's skeleton makes Latin (Cyrillic "А", Cherokee "Ꭺ", Latin "ø" and
// "ł"), of the small capitals ("ᴀɪᴏɴ" reads "AION") and of the Latin
// letters with a hook, tail or stroke the skeleton leaves alone ("Ʂ",
// "Ꞩ"); and the listed symbol, in its folded case, that a character's
// skeleton equals (Cyrillic "Ф" and Latin "ɸ" read "φ", "∆" reads "δ").
// The table, lookalikes.go, is generated. Greek is not in it: every Greek
// letter is blocked as such (GAP-C).
func readsAs(r rune) string {
	if r < lookAlikes[0].r || r > lookAlikes[len(lookAlikes)-1].r {
		return readerReads(r)
	}
	lo, hi := 0, len(lookAlikes)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if lookAlikes[m].r < r {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(lookAlikes) && lookAlikes[lo].r == r {
		return lookAlikes[lo].reads
	}
	return readerReads(r)
}

// baseRune is r as a reader sees its letter: the first code point of its
// compatibility decomposition, with look-alikes mapped, case kept. It is
// what case and grammar rules look at.
func baseRune(r rune) rune {
	if r < utf8.RuneSelf {
		return r
	}
	var enc [utf8.UTFMax]byte
	m := utf8.EncodeRune(enc[:], r)
	if d := norm.NFKD.Properties(enc[:m]).Decomposition(); d != nil {
		r, _ = utf8.DecodeRune(d)
	}
	if reads := readsAs(r); reads != "" {
		r, _ = utf8.DecodeRuneInString(reads)
	}
	return r
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// foldString is the matching form of a whole string, as the scanner sees
// it: each character folded, a run of separators made one, and a separator
// after a full stop dropped, so "Dr. Logos" and "Dr.Logos" read alike.
// Leading and trailing separators are trimmed. It is used to fold the block
// list's terms, never on the hot path.
func foldString(s string) string {
	var b strings.Builder
	var buf [foldMax]byte
	var prev byte
	for _, r := range s {
		n, _ := foldRune(r, &buf)
		for _, c := range buf[:n] {
			if c == sep && (prev == sep || prev == '.' || prev == 0) {
				continue
			}
			b.WriteByte(c)
			prev = c
		}
	}
	return strings.TrimRight(b.String(), string(sep))
}

// Character kinds that decode reports.
const (
	kindRune   = iota // one character, in r
	kindSoft          // nothing visible: a tag, or an ignorable character
	kindString        // an HTML entity that stands for several characters, in str
)

// decode returns the character at s[i:] and the bytes it takes. In HTML
// mode a tag or comment is one soft break (it separates words visually
// only sometimes, so it neither joins nor splits a term: "AI<b></b>ON" is
// "AION", and "TMM</p><p>Next" still ends a word after "TMM"), and an
// entity is the character it stands for, so "AI&#79;N" is "AION".
func decode(s string, i int, isHTML bool) (r rune, size int, str string, kind int) {
	c := s[i]
	if isHTML {
		switch c {
		case '<':
			if n := tagLen(s, i); n > 0 {
				return 0, n, "", kindSoft
			}
		case '&':
			if r, n, str := entity(s, i); n > 0 {
				if str != "" {
					return 0, n, str, kindString
				}
				if ignorable(r) {
					return r, n, "", kindSoft
				}
				return r, n, "", kindRune
			}
		}
	}
	if c < utf8.RuneSelf {
		if ignorable(rune(c)) {
			return rune(c), 1, "", kindSoft
		}
		return rune(c), 1, "", kindRune
	}
	r, size = utf8.DecodeRuneInString(s[i:])
	if ignorable(r) {
		return r, size, "", kindSoft
	}
	return r, size, "", kindRune
}

// tagLen is the length of the tag or comment starting at s[i] ('<'), or 0
// when the '<' is plain text (not followed by a letter, '/', '!' or '?', or
// never closed).
func tagLen(s string, i int) int {
	if i+1 >= len(s) {
		return 0
	}
	if strings.HasPrefix(s[i:], "<!--") {
		if j := strings.Index(s[i+4:], "-->"); j >= 0 {
			return 4 + j + 3
		}
		return len(s) - i
	}
	c := s[i+1]
	if !(('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || c == '/' || c == '!' || c == '?') {
		return 0
	}
	if j := strings.IndexByte(s[i+1:], '>'); j >= 0 {
		return j + 2
	}
	return 0
}

// entities are the named references common in mail, decoded without
// allocating; others go through html.UnescapeString.
var entities = map[string]rune{
	"amp": '&', "lt": '<', "gt": '>', "quot": '"', "apos": '\'', "nbsp": 0xa0, "shy": 0xad,
	"zwj": 0x200d, "zwnj": 0x200c, "lrm": 0x200e, "rlm": 0x200f, "thinsp": 0x2009, "ensp": 0x2002,
	"emsp": 0x2003, "ndash": 0x2013, "mdash": 0x2014, "hellip": 0x2026, "lsquo": 0x2018, "rsquo": 0x2019,
	"ldquo": 0x201c, "rdquo": 0x201d, "bull": 0x2022, "middot": 0xb7, "copy": 0xa9, "reg": 0xae,
	"trade": 0x2122, "euro": 0x20ac, "pound": 0xa3, "yen": 0xa5, "cent": 0xa2, "deg": 0xb0,
	"times": 0xd7, "minus": 0x2212, "hyphen": 0x2010,
}

// entity decodes the character reference at s[i] ('&'): numeric
// (&#79; &#x4F;, the semicolon optional as browsers allow) or named. It
// returns n == 0 when the '&' is plain text.
func entity(s string, i int) (r rune, n int, str string) {
	j := i + 1
	if j < len(s) && s[j] == '#' {
		j++
		hex := j < len(s) && (s[j] == 'x' || s[j] == 'X')
		if hex {
			j++
		}
		start := j
		v := 0
		for j < len(s) && j-start < 8 {
			d := digitVal(s[j], hex)
			if d < 0 {
				break
			}
			v = v*base(hex) + d
			j++
		}
		if j == start {
			return 0, 0, ""
		}
		if j < len(s) && s[j] == ';' {
			j++
		}
		r = rune(v)
		if v == 0 || v > unicode.MaxRune || (0xd800 <= v && v <= 0xdfff) {
			r = utf8.RuneError
		}
		return r, j - i, ""
	}
	start := j
	for j < len(s) && j-start < 32 && isAlnumByte(s[j]) {
		j++
	}
	if j == start {
		return 0, 0, ""
	}
	name := s[start:j]
	if j < len(s) && s[j] == ';' {
		if r, ok := entities[name]; ok {
			return r, j + 1 - i, ""
		}
		j++
	}
	raw := s[i:j]
	dec := html.UnescapeString(raw)
	if dec == raw {
		return 0, 0, ""
	}
	if r, size := utf8.DecodeRuneInString(dec); size == len(dec) {
		return r, len(raw), ""
	}
	return 0, len(raw), dec
}

func base(hex bool) int {
	if hex {
		return 16
	}
	return 10
}

func digitVal(c byte, hex bool) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case hex && 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case hex && 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

func isAlnumByte(c byte) bool {
	return ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')
}

// decodeBack returns the character that ends just before s[i] and where it
// starts, mirroring decode: in HTML mode a tag ending there is a soft break
// and an entity is its character.
func decodeBack(s string, i int, isHTML bool) (r rune, start int, kind int) {
	if isHTML {
		switch s[i-1] {
		case '>':
			if strings.HasSuffix(s[:i], "-->") {
				if j := strings.LastIndex(s[:i-3], "<!--"); j >= 0 {
					return 0, j, kindSoft
				}
			}
			if j := strings.LastIndexByte(s[:i-1], '<'); j >= 0 && tagLen(s, j) == i-j {
				return 0, j, kindSoft
			}
		case ';':
			lo := max(0, i-40)
			if j := strings.LastIndexByte(s[lo:i-1], '&'); j >= 0 {
				j += lo
				if r, n, str := entity(s, j); n == i-j {
					if str != "" {
						r, _ = utf8.DecodeLastRuneInString(str)
					}
					if ignorable(r) {
						return r, j, kindSoft
					}
					return r, j, kindRune
				}
			}
		}
	}
	r, size := utf8.DecodeLastRuneInString(s[:i])
	if ignorable(r) {
		return r, i - size, kindSoft
	}
	return r, i - size, kindRune
}

// The right-to-left override (U+202E) shows the characters after it in
// reverse order, up to the pop (U+202C), the end of an isolate (U+2069) or
// the paragraph's end: "\u202eNOIA" is shown as "AION". An embedding or an
// isolate alone leaves Latin letters in their order; only the override
// reverses them.
const (
	rtlOverride = '\u202e'
	popFormat   = '\u202c'
	popIsolate  = '\u2069'
)

// reversed reports whether s holds a right-to-left override.
func reversed(s string) bool { return strings.ContainsRune(s, rtlOverride) }

// shownInto appends to dst s in the order a reader sees it: each run after
// an override reversed, character by character, the controls themselves
// left out; in HTML, the visible text (tags out, references decoded) is
// what the overrides reverse. Appending to a caller's buffer keeps the
// clean check free of allocation for texts that fit it.
func shownInto(dst []byte, s string, isHTML bool) []byte {
	run := -1 // where the reversed run starts in dst, or -1
	flush := func() {
		if run >= 0 {
			reverseRunes(dst[run:])
			run = -1
		}
	}
	for i := 0; i < len(s); {
		r, size, str, kind := decode(s, i, isHTML)
		i += size
		if kind == kindString {
			dst = append(dst, str...)
			continue
		}
		if kind == kindSoft && r == 0 {
			continue // a tag
		}
		switch {
		case r == rtlOverride:
			flush()
			run = len(dst)
		case run >= 0 && (r == popFormat || r == popIsolate):
			flush()
		case run >= 0 && (r == '\n' || r == '\u2029'):
			flush()
			dst = utf8.AppendRune(dst, r)
		default:
			dst = utf8.AppendRune(dst, r)
		}
	}
	flush()
	return dst
}

// reverseRunes reverses the characters of b in place: the bytes first,
// then each character's bytes back into order.
func reverseRunes(b []byte) {
	for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
	for i := 0; i < len(b); {
		j := i + 1
		for j < len(b) && !utf8.RuneStart(b[j-1]) {
			j++
		}
		// b[i:j] is one character whose lead byte is now last.
		for k, l := i, j-1; k < l; k, l = k+1, l-1 {
			b[k], b[l] = b[l], b[k]
		}
		i = j
	}
}
