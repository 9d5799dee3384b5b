package sosfilter

import (
	"bytes"
	"crypto/sha256"
	_ "embed" // the block list ships inside the binary
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

//go:embed blocklist.json
var blocklistJSON []byte

// Errors New returns; both mean the filter must not start.
var (
	// ErrInvalidList is a block list that is malformed or incomplete: a
	// missing field, an unknown value, a duplicated term or id.
	ErrInvalidList = errors.New("invalid block list")
	// ErrInconsistent is a substitute that itself contains a blocked term
	// (SPEC_ORACLE_SOS_FILTER invariant 6, GAP-E).
	ErrInconsistent = errors.New("substitute contains a blocked term")
)

// Category is one of the spec's four BLOCK_LIST categories.
type Category string

// The four categories, in the spec's order.
const (
	CategorySymbol   Category = "lattice_symbol" // 1: LATTICE Unicode symbols
	CategoryCallsign Category = "crew_callsign"  // 2: crew callsigns and internal names
	CategoryTerm     Category = "internal_term"  // 3: internal terminology
	CategoryCB       Category = "cb_radio"       // 4: CB radio lexicon
)

var categoryNumber = map[Category]string{CategorySymbol: "1", CategoryCallsign: "2", CategoryTerm: "3", CategoryCB: "4"}

// matchKind says where a term may stand.
type matchKind uint8

const (
	matchWord   matchKind = iota // a whole word or phrase: not inside a longer word or number
	matchPrefix                  // the start of a word: "Chronogeom" catches "Chronogeometer"
	matchExact                   // anywhere, inside words too: symbols
)

// caseRule says which spellings are the term (GAP-I).
type caseRule uint8

const (
	// caseAny: every spelling is the term (a word English does not have).
	caseAny caseRule = iota
	// caseCommon: the term is also an ordinary English word. All lowercase
	// is the English word and passes; ALL CAPITALS is the crew's spelling
	// and takes the entry's action; any other spelling (Capitalised,
	// mIxEd) may be either, so it quarantines for a person.
	caseCommon
	// caseName: the term is also a real-world name. ALL CAPITALS takes the
	// entry's action; any other spelling quarantines.
	caseName
)

// contextRule names a grammar rule that decides whether an occurrence is
// the internal term at all (GAP-I); see context.go.
type contextRule uint8

const (
	ctxNone contextRule = iota
	ctxManifold
	ctxManifolds
	ctxUtterance
	ctxFinal
	ctxAmount
)

var contextNames = map[string]contextRule{"": ctxNone, "manifold": ctxManifold, "manifolds": ctxManifolds,
	"utterance": ctxUtterance, "final": ctxFinal, "amount": ctxAmount}

// entry is one block list entry, ready for matching.
type entry struct {
	id       string
	category Category
	match    matchKind
	caseRule caseRule
	context  contextRule
	action   Action
	sub      string // REPLACE: the substitute as written ("our analysis")
	bare     string // the substitute without its determiner ("analysis")
	subDet   bool   // the substitute starts with a determiner ("our", "the")
}

// edge is what a pattern's first or last character asks of its neighbour.
type edge uint8

const (
	edgeNone  edge = iota // a symbol: any neighbour
	edgeWord              // a letter: no letter or digit may touch it
	edgeDigit             // a digit: nor may a decimal point and digit ("10.042")
	edgeDot               // a leading decimal point (".042"): no digit or letter before it
)

// pattern is one folded string the automaton looks for.
type pattern struct {
	text        string // folded
	entry       int32
	left, right edge
	dotted      bool // spelt from an abbreviation whose final full stop was left out ("C.L.O.D.")
}

// listFile is the embedded data's shape.
type listFile struct {
	Version string      `json:"version"`
	Spec    string      `json:"spec"`
	Entries []entryFile `json:"entries"`
}

type entryFile struct {
	ID         string   `json:"id"`
	Category   Category `json:"category"`
	Terms      []string `json:"terms"`
	Match      string   `json:"match"`
	Case       string   `json:"case"`
	Context    string   `json:"context"`
	Action     string   `json:"action"`
	Substitute string   `json:"substitute"`
	Basis      string   `json:"basis"`
	Reason     string   `json:"reason"`
}

// maxPattern bounds a folded term's length: the scanner keeps the last
// ringSize folded bytes, which must hold a whole term and two characters
// before it.
const maxPattern = 64

var (
	idPattern         = regexp.MustCompile(`^cat[1-4]\.[a-z0-9]+(-[a-z0-9]+)*$`)
	substitutePattern = regexp.MustCompile(`^[a-z][a-z' ]*[a-z]$`)
)

// load parses and validates a block list and builds its automaton.
func load(data []byte) (*Filter, error) {
	var lf listFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&lf); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidList, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: data after the list", ErrInvalidList)
	}
	if strings.TrimSpace(lf.Version) == "" {
		return nil, fmt.Errorf("%w: no version", ErrInvalidList)
	}
	if len(lf.Entries) == 0 {
		return nil, fmt.Errorf("%w: no entries", ErrInvalidList)
	}
	// The digest covers the look-alike table and the rule of a script's
	// own words too: what the list catches depends on how text is read,
	// so a new table or rule is a new version.
	h := sha256.New()
	h.Write(data)
	h.Write([]byte(lookAlikeSource))
	h.Write([]byte(ownWordsRule))
	h.Write([]byte(readingsRule))
	for _, la := range lookAlikes {
		fmt.Fprintf(h, "\n%x %s", la.r, la.reads)
	}
	f := &Filter{version: lf.Version + "+" + hex.EncodeToString(h.Sum(nil)[:6])}
	ids := map[string]bool{}
	seen := map[string]string{} // folded pattern -> entry id
	for _, ef := range lf.Entries {
		e, err := parseEntry(ef)
		if err != nil {
			return nil, fmt.Errorf("%w: entry %q: %w", ErrInvalidList, ef.ID, err)
		}
		if ids[e.id] {
			return nil, fmt.Errorf("%w: entry id %q repeats", ErrInvalidList, e.id)
		}
		ids[e.id] = true
		ei := int32(len(f.entries))
		f.entries = append(f.entries, e)
		for _, term := range ef.Terms {
			variants, err := termVariants(term, e.match)
			if err != nil {
				return nil, fmt.Errorf("%w: entry %q: %w", ErrInvalidList, e.id, err)
			}
			if other, dup := seen[variants[0]]; dup {
				return nil, fmt.Errorf("%w: entry %q: term %q is already listed by %q", ErrInvalidList, e.id, term, other)
			}
			for _, v := range variants {
				if other, dup := seen[v]; dup {
					if other == e.id {
						continue // a spelling this entry already has
					}
					return nil, fmt.Errorf("%w: entry %q: term %q reads like a term of %q", ErrInvalidList, e.id, term, other)
				}
				seen[v] = e.id
				p := pattern{text: v, entry: ei, dotted: e.match == matchWord && strings.HasSuffix(term, ".")}
				p.left, p.right = edges(v, e.match)
				f.patterns = append(f.patterns, p)
			}
		}
	}
	if err := f.build(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidList, err)
	}
	if err := f.checkSubstitutes(); err != nil {
		return nil, err
	}
	return f, nil
}

func parseEntry(ef entryFile) (entry, error) {
	e := entry{id: ef.ID, category: ef.Category, sub: ef.Substitute}
	if !idPattern.MatchString(ef.ID) {
		return e, errors.New("the id must read cat<1-4>.<lowercase-words>")
	}
	n, ok := categoryNumber[ef.Category]
	if !ok {
		return e, fmt.Errorf("unknown category %q", ef.Category)
	}
	if !strings.HasPrefix(ef.ID, "cat"+n+".") {
		return e, fmt.Errorf("the id does not name category %s (%s)", n, ef.Category)
	}
	if len(ef.Terms) == 0 {
		return e, errors.New("no terms")
	}
	switch ef.Match {
	case "word":
		e.match = matchWord
	case "prefix":
		e.match = matchPrefix
	case "exact":
		e.match = matchExact
	default:
		return e, fmt.Errorf("unknown match %q: word, prefix or exact", ef.Match)
	}
	switch ef.Case {
	case "any":
		e.caseRule = caseAny
	case "common":
		e.caseRule = caseCommon
	case "name":
		e.caseRule = caseName
	default:
		return e, fmt.Errorf("unknown case %q: any, common or name", ef.Case)
	}
	if e.context, ok = contextNames[ef.Context]; !ok {
		return e, fmt.Errorf("unknown context %q", ef.Context)
	}
	if e.caseRule != caseAny {
		for _, t := range ef.Terms {
			if strings.ToUpper(t) != t || !strings.ContainsFunc(t, unicode.IsLetter) {
				return e, fmt.Errorf("term %q: a %s-case term is written in capitals, as the crew writes it", t, ef.Case)
			}
		}
	}
	switch ef.Action {
	case "REPLACE":
		e.action = Replace
		if !substitutePattern.MatchString(ef.Substitute) {
			return e, fmt.Errorf("REPLACE needs a substitute in lowercase words, got %q", ef.Substitute)
		}
		for _, det := range []string{"our ", "the "} {
			if rest, ok := strings.CutPrefix(ef.Substitute, det); ok {
				e.subDet, e.bare = true, rest
			}
		}
		if !e.subDet {
			e.bare = ef.Substitute
		}
	case "QUARANTINE":
		e.action = Quarantine
		if ef.Substitute != "" {
			return e, errors.New("a QUARANTINE entry has no substitute")
		}
	default:
		return e, fmt.Errorf("unknown action %q: REPLACE or QUARANTINE", ef.Action)
	}
	if ef.Basis != "spec" && ef.Basis != "GAP-D" {
		return e, fmt.Errorf("basis %q: spec (the spec's SUBSTITUTION_MAP decides) or GAP-D (decided here)", ef.Basis)
	}
	if strings.TrimSpace(ef.Reason) == "" {
		return e, errors.New("no reason: say why the action is right")
	}
	return e, nil
}

// termVariants folds a term and adds the spellings that are the same term:
// the parts of a phrase joined with nothing ("killbox", "oracletoll"), and
// without the spaces around a symbol ("Φ=0.042"). Separators between parts
// (space, hyphen, underscore) are already one in the folded form. A final
// full stop of an abbreviation ("C.L.O.D.") is left out: it may end the
// sentence too, and substitution decides.
func termVariants(term string, m matchKind) ([]string, error) {
	if m == matchWord {
		term = strings.TrimSuffix(term, ".")
	}
	f := foldString(term)
	if f == "" {
		return nil, fmt.Errorf("term %q folds to nothing", term)
	}
	if len(f) > maxPattern {
		return nil, fmt.Errorf("term %q is longer than %d bytes", term, maxPattern)
	}
	if !utf8.ValidString(term) {
		return nil, fmt.Errorf("term %q is not valid UTF-8", term)
	}
	out := []string{f}
	add := func(v string) {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	if strings.IndexByte(f, sep) >= 0 {
		// Joining must not glue two numbers into a third ("10-4" is not
		// "104").
		parts := strings.Split(f, string(sep))
		joinable := true
		for i, p := range parts {
			if !isAlnumString(p) || (i > 0 && isDigit(lastRune(parts[i-1])) && isDigit(firstRune(p))) {
				joinable = false
			}
		}
		if joinable {
			add(strings.Join(parts, ""))
		}
		var b strings.Builder
		for i := 0; i < len(f); i++ {
			if f[i] == sep && (!isAlnumBefore(f, i) || !isAlnumAfter(f, i+1)) {
				continue
			}
			b.WriteByte(f[i])
		}
		add(b.String())
	}
	return out, nil
}

func isAlnumString(s string) bool {
	for _, r := range s {
		if !isAlnum(r) {
			return false
		}
	}
	return s != ""
}

func firstRune(s string) rune { r, _ := utf8.DecodeRuneInString(s); return r }

func lastRune(s string) rune { r, _ := utf8.DecodeLastRuneInString(s); return r }

func isAlnumBefore(s string, i int) bool {
	r, _ := utf8.DecodeLastRuneInString(s[:i])
	return isAlnum(r)
}

func isAlnumAfter(s string, i int) bool {
	r, _ := utf8.DecodeRuneInString(s[i:])
	return isAlnum(r)
}

func isAlnum(r rune) bool {
	if r < utf8.RuneSelf {
		return ('a' <= r && r <= 'z') || ('0' <= r && r <= '9') || ('A' <= r && r <= 'Z')
	}
	return unicode.IsLetter(r) || unicode.IsDigit(r)
}

func isDigit(r rune) bool { return '0' <= r && r <= '9' }

// edges works out what a folded pattern asks of its neighbours.
func edges(p string, m matchKind) (left, right edge) {
	if m == matchExact {
		return edgeNone, edgeNone
	}
	first, size := utf8.DecodeRuneInString(p)
	last, _ := utf8.DecodeLastRuneInString(p)
	switch {
	case isDigit(first):
		left = edgeDigit
	case isAlnum(first):
		left = edgeWord
	case first == '.' || first == ',':
		if r, _ := utf8.DecodeRuneInString(p[size:]); isDigit(r) {
			left = edgeDot
		}
	}
	if m == matchPrefix {
		return left, edgeNone
	}
	switch {
	case isDigit(last):
		right = edgeDigit
	case isAlnum(last):
		right = edgeWord
	}
	return left, right
}

// checkSubstitutes is the self-consistency validator (GAP-E): no
// substitute, in any of the forms substitution writes (as listed, without
// its determiner, capitalised), may contain a blocked term. It matches
// without the case and context rules, so a substitute may not even use a
// blocked word in its ordinary English sense.
func (f *Filter) checkSubstitutes() error {
	for _, e := range f.entries {
		if e.action != Replace {
			continue
		}
		for _, form := range []string{e.sub, e.bare, capitalize(e.sub), capitalize(e.bare)} {
			if ids := f.termsIn(form); len(ids) > 0 {
				return fmt.Errorf("%w: entry %q: substitute %q contains %s", ErrInconsistent, e.id, form, strings.Join(ids, ", "))
			}
		}
	}
	return nil
}

// termsIn lists the ids of every entry whose term occurs in s as a word,
// whatever its case or context.
func (f *Filter) termsIn(s string) []string {
	var c collector
	c.raw = true
	f.scan(s, false, &c)
	var ids []string
	for i := range c.len() {
		id := f.entries[f.patterns[c.at(i).pat].entry].id
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids
}
