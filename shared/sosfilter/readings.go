package sosfilter

// Readings the skeleton does not give. UTS #39 gives each look-alike one
// reading (lookalikes.go) and leaves some letters that a reader takes for
// Latin ones as themselves. Read as an adversary writes them, a listed
// phrase spelt with Cherokee, Armenian, Cyrillic and hooked letters got
// through where one of these stood in it:
//
//   - the upright strokes read as an i or an l, whichever the word needs:
//     the palochka "ӏ" and "Ӏ" (ICU: i and I), the Latin iota "Ɩ" and
//     Lisu "ꓲ" (ICU: l), the Armenian small liwn "լ" and the turned l "ꞁ"
//     (ICU: themselves). The disguise view reads each as the digit 1,
//     which every letter term with an i or an l is also spelt with;
//   - the v with a hook "ʋ" (ICU: u) reads as a u or a v: the disguise
//     view reads it as eitherUV, which every letter term with a u or a v
//     is also spelt with;
//   - the Armenian capital liwn "Լ" reads L, which ICU leaves as itself;
//   - a parenthesized letter ("⒦", "🄚") reads as its letter: the
//     compatibility decomposition writes it "(k)", whose brackets would
//     part a word spelt with them.
//
// The ASCII letters I and l stay as written (doc.go, Limits): only a
// letter from outside ASCII, which no English word holds, reads both ways.
//
// Symbols for letters ("m@nifolds", "k!ll", "$inai") read as the letter in
// the disguise view where they stand inside a word, between two letters
// or digits, and "$" also before a word's first letter: "@" as a, "$" as
// s, "!" and "|" as an i or an l. At a word's edge they are punctuation
// ("Wow!", "a|b" aside), and an address ("help@example.com") reads as one
// longer word that no term is.

// The disguise view's bytes for a letter that reads two ways; eitherIL is
// the digit 1, which stands for an i or an l already.
const (
	eitherIL = '1'
	eitherUV = '^'
)

// readingsRule names these readings in the filter's Version.
const readingsRule = "either-readings-3: ӏӀƖꓲլꞁ as i or l, ʋ as u or v; Լ as L; ⒜-⒵ and 🄐-🄩 as their letters; @ $ ! | inside a word as a s 1 1, $ before one as s"

// eitherOf is the disguise view's byte for a letter that reads two ways,
// or 0.
func eitherOf(r rune) byte {
	switch r {
	case 0x04CF, 0x04C0, 0x0196, 0xA4F2, 0x056C, 0xA781:
		return eitherIL
	case 0x028B:
		return eitherUV
	}
	return 0
}

// readerReads is the reading of a letter the skeleton leaves as itself
// that a reader takes for a Latin one, or "".
func readerReads(r rune) string {
	if r == 0x053C {
		return "L"
	}
	return ""
}

// parenthesized is the letter a parenthesized Latin letter stands for, in
// its case, or 0.
func parenthesized(r rune) byte {
	switch {
	case 0x249C <= r && r <= 0x24B5: // ⒜ to ⒵
		return byte('a' + r - 0x249C)
	case 0x1F110 <= r && r <= 0x1F129: // 🄐 to 🄩
		return byte('A' + r - 0x1F110)
	}
	return 0
}

// symbolLetter is the disguise view's byte for the ASCII symbol s[i] when
// it stands for a letter inside a word, or 0.
func symbolLetter(s string, i int) byte {
	var b byte
	switch s[i] {
	case '@':
		b = 'a'
	case '$':
		b = 's'
	case '!', '|':
		b = eitherIL
	default:
		return 0
	}
	after := i+1 < len(s) && isAlnumByte(s[i+1])
	before := i > 0 && isAlnumByte(s[i-1])
	if after && (before || (s[i] == '$' && !isDigit(rune(s[i+1])))) {
		return b
	}
	return 0
}
