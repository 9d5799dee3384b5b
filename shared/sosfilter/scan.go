package sosfilter

import (
	"errors"
	"fmt"
	"slices"
	"unicode/utf8"
)

// The automaton is written here rather than taken from a module: the only
// tagged Aho-Corasick module on the proxy (BobuSumisu/aho-corasick v1.0.3,
// unchanged since 2020) matches a finished []byte and returns a fresh
// []*Match per call. This filter has to match text it folds on the fly
// (normalised, case-folded, zero-width characters dropped) without copying
// it, map every match back to the original bytes, check word boundaries
// and context there, and allocate nothing on clean text. Building a folded
// copy first to hand to a library would allocate on every call; the
// automaton itself is the short part of the problem.
//
// It is an Aho-Corasick automaton compiled to a full DFA over byte classes:
// every byte that occurs in some folded term has its own class, all other
// bytes share class 0. A state is kept premultiplied, as the offset of its
// row (state*ncls), so one step is trans[state+class] with no multiply in
// the loop's dependency chain. The states that end at least one term are
// numbered last, so the hot loop tests for a match with one comparison
// (state >= firstOut).
type automaton struct {
	cls      [256]uint8
	ncls     int
	trans    []uint32 // premultiplied next states
	firstOut uint32   // premultiplied
	outIdx   []int32  // output state k (counted from firstOut): outs[outIdx[k]:outIdx[k+1]]
	outs     []int32  // pattern indexes, longest first
}

// compile builds the automaton of texts; its outputs are indexes into
// texts.
func compile(texts []string) (automaton, error) {
	var ac automaton
	a := &ac
	var used [256]bool
	for _, p := range texts {
		for i := 0; i < len(p); i++ {
			used[p[i]] = true
		}
	}
	n := 1
	for b := range 256 {
		if used[b] {
			if n > 255 {
				return ac, errors.New("too many distinct bytes in the terms")
			}
			a.cls[b] = uint8(n)
			n++
		}
	}
	a.ncls = n

	// The trie: tbl[node*n+class] is a child node, or 0 (the root is no
	// one's child). Its size is counted first so that the table is made
	// once: grown a row at a time, it made compile most of a cold start's
	// cost in the functions that build the filter (about 2.8 MB of
	// garbage for the 0.5 MB kept).
	nodes := trieNodes(texts)
	if nodes*n >= 1<<31 {
		return ac, fmt.Errorf("%d automaton states of %d classes: too many", nodes, n)
	}
	tbl := make([]int32, nodes*n)
	own := make([][]int32, nodes)
	next := int32(1)
	for pi, p := range texts {
		s := int32(0)
		for i := 0; i < len(p); i++ {
			at := int(s)*n + int(a.cls[p[i]])
			if tbl[at] == 0 {
				tbl[at] = next
				next++
			}
			s = tbl[at]
		}
		own[s] = append(own[s], int32(pi))
	}

	// Breadth first: failure links, the full transition table, and each
	// state's outputs (its own terms and those of its failure chain). The
	// transitions replace the trie in place: a state's row is rewritten
	// when it is dequeued, after the rows of every shallower state, which
	// are all its failure link and their transitions read.
	fail := make([]int32, nodes)
	outs := make([][]int32, nodes)
	queue := make([]int32, 0, nodes)
	for c := range n {
		if v := tbl[c]; v != 0 {
			queue = append(queue, v)
		}
	}
	for head := 0; head < len(queue); head++ {
		u := queue[head]
		outs[u] = append(append([]int32(nil), own[u]...), outs[fail[u]]...)
		row, failRow := tbl[int(u)*n:int(u+1)*n], tbl[int(fail[u])*n:]
		for c := range n {
			if v := row[c]; v != 0 {
				fail[v] = failRow[c]
				queue = append(queue, v)
			} else {
				row[c] = failRow[c]
			}
		}
	}

	// Renumber: states without outputs first (the root stays 0).
	id := make([]uint32, nodes)
	order := make([]int32, 0, nodes)
	firstOut := 0
	for pass := range 2 {
		for s := range nodes {
			if (len(outs[s]) > 0) == (pass == 1) {
				id[s] = uint32(len(order) * n)
				order = append(order, int32(s))
			}
		}
		if pass == 0 {
			firstOut = len(order)
		}
	}
	a.firstOut = uint32(firstOut * n)
	a.trans = make([]uint32, nodes*n)
	for newID, old := range order {
		for c := range n {
			a.trans[newID*n+c] = id[tbl[int(old)*n+c]]
		}
	}
	a.outIdx = append(a.outIdx, 0)
	for _, old := range order[firstOut:] {
		o := outs[old]
		// Longest first, so a phrase is judged before the words inside it.
		for i := 1; i < len(o); i++ {
			for j := i; j > 0 && len(texts[o[j]]) > len(texts[o[j-1]]); j-- {
				o[j], o[j-1] = o[j-1], o[j]
			}
		}
		a.outs = append(a.outs, o...)
		a.outIdx = append(a.outIdx, int32(len(a.outs)))
	}
	return ac, nil
}

// trieNodes counts the nodes of the trie of texts: the root and one node
// for each distinct prefix. In byte order, each text adds the bytes past
// the prefix it shares with the one before it.
func trieNodes(texts []string) int {
	sorted := slices.Clone(texts)
	slices.Sort(sorted)
	nodes, prev := 1, ""
	for _, t := range sorted {
		common := 0
		for common < len(t) && common < len(prev) && t[common] == prev[common] {
			common++
		}
		nodes += len(t) - common
		prev = t
	}
	return nodes
}

// build compiles f.patterns into f.ac, the disguise patterns into f.dac,
// and the ASCII fast-path tables.
func (f *Filter) build() error {
	texts := make([]string, len(f.patterns))
	for i, p := range f.patterns {
		texts[i] = p.text
	}
	var err error
	if f.ac, err = compile(texts); err != nil {
		return err
	}
	f.disguises = disguisePatterns(f.patterns)
	texts = texts[:0]
	for _, d := range f.disguises {
		texts = append(texts, d.text)
	}
	if f.dac, err = compile(texts); err != nil {
		return fmt.Errorf("disguises: %w", err)
	}
	if err := f.dac.checkPending(); err != nil {
		return err
	}

	// The ASCII fast path folds a byte with one table look-up; a 0 sends
	// the byte through decode (controls, and '<' and '&' in HTML).
	var buf [foldMax]byte
	for b := range utf8.RuneSelf {
		if n, soft := foldRune(rune(b), &buf); !soft && n == 1 {
			f.asciiPlain[b] = buf[0]
			f.asciiHTML[b] = buf[0]
		}
	}
	f.asciiHTML['<'], f.asciiHTML['&'] = 0, 0
	return nil
}

// span is one occurrence of a term in the original text.
type span struct {
	start, end int // byte offsets in the original text
	pat        int32
	act        Action // what this occurrence calls for: Replace or Quarantine
}

// collector gathers spans without allocating until there are more than
// fit in its array (which only dirty text reaches).
type collector struct {
	raw   bool // the raw scan (termsIn): every occurrence as a word, no case or context rule
	first bool // stop at the first occurrence: the clean check
	n     int
	buf   [8]span
	more  []span
}

func (c *collector) add(s span) {
	if c.n < len(c.buf) {
		c.buf[c.n] = s
	} else {
		c.more = append(c.more, s)
	}
	c.n++
}

func (c *collector) len() int { return c.n }

// holds reports whether c has a span of the same pattern at the same place.
func (c *collector) holds(s span) bool {
	for i := range c.n {
		if o := c.at(i); o.start == s.start && o.end == s.end && o.pat == s.pat {
			return true
		}
	}
	return false
}

func (c *collector) at(i int) span {
	if i < len(c.buf) {
		return c.buf[i]
	}
	return c.more[i-len(c.buf)]
}

func (c *collector) done() bool { return c.first && c.n > 0 }

// ringSize is how many folded bytes the scanner remembers: a whole term
// (maxPattern) and the two characters before it.
const (
	ringSize = 128
	ringMask = ringSize - 1
)

// scanner is one pass over one text. It lives on the caller's stack.
type scanner struct {
	f     *Filter
	s     string
	html  bool
	c     *collector
	st    uint32 // automaton state, premultiplied
	pos   int    // folded bytes fed so far
	prev  byte   // the last folded byte fed
	soft  bool   // an invisible character or tag since the last byte fed
	ringB [ringSize]byte
	// ringAt holds, for each byte, the original offset of the character
	// it came from, shifted left by one; the low bit is set when a soft
	// break came before the byte. One store instead of two per byte.
	ringAt [ringSize]int
}

func (sc *scanner) offsetAt(pos int) int { return sc.ringAt[pos&ringMask] >> 1 }

func (sc *scanner) softAt(pos int) bool { return sc.ringAt[pos&ringMask]&1 != 0 }

func softBit(soft bool) int {
	if soft {
		return 1
	}
	return 0
}

// scan feeds s through the automaton in one pass and adds to c every
// occurrence that passes the boundary, case and context rules (or, for a
// raw collector, the boundary rules only). Plain ASCII takes a table
// look-up per byte; anything else is decoded and folded a character at a
// time. Nothing is allocated unless c overflows.
func (f *Filter) scan(s string, isHTML bool, c *collector) {
	var sc scanner
	sc.f, sc.s, sc.html, sc.c = f, s, isHTML, c
	tab := &f.asciiPlain
	if isHTML {
		tab = &f.asciiHTML
	}
	a := &f.ac
	trans, cls, firstOut := a.trans, &a.cls, a.firstOut
	st, pos, prev, soft := uint32(0), 0, byte(0), 0
	var buf [foldMax]byte
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if fb := tab[b]; fb != 0 {
				i++
				if fb == sep && (prev == sep || prev == '.') {
					continue
				}
				k := pos & ringMask
				sc.ringB[k], sc.ringAt[k] = fb, (i-1)<<1|soft
				soft = 0
				prev = fb
				pos++
				st = trans[st+uint32(cls[fb])]
				if st >= firstOut {
					sc.pos = pos
					sc.match(st, i, nil)
					if c.done() {
						return
					}
				}
				continue
			}
		}
		r, size, str, kind := decode(s, i, isHTML)
		sc.st, sc.pos, sc.prev, sc.soft = st, pos, prev, soft != 0
		switch kind {
		case kindSoft:
			sc.soft = true
		case kindRune:
			if n, invisible := foldRune(r, &buf); invisible {
				sc.soft = true
			} else {
				sc.feed(buf[:n], i, i+size)
			}
		case kindString:
			for _, r := range str {
				if n, invisible := foldRune(r, &buf); invisible {
					sc.soft = true
				} else {
					sc.feed(buf[:n], i, i+size)
				}
			}
		}
		if c.done() {
			return
		}
		st, pos, prev, soft = sc.st, sc.pos, sc.prev, softBit(sc.soft)
		i += size
	}
}

// feed runs the folded bytes of one original character (at s[off:end])
// through the automaton, exactly as the ASCII fast path does.
func (sc *scanner) feed(folded []byte, off, end int) {
	a := &sc.f.ac
	for j, fb := range folded {
		if fb == sep && (sc.prev == sep || sc.prev == '.') {
			continue
		}
		k := sc.pos & ringMask
		sc.ringB[k], sc.ringAt[k] = fb, off<<1|softBit(sc.soft)
		sc.soft = false
		sc.prev = fb
		sc.pos++
		sc.st = a.trans[sc.st+uint32(a.cls[fb])]
		if sc.st >= a.firstOut {
			sc.match(sc.st, end, folded[j+1:])
			if sc.c.done() {
				return
			}
		}
	}
}

// match checks every term ending at the current position (state st). end
// is the original offset just after the current character; rest is what
// remains of its folded form, which comes before the text at end.
func (sc *scanner) match(st uint32, end int, rest []byte) {
	a := &sc.f.ac
	k := int(st-a.firstOut) / a.ncls
	for _, pi := range a.outs[a.outIdx[k]:a.outIdx[k+1]] {
		p := &sc.f.patterns[pi]
		start := sc.pos - len(p.text)
		if !sc.leftOK(p.left, start) || !sc.rightOK(p.right, end, rest) {
			continue
		}
		sp := span{start: sc.offsetAt(start), end: end, pat: pi}
		if inOwnWords(sc.s, sc.html, sp.start, sp.end) {
			continue
		}
		if !sc.c.raw {
			e := &sc.f.entries[p.entry]
			act, ok := judge(sc.s, sc.html, sp.start, sp.end, e)
			if !ok {
				continue
			}
			sp.act = act
		}
		sc.c.add(sp)
		if sc.c.done() {
			return
		}
	}
}

// leftOK checks the character before a term that starts at folded
// position start.
func (sc *scanner) leftOK(e edge, start int) bool {
	if e == edgeNone || start == 0 || sc.softAt(start) {
		return true
	}
	r1, at := sc.ringBack(start)
	if isAlnum(r1) {
		return false
	}
	if e == edgeDigit && (r1 == '.' || r1 == ',') && at > 0 && !sc.softAt(at) {
		if r2, _ := sc.ringBack(at); isDigit(r2) {
			return false // "10.042" is not "0.042"
		}
	}
	return true
}

// ringBack decodes the folded character that ends just before folded
// position at, and returns where it starts.
func (sc *scanner) ringBack(at int) (rune, int) {
	low := max(0, sc.pos-ringSize)
	var b [utf8.UTFMax]byte
	i := at - 1
	n := 0
	for i >= low && n < utf8.UTFMax {
		c := sc.ringB[i&ringMask]
		n++
		if c < 0x80 || c >= 0xc0 {
			break
		}
		i--
	}
	if i < low {
		return utf8.RuneError, low
	}
	for j := range n {
		b[j] = sc.ringB[(i+j)&ringMask]
	}
	r, _ := utf8.DecodeRune(b[:n])
	return r, i
}

// rightOK checks the character after a term.
func (sc *scanner) rightOK(e edge, end int, rest []byte) bool {
	if e == edgeNone {
		return true
	}
	r1, soft, r2 := nextFolded(sc.s, sc.html, end, rest)
	if soft || r1 < 0 {
		return true
	}
	if isAlnum(r1) {
		return false
	}
	if e == edgeDigit && (r1 == '.' || r1 == ',') && isDigit(r2) {
		return false // "0.0425" is not "0.042"
	}
	return true
}

// nextFolded returns the next two folded characters after a term (-1 at
// the end of the text): first what is left of the current character's
// folded form, then the text from end. soft reports an invisible character
// or tag before the first of them.
func nextFolded(s string, isHTML bool, end int, rest []byte) (r1 rune, soft bool, r2 rune) {
	r1, r2 = -1, -1
	got := 0
	take := func(r rune) bool {
		if got == 0 {
			r1 = r
		} else {
			r2 = r
		}
		got++
		return got == 2
	}
	for len(rest) > 0 {
		r, size := utf8.DecodeRune(rest)
		if take(r) {
			return
		}
		rest = rest[size:]
	}
	var buf [foldMax]byte
	for i := end; i < len(s); {
		r, size, str, kind := decode(s, i, isHTML)
		i += size
		switch kind {
		case kindSoft:
			if got == 0 {
				soft = true
			}
			continue
		case kindString:
			r, _ = utf8.DecodeRuneInString(str)
		}
		n, isSoft := foldRune(r, &buf)
		if isSoft {
			if got == 0 {
				soft = true
			}
			continue
		}
		for f := buf[:n]; len(f) > 0; {
			c, sz := utf8.DecodeRune(f)
			if take(c) {
				return
			}
			f = f[sz:]
		}
	}
	return
}
