package sosfilter

import (
	"fmt"
	"unicode"
	"unicode/utf8"
)

// The disguise view. A term spelt out letter by letter ("A I O N",
// "G.L.O.S.S", "A/I/O/N") or with digits for letters ("GL0SS", "A1ON",
// "N0US") is no term in the text as written, yet a reader sees it. The
// disguise view reads the text as that reader does, one word at a time:
//
//   - words of one letter or digit, separated by at most three characters
//     of anything that is not a letter or digit (spaces, dots, hyphens,
//     slashes, a line break, but not an empty line), are one word: "A I O
//     N" reads "aion"; a term may begin at any of them, so a one-letter
//     English word before it ("a K I L L box") hides nothing;
//   - in a word that holds both letters and digits (or in such a run of
//     single letters) a digit reads as the letter it stands for: 0 o, 2 z,
//     3 e, 4 a, 5 s, 6 and 9 g, 7 t, 8 b; 1 stands for i or l, so every
//     term with an i or l is also spelt with 1 in those places; a letter
//     from outside ASCII that reads two ways (readings.go) is read so too:
//     the palochka "ӏ" as 1, "ʋ" as a u or a v;
//   - an apostrophe inside a word is part of it ("it's" is one word, not
//     "it" and the letter "s"), and a term may end before it ("GL0SS's")
//     but not start after it, as in the plain scan;
//   - everything else is folded as the plain scan folds it (look-alike
//     letters, small capitals, full-width forms, accents, markup and
//     character references in HTML).
//
// Only the terms made of letters (and the spaces and full stops between
// the words of a phrase) are looked for: a symbol or a number has no
// letters to disguise. A term must stand alone as a word in this view, and
// the case and context rules judge it on the original text ("gl0ss" is as
// lowercase, and as English, as "gloss"). A term this view reads where no
// term of the plain scan covers it is a disguise, and a disguise
// quarantines: its letters cannot be replaced in place.
//
// The view costs a pass over the words of the text; a text with no word
// mixing letters and digits and no two single-character words in a row
// reads the same as written, and is not read again (mayDisguise).

// disguise is one letter term as the disguise view spells it.
type disguise struct {
	text string // ASCII letters, sep and full stops, with '1' for some i and l
	pat  int32  // the pattern it spells
}

// maxSpellings bounds the spellings of one term with 1 for its i and l
// and eitherUV for its u and v: every combination up to eight such
// letters, past that each one alone.
const maxSpellings = 256

// maxPending is the most terms that may end at one place in the disguise
// view, checked when the list is compiled, so the scanner's fixed array of
// matches waiting for their right edge never overflows.
const maxPending = 16

// disguisePatterns lists the letter terms' spellings in the disguise view.
func disguisePatterns(patterns []pattern) []disguise {
	var out []disguise
	seen := map[string]bool{}
	for pi, p := range patterns {
		text, ok := letterTerm(p.text)
		if !ok {
			continue
		}
		for _, v := range eitherSpellings(text) {
			if !seen[v] {
				seen[v] = true
				out = append(out, disguise{text: v, pat: int32(pi)})
			}
		}
	}
	return out
}

// letterTerm is a folded pattern as the disguise view reads it: its words
// of ASCII letters with one sep or full stop between them, as the plain
// fold writes them ("dr.logos", "coherence score"). ok is false for a
// pattern with anything else (digits, symbols, other scripts).
func letterTerm(p string) (string, bool) {
	b := make([]byte, 0, len(p))
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case 'a' <= c && c <= 'z':
			b = append(b, c)
		case c == sep || c == '.':
			if len(b) > 0 && b[len(b)-1] != sep && b[len(b)-1] != '.' {
				b = append(b, c)
			}
		case c == '\'':
		default:
			return "", false
		}
	}
	for len(b) > 0 && (b[len(b)-1] == sep || b[len(b)-1] == '.') {
		b = b[:len(b)-1]
	}
	return string(b), len(b) > 0
}

// eitherSpellings is text and its spellings with the digit 1 for an i or
// an l, and eitherUV for a u or a v (readings.go).
func eitherSpellings(text string) []string {
	var at []int
	for i := 0; i < len(text); i++ {
		if either(text[i]) != 0 {
			at = append(at, i)
		}
	}
	out := []string{text}
	if len(at) == 0 {
		return out
	}
	if 1<<len(at) > maxSpellings {
		for _, i := range at {
			b := []byte(text)
			b[i] = either(b[i])
			out = append(out, string(b))
		}
		return out
	}
	for mask := 1; mask < 1<<len(at); mask++ {
		b := []byte(text)
		for k, i := range at {
			if mask&(1<<k) != 0 {
				b[i] = either(b[i])
			}
		}
		out = append(out, string(b))
	}
	return out
}

// either is the disguise view's byte for the letters c may be read from,
// or 0.
func either(c byte) byte {
	switch c {
	case 'i', 'l':
		return eitherIL
	case 'u', 'v':
		return eitherUV
	}
	return 0
}

// checkPending makes sure no state of the disguise automaton ends more
// terms than the scanner can hold.
func (a *automaton) checkPending() error {
	for k := 0; k+1 < len(a.outIdx); k++ {
		if n := a.outIdx[k+1] - a.outIdx[k]; n > maxPending {
			return fmt.Errorf("%d disguised terms end at one place, more than %d", n, maxPending)
		}
	}
	return nil
}

// Byte classes of the disguise view's ASCII fast path.
const (
	dOther  = iota // not part of a word
	dLetter        // A-Z, a-z
	dDigit         // 0-9
	dApos          // an apostrophe: inside a word, part of it
	dSlow          // decode it: non-ASCII, a control, or markup in HTML
)

var dClassPlain, dClassHTML = func() (plain, html [256]uint8) {
	for b := range 256 {
		var k uint8
		switch {
		case b >= utf8.RuneSelf || (b < ' ' && b != '\t' && b != '\n' && b != '\r') || b == 0x7f:
			k = dSlow
		case ('a' <= b && b <= 'z') || ('A' <= b && b <= 'Z'):
			k = dLetter
		case '0' <= b && b <= '9':
			k = dDigit
		case b == '\'':
			k = dApos
		default:
			k = dOther
		}
		plain[b], html[b] = k, k
	}
	html['<'], html['&'] = dSlow, dSlow
	return
}()

// leet is the letter a digit stands for in a word of letters; '1' stays,
// as the spellings of i and l with it do.
var leet = [10]byte{'o', '1', 'z', 'e', 'a', 's', 'g', 't', 'b', 'g'}

// wchar is one character of a word as the disguise view reads it.
type wchar struct {
	kind  uint8 // dOther, dLetter, dDigit, dApos, or dSlow for nothing visible
	end   int   // offset after it
	lower byte  // an ASCII letter, lowercase, or the digit
	wide  bool  // a letter outside ASCII: its folded form is in fold[:n]
	count int   // the letters it reads as: "Ǳ" is two, as "DZ" is
	para  bool  // a line or paragraph break (dOther)
	sep   bool  // a separator of the plain fold: white space, a dash, an underscore
	fold  [foldMax]byte
	n     int
}

// read decodes the character at s[i] for the disguise view.
func (d *dscanner) read(i int, w *wchar) {
	s := d.s
	cls := &dClassPlain
	if d.html {
		cls = &dClassHTML
	}
	w.wide, w.para, w.sep, w.count = false, false, false, 1
	if k := cls[s[i]]; k != dSlow {
		w.kind, w.end, w.lower = k, i+1, s[i]
		if k == dLetter && w.lower <= 'Z' {
			w.lower += 'a' - 'A'
		}
		if k == dOther && d.symbols {
			if b := symbolLetter(s, i); b != 0 {
				// A symbol for a letter inside a word stands for it, as
				// a digit does.
				w.kind, w.lower = dDigit, b
				return
			}
		}
		w.para = s[i] == '\n'
		w.sep = k == dOther && d.f.asciiPlain[s[i]] == sep
		return
	}
	r, size, str, kind := decode(s, i, d.html)
	w.end = i + size
	switch kind {
	case kindSoft:
		w.kind = dSlow
		return
	case kindString:
		r, _ = utf8.DecodeRuneInString(str)
	}
	if b := eitherOf(r); b != 0 {
		// A letter that reads two ways stands for either, as 1 does.
		w.kind, w.lower = dDigit, b
		return
	}
	n, soft := foldRune(r, &w.fold)
	if soft || n == 0 {
		w.kind = dSlow
		return
	}
	c, _ := utf8.DecodeRune(w.fold[:n])
	switch {
	case c < utf8.RuneSelf && ('a' <= c && c <= 'z'):
		w.kind, w.lower = dLetter, byte(c)
		if n > 1 {
			w.wide, w.n, w.count = true, n, utf8.RuneCount(w.fold[:n])
		}
	case c < utf8.RuneSelf && isDigit(c):
		w.kind, w.lower = dDigit, byte(c)
	case isApostrophe(c):
		w.kind = dApos
	case unicode.IsLetter(c):
		w.kind, w.wide, w.n, w.count = dLetter, true, n, utf8.RuneCount(w.fold[:n])
	default:
		w.kind, w.lower = dOther, 0
		if c < utf8.RuneSelf {
			w.lower = byte(c)
		}
		w.para = c == '\n' || c == 0x2029 || c == 0x2028
		w.sep = w.fold[0] == sep
	}
}

// dscanner is one pass of the disguise view over one text. It lives on the
// caller's stack.
type dscanner struct {
	f      *Filter
	s      string
	html   bool
	c      *collector
	st     uint32
	pos    int
	ringB  [ringSize]byte
	ringAt [ringSize]int
	// ringRun marks the bytes that begin a one-character word joined to
	// the run before it: a term may start there, as after a gap ("a K I
	// L L box" holds "kill box" though the run reads "akill").
	ringRun [ringSize]bool
	runWord bool             // the next byte fed begins such a word
	symbols bool             // symbols inside a word read as letters (readings.go)
	pend    [maxPending]span // terms that wait for the next byte: their right edge
	npend   int
}

// word is what the scanner knows of a word before reading it.
type word struct {
	start, end     int
	chars          int // letters and digits
	letters        int
	digits         int
	sepsBefore     int  // characters between it and the word before
	paragraphSplit bool // two line breaks between them: another paragraph
	gap            byte // those characters as the plain fold reads them: sep, '.' or brk
}

// brk stands for characters between two words that no phrase may span,
// as the plain fold has it: anything but separators, or one full stop
// followed by separators ("Dr. Logos"). The disguise view agrees with the
// plain scan on where a phrase may continue, so that a text with nothing
// to join and no digit in a word reads the same in both (mayDisguise).
const brk = '|'

// isGap reports the bytes that end a word in the disguise view.
func isGap(b byte) bool { return b == sep || b == '.' || b == brk }

// nextWord finds the word after s[i]: the characters before it, and its
// letters and digits.
func (d *dscanner) nextWord(i int) (w word, ok bool) {
	var c wchar
	newlines := 0
	w.gap = sep
	for i < len(d.s) {
		d.read(i, &c)
		if c.kind == dLetter || c.kind == dDigit {
			break
		}
		if c.kind == dOther || c.kind == dApos {
			switch {
			case c.sep:
			case c.kind == dOther && c.lower == '.' && w.sepsBefore == 0:
				w.gap = '.'
			default:
				w.gap = brk
			}
			w.sepsBefore++
			if c.para {
				newlines++
			}
		}
		i = c.end
	}
	w.paragraphSplit = newlines >= 2
	if i >= len(d.s) {
		return w, false
	}
	w.start = i
	for i < len(d.s) {
		d.read(i, &c)
		switch c.kind {
		case dLetter:
			w.chars += c.count
			w.letters += c.count
		case dDigit:
			w.chars++
			w.digits++
		case dApos:
			// Part of the word only between two of its characters.
			var n wchar
			if c.end >= len(d.s) {
				w.end = i
				return w, true
			}
			d.read(c.end, &n)
			if n.kind != dLetter && n.kind != dDigit {
				w.end = i
				return w, true
			}
		case dSlow:
			// Invisible: neither ends nor extends the word.
		default:
			w.end = i
			return w, true
		}
		i = c.end
	}
	w.end = i
	return w, true
}

// mayDisguise reports whether s could read differently in the disguise
// view: a word with letters and digits, or two one-character words in a
// row. Most text has neither, and is then not read again. Plain ASCII takes
// a table look-up per byte; other characters go through read.
func (f *Filter) mayDisguise(s string, isHTML bool) bool {
	cls := &dClassPlain
	if isHTML {
		cls = &dClassHTML
	}
	d := dscanner{f: f, s: s, html: isHTML}
	var t trigger
	var c wchar
	for i := 0; i < len(s); {
		k, next, count := cls[s[i]], i+1, 1
		para := s[i] == '\n'
		if k == dOther && symbolLetter(s, i) != 0 {
			k = dDigit
		}
		if k == dSlow {
			d.read(i, &c)
			k, next, para, count = c.kind, c.end, c.para, c.count
		}
		switch k {
		case dLetter:
			for range count {
				t.letters++
				t.char()
			}
		case dDigit:
			t.digits++
			t.char()
		case dApos:
			if t.chars > 0 && next < len(s) {
				if n := cls[s[next]]; n == dLetter || n == dDigit {
					break // inside a word
				} else if n == dSlow {
					d.read(next, &c)
					if c.kind == dLetter || c.kind == dDigit {
						break
					}
				}
			}
			if t.wordEnd() {
				return true
			}
			t.seps++
		case dOther:
			if t.wordEnd() {
				return true
			}
			t.seps++
			if para {
				t.newlines++
			}
		}
		i = next
	}
	return t.wordEnd()
}

// trigger follows the words of a text for mayDisguise.
type trigger struct {
	chars, letters, digits int  // of the current word
	seps, newlines         int  // since the last word
	wordSeps, wordNewlines int  // before the current word
	prevSingle             bool // the last word had one character
}

// char counts a letter or digit of the current word.
func (t *trigger) char() {
	if t.chars == 0 {
		t.wordSeps, t.wordNewlines = t.seps, t.newlines
		t.seps, t.newlines = 0, 0
	}
	t.chars++
}

// wordEnd closes the current word, if any, and reports whether it is one
// the disguise view reads differently.
func (t *trigger) wordEnd() bool {
	if t.chars == 0 {
		return false
	}
	single := t.chars == 1
	found := (t.letters > 0 && t.digits > 0) || (single && t.prevSingle && t.wordSeps <= 3 && t.wordNewlines < 2)
	t.prevSingle = single
	t.chars, t.letters, t.digits = 0, 0, 0
	return found
}

// scanDisguised adds to c every letter term that the disguise view of s
// reads as a word and the case and context rules let through.
//
// A symbol that may stand for a letter inside a word ("m@nifolds",
// readings.go) is read both ways, in two passes: as punctuation, which
// parts the letters spelt apart around it ("C!L 0 D"), and as its letter.
func (f *Filter) scanDisguised(s string, isHTML bool, c *collector) {
	f.scanDisguisedAs(s, isHTML, c, false)
	if !c.done() && holdsSymbolLetter(s) {
		f.scanDisguisedAs(s, isHTML, c, true)
	}
}

// holdsSymbolLetter reports whether s has a symbol that may stand for a
// letter (symbolLetter).
func holdsSymbolLetter(s string) bool {
	for i := 0; i < len(s); i++ {
		if symbolLetter(s, i) != 0 {
			return true
		}
	}
	return false
}

// scanDisguisedAs is one pass of scanDisguised, symbols read as letters
// when symbols is set.
func (f *Filter) scanDisguisedAs(s string, isHTML bool, c *collector, symbols bool) {
	var d dscanner
	d.f, d.s, d.html, d.c, d.symbols = f, s, isHTML, c, symbols
	prevSingle, runHasLetter, started, prevLeet := false, false, false, false
	for i := 0; i < len(s); {
		w, ok := d.nextWord(i)
		if !ok {
			break
		}
		join := prevSingle && w.chars == 1 && w.sepsBefore <= 3 && !w.paragraphSplit
		if started && !join {
			d.feed(w.gap, w.start, w.start)
		}
		if w.chars == 1 && !join {
			runHasLetter = d.runHasLetter(w)
		}
		// A word of digits alone reads as letters where it continues a
		// phrase whose word before it did ("0R4C13_7011"): its place
		// says what it stands for.
		leet := (w.letters > 0 && w.digits > 0) || (w.chars == 1 && runHasLetter) ||
			(w.letters == 0 && prevLeet && w.gap != brk && !w.paragraphSplit)
		d.runWord = join
		d.feedWord(w, leet)
		if c.done() {
			return
		}
		prevSingle, started, prevLeet = w.chars == 1, true, leet
		i = w.end
	}
	d.confirm()
}

// runHasLetter reports whether the run of one-character words that starts
// with w holds a letter: then its digits stand for letters ("4 1 0 N").
func (d *dscanner) runHasLetter(w word) bool {
	for {
		if w.letters > 0 {
			return true
		}
		next, ok := d.nextWord(w.end)
		if !ok || next.chars != 1 || next.sepsBefore > 3 || next.paragraphSplit {
			return false
		}
		w = next
	}
}

// feedWord runs one word's characters through the disguise automaton,
// digits as letters when leet is set.
func (d *dscanner) feedWord(w word, asLetters bool) {
	var c wchar
	for i := w.start; i < w.end && !d.c.done(); i = c.end {
		d.read(i, &c)
		switch c.kind {
		case dLetter:
			if c.wide {
				for _, b := range c.fold[:c.n] {
					d.feed(b, i, c.end)
				}
			} else {
				d.feed(c.lower, i, c.end)
			}
		case dDigit:
			b := byte('0') // a digit that stands for itself: no term has one
			switch {
			case !asLetters:
			case isDigit(rune(c.lower)):
				b = leet[c.lower-'0']
			default:
				b = c.lower // a letter that reads two ways (readings.go)
			}
			d.feed(b, i, c.end)
		case dApos:
			d.feed('\'', i, c.end)
		}
	}
}

// feed runs one byte of the view through the automaton. The byte is also
// the right edge of the terms waiting for one: a gap between words
// confirms them, a letter or digit means they were part of a longer word.
func (d *dscanner) feed(b byte, off, end int) {
	if d.npend > 0 {
		// An apostrophe may end a term ("GL0SS's"), as in the plain scan,
		// but no term starts after one ("A'ION" is no more AION than there).
		if isGap(b) || b == '\'' {
			d.confirm()
			if d.c.done() {
				return
			}
		} else {
			d.npend = 0
		}
	}
	a := &d.f.dac
	k := d.pos & ringMask
	d.ringB[k], d.ringAt[k], d.ringRun[k] = b, off, d.runWord
	d.runWord = false
	d.pos++
	d.st = a.trans[d.st+uint32(a.cls[b])]
	if d.st < a.firstOut {
		return
	}
	o := int(d.st-a.firstOut) / a.ncls
	for _, di := range a.outs[a.outIdx[o]:a.outIdx[o+1]] {
		dg := &d.f.disguises[di]
		start := d.pos - len(dg.text)
		if start > 0 && !isGap(d.ringB[(start-1)&ringMask]) && !d.ringRun[start&ringMask] {
			continue // a longer word ends here
		}
		if d.npend < len(d.pend) {
			d.pend[d.npend] = span{start: d.ringAt[start&ringMask], end: end, pat: dg.pat}
			d.npend++
		}
	}
}

// confirm adds the waiting terms whose right edge has come, as the case and
// context rules judge them on the original text.
func (d *dscanner) confirm() {
	for _, sp := range d.pend[:d.npend] {
		if !d.c.raw {
			e := &d.f.entries[d.f.patterns[sp.pat].entry]
			act, ok := judge(d.s, d.html, sp.start, sp.end, e)
			if !ok {
				continue
			}
			sp.act = act
		}
		if d.symbols && d.c.holds(sp) {
			continue // the first pass found it
		}
		d.c.add(sp)
		if d.c.done() {
			break
		}
	}
	d.npend = 0
}
