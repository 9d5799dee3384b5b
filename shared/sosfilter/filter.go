package sosfilter

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"sync"
	"unicode/utf8"
	"unsafe"

	"42sisters.ai/oracle/shared/oracle"
)

// Action is what the filter does with a payload, or what one occurrence
// of a term calls for. The order matters: a payload takes the strongest
// action any of its parts calls for.
type Action uint8

// The three outcomes of SPEC_ORACLE_SOS_FILTER "Outputs".
const (
	Pass       Action = iota // deliver unchanged
	Replace                  // deliver with the substitutes in place
	Quarantine               // hold for a person; deliver nothing
)

func (a Action) String() string {
	switch a {
	case Pass:
		return "PASS"
	case Replace:
		return "REPLACE"
	case Quarantine:
		return "QUARANTINE"
	}
	return "Action(" + strconv.Itoa(int(a)) + ")"
}

// MarshalText writes the action's name, so logs and records read "PASS".
func (a Action) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

// Reason says why a payload was quarantined.
type Reason string

// Reasons for a quarantine.
const (
	// ReasonTerm: a quarantine-class entry, or a replaceable term in a
	// spelling or position the rules cannot call safe (see Hit.Action).
	ReasonTerm Reason = "term"
	// ReasonDensity: more replaceable terms than MaxReplacements, or
	// more than MaxDensity per 100 words (GAP-B).
	ReasonDensity Reason = "density"
	// ReasonSubstitution: the substituted text would not read as correct
	// English, or its re-scan found a blocked term.
	ReasonSubstitution Reason = "substitution"
)

// The contamination threshold (GAP-B). One or two stray terms are prompt
// drift that a substitute repairs; more, or a text dense with them, means
// the model wrote in the internal register, and substitutes would leave a
// verdict that reads as nonsense: a person should look at it. The counts
// cover the whole payload (every field of a verdict together) and only
// the terms that would be replaced (a quarantine-class term quarantines
// anyway).
const (
	// MaxReplacements is the most terms one payload may have replaced.
	MaxReplacements = 3
	// MaxDensity is the most replaced terms per 100 words of the payload,
	// applied from the second term on, so a short quick-tier summary may
	// have one term repaired but not two.
	MaxDensity = 2
)

// Hit is one occurrence of a blocked term. It never holds the matched
// text: a quarantine record or log line names the entry, not the leak.
type Hit struct {
	Term     string   `json:"term"`     // the block list entry's id, e.g. "cat3.tmm"
	Category Category `json:"category"` // the entry's category
	// Action is what this occurrence calls for: Replace or Quarantine
	// (Quarantine also where a replaceable term is spelt or placed so that
	// the rules cannot call a substitute safe).
	Action Action `json:"action"`
	// Field is where it was found in a verdict or an email, e.g.
	// "breakdown.Stability.analysis" or "html"; empty for Text.
	Field string `json:"field,omitempty"`
}

// Result is the outcome of Text.
type Result struct {
	Action Action
	// Text is what may be delivered: the input itself for Pass (the same
	// string), the substituted text for Replace, and "" for Quarantine, so
	// that a caller that forgets to look at Action delivers nothing.
	Text   string
	Hits   []Hit
	Reason Reason // set for Quarantine
}

// Report is the outcome of Analysis and Mail.
type Report struct {
	Action  Action
	Hits    []Hit
	Reason  Reason // set for Quarantine
	Version string // the block list version that decided, for the record
}

// Terms lists the entry ids of the hits, each once, in order: what a
// quarantine record names.
func (r Report) Terms() []string { return terms(r.Hits) }

// Terms lists the entry ids of the hits, each once, in order.
func (r Result) Terms() []string { return terms(r.Hits) }

func terms(hits []Hit) []string {
	var ids []string
	for _, h := range hits {
		if !slices.Contains(ids, h.Term) {
			ids = append(ids, h.Term)
		}
	}
	return ids
}

// Filter is the outbound content filter. It holds only the compiled,
// read-only block list: calls share nothing and keep nothing (invariant
// 7), so one Filter serves any number of goroutines.
type Filter struct {
	version    string
	entries    []entry
	patterns   []pattern
	ac         automaton
	disguises  []disguise // the letter terms as the disguise view reads them
	dac        automaton  // the automaton of disguises
	asciiPlain [utf8.RuneSelf]byte
	asciiHTML  [utf8.RuneSelf]byte
}

// New loads the block list embedded in the binary, validates it (including
// the substitutes' self-consistency, GAP-E) and compiles it. It is meant
// for cold start: an error means the list is broken and the function must
// not serve, since no gate may run without the filter. The error wraps
// ErrInvalidList or ErrInconsistent.
func New() (*Filter, error) {
	f, err := load(blocklistJSON)
	if err != nil {
		return nil, fmt.Errorf("sosfilter: %w", err)
	}
	return f, nil
}

// shared is the process's filter of the embedded list.
var shared = sync.OnceValues(New)

// Shared returns New's filter, built once a process however many ask: a
// function's gates and the prompts' listed words (package prompt) share
// it, where each built its own.
func Shared() (*Filter, error) { return shared() }

// Prepare starts building Shared's filter in the background. A function's
// main calls it first, so that the filter is built while the cold start
// waits on the network for its settings' secrets rather than after them:
// it is several milliseconds of CPU in a fresh process, and the wait
// leaves the CPU idle.
func Prepare() { go shared() }

// Version is the block list's version and a digest of its content, e.g.
// "1.0.0+3fa2b1c9d0e4": an edited list is told apart even if its version
// was not raised.
func (f *Filter) Version() string { return f.version }

// Text filters one customer-facing text: an error or fallback message, or
// any single string. Clean text is returned as it is, without allocating.
func (f *Filter) Text(text string) Result {
	if f.clean(text, false) {
		return Result{Action: Pass, Text: text}
	}
	fields := []field{{text: text}}
	act, reason, hits := f.run(fields, true, false)
	r := Result{Action: act, Hits: hits, Reason: reason}
	switch act {
	case Pass:
		r.Text = text
	case Replace:
		r.Text = fields[0].out
	}
	return r
}

// Analysis filters a verdict at gate 1: the summary, each breakdown
// dimension's analysis (and its key, which is model output too), the
// strategy's next step, alternative and each test. The verdict labels are
// tokens, not text, and are left alone. Density is counted over all the
// fields together, and the strongest action decides for the whole verdict.
// It returns a unchanged for Pass, a copy with the substitutes in place for
// Replace (a is never modified), and the zero Analysis for Quarantine.
//
// A term the customer's own query holds is no exception (invariant 1): the
// verdict is the house's text, and the prompt asks the model to refer to
// such a word without writing it.
func (f *Filter) Analysis(a oracle.Analysis) (oracle.Analysis, Report) {
	return f.analysis(a, false)
}

// Reviewed cleans a quarantined verdict that the operator reviewed and
// chose to deliver: every replaceable term gets its substitute however
// many there are (the contamination threshold asks for a person's look,
// which has been given). A quarantine-class term, a term no rule can call
// safe to substitute, or a substitute that does not read well still
// quarantines: no approval makes those deliverable.
func (f *Filter) Reviewed(a oracle.Analysis) (oracle.Analysis, Report) {
	return f.analysis(a, true)
}

func (f *Filter) analysis(a oracle.Analysis, reviewed bool) (oracle.Analysis, Report) {
	rep := Report{Version: f.version}
	if f.analysisClean(a) {
		return a, rep
	}
	fields := analysisFields(a)
	rep.Action, rep.Reason, rep.Hits = f.run(fields, true, reviewed)
	switch rep.Action {
	case Pass:
		return a, rep
	case Replace:
		return rebuild(a, fields), rep
	}
	return oracle.Analysis{}, rep
}

// Own marks where an email shows the customer's own submission back to
// them ("YOUR SUBMISSION:"), as byte ranges [start, end) of its text part
// and of its HTML part, in order and apart. What the customer wrote is
// theirs to see again, whatever it holds; everything else in the email is
// the house's text.
type Own struct {
	Text, HTML [][2]int
}

// Mail filters a finished email at gate 2: its subject, its text part and
// its HTML part. Gate 2 never edits: the email was formatted from a
// verdict that gate 1 already cleaned, so a hit here means a formatter or
// gate 1 failed, and a substitute could also make the text and HTML parts
// disagree. Any hit quarantines.
//
// The ranges own marks, the customer's submission shown back to them, are
// not read, and no term is read across one: the text on either side is
// read as if the submission were a paragraph break. Ranges that are out of
// bounds, overlap, are out of order or cut a character are ignored, so the
// whole part is read (failing closed).
//
// The HTML is read twice: as the reader sees it (tags are invisible,
// entities are their characters, so "AI&#79;N" and "AI<b></b>ON" are
// caught), and as its source (attributes and comments reach the customer
// too).
func (f *Filter) Mail(subject, text, html string, own Own) Report {
	rep := Report{Version: f.version}
	if f.clean(subject, false) && f.cleanAround(text, own.Text, false) && f.cleanAround(html, own.HTML, true) && f.cleanAround(html, own.HTML, false) {
		return rep
	}
	fields := []field{{path: "subject", text: subject}}
	for _, t := range outside(text, own.Text) {
		fields = append(fields, field{path: "text", text: t})
	}
	for _, h := range outside(html, own.HTML) {
		fields = append(fields, field{path: "html", text: h, html: true})
	}
	rep.Action, rep.Reason, rep.Hits = f.run(fields, false, false)
	return rep
}

// cleanAround is clean for the parts of s outside the ranges own.
func (f *Filter) cleanAround(s string, own [][2]int, isHTML bool) bool {
	if !validRanges(s, own) {
		return f.clean(s, isHTML)
	}
	at := 0
	for _, r := range own {
		if !f.clean(s[at:r[0]], isHTML) {
			return false
		}
		at = r[1]
	}
	return f.clean(s[at:], isHTML)
}

// outside is the parts of s before, between and after the ranges own; all
// of s when own is not valid for it.
func outside(s string, own [][2]int) []string {
	if !validRanges(s, own) {
		return []string{s}
	}
	parts := make([]string, 0, len(own)+1)
	at := 0
	for _, r := range own {
		parts = append(parts, s[at:r[0]])
		at = r[1]
	}
	return append(parts, s[at:])
}

// validRanges reports ranges that lie within s, in order, apart, and on
// character boundaries.
func validRanges(s string, own [][2]int) bool {
	at := 0
	for _, r := range own {
		if r[0] < at || r[1] < r[0] || r[1] > len(s) || !boundary(s, r[0]) || !boundary(s, r[1]) {
			return false
		}
		at = r[1]
	}
	return true
}

func boundary(s string, i int) bool { return i == len(s) || utf8.RuneStart(s[i]) }

// clean reports a text with no hit at all, stopping at the first: none as
// it is written, none as it is shown when a right-to-left override
// reverses part of it, and none in its disguise view.
func (f *Filter) clean(s string, isHTML bool) bool {
	var c collector
	c.first = true
	f.scan(s, isHTML, &c)
	if c.n == 0 && reversed(s) {
		// The view lives in buf for as long as the scans read it, and no
		// scan keeps the text it reads.
		var buf [4096]byte
		b := shownInto(buf[:0], s, isHTML)
		view := unsafe.String(unsafe.SliceData(b), len(b))
		f.scan(view, false, &c)
		if c.n == 0 {
			f.scanDisguised(view, false, &c)
		}
	}
	if c.n == 0 && f.mayDisguise(s, isHTML) {
		f.scanDisguised(s, isHTML, &c)
	}
	if c.n == 0 && mayNumber(s) {
		var buf [4096]byte
		b := numberedInto(buf[:0], s)
		f.scan(unsafe.String(unsafe.SliceData(b), len(b)), isHTML, &c)
	}
	return c.n == 0
}

// field is one customer-facing string of a payload.
type field struct {
	path  string
	text  string
	html  bool   // read as HTML (visible text and source)
	key   bool   // a map key: it cannot be edited, so any hit quarantines
	spans []span // resolved hits
	out   string // the text after substitution
	// set writes out into the copy of the verdict that Analysis returns.
	set func(a *oracle.Analysis, out string)
}

// run decides for a whole payload; reviewed lifts the contamination
// threshold (Reviewed).
func (f *Filter) run(fields []field, mayReplace, reviewed bool) (Action, Reason, []Hit) {
	var hits []Hit
	quarantine, replace := 0, 0
	for i := range fields {
		fl := &fields[i]
		var c collector
		f.scan(fl.text, fl.html, &c)
		if fl.html {
			f.scan(fl.text, false, &c)
		}
		// A term that shows only once an override has reversed its letters
		// ("\u202eNOIA" reads "AION"), or only in the disguise view ("A I
		// O N", "GL0SS"), is a disguise: its letters cannot be replaced in
		// place, so it quarantines.
		disguised := append(f.disguisedHits(fl, &c), f.numberHits(fl, &c)...)
		if reversed(fl.text) {
			disguised = append(f.reversedHits(fl, &c), disguised...)
		}
		for _, h := range disguised {
			quarantine++
			hits = append(hits, h)
		}
		if c.n == 0 {
			continue
		}
		fl.spans = resolve(&c)
		for j := range fl.spans {
			sp := &fl.spans[j]
			p := f.patterns[sp.pat]
			e := &f.entries[p.entry]
			if fl.key || !mayReplace {
				sp.act = Quarantine // nothing here can be edited
			}
			h := Hit{Term: e.id, Category: e.category, Action: sp.act, Field: fl.path}
			if sp.act == Quarantine {
				quarantine++
			} else {
				replace++
			}
			hits = append(hits, h)
		}
	}
	switch {
	case quarantine > 0:
		return Quarantine, ReasonTerm, hits
	case replace == 0:
		return Pass, "", hits
	}
	total := 0
	for _, fl := range fields {
		total += words(fl.text)
	}
	if !reviewed && (replace > MaxReplacements || (replace >= 2 && replace*100 > MaxDensity*total)) {
		return Quarantine, ReasonDensity, hits
	}
	for i := range fields {
		fl := &fields[i]
		fl.out = fl.text
		if len(fl.spans) == 0 {
			continue
		}
		out, ok := f.substitute(fl.text, fl.spans)
		if !ok {
			return Quarantine, ReasonSubstitution, hits
		}
		// Re-scan (failure mode 5): the substitutes are clean on their
		// own, but the text around them must not form a term with them.
		if !f.clean(out, false) {
			return Quarantine, ReasonSubstitution, hits
		}
		fl.out = out
	}
	return Replace, "", hits
}

// reversedHits are the terms fl shows once its right-to-left overrides
// have reversed its letters, beyond those its text holds as written
// (logical, the written text's collected hits): each as a quarantining hit.
func (f *Filter) reversedHits(fl *field, logical *collector) []Hit {
	written := map[int32]int{}
	for i := 0; i < logical.len(); i++ {
		written[logical.at(i).pat]++
	}
	var c, dc collector
	view := string(shownInto(nil, fl.text, fl.html))
	f.scan(view, false, &c)
	f.scanDisguised(view, false, &dc)
	for _, sp := range unexplained(&dc, &c) {
		c.add(sp)
	}
	var out []Hit
	for _, sp := range resolve(&c) {
		if written[sp.pat] > 0 {
			written[sp.pat]--
			continue
		}
		e := &f.entries[f.patterns[sp.pat].entry]
		out = append(out, Hit{Term: e.id, Category: e.category, Action: Quarantine, Field: fl.path})
	}
	return out
}

// disguisedHits are the terms fl's disguise view reads where its text holds
// none as written (written, the plain scan's collected hits): each as a
// quarantining hit.
func (f *Filter) disguisedHits(fl *field, written *collector) []Hit {
	if !f.mayDisguise(fl.text, fl.html) && !(fl.html && f.mayDisguise(fl.text, false)) {
		return nil
	}
	var c collector
	f.scanDisguised(fl.text, fl.html, &c)
	if fl.html {
		f.scanDisguised(fl.text, false, &c)
	}
	if c.n == 0 {
		return nil
	}
	var out []Hit
	for _, sp := range unexplained(&c, written) {
		e := &f.entries[f.patterns[sp.pat].entry]
		out = append(out, Hit{Term: e.id, Category: e.category, Action: Quarantine, Field: fl.path})
	}
	return out
}

// numberHits are the listed numbers fl's numeric view reads where its text
// holds none as written (written, the plain scan's collected hits): each
// as a quarantining hit.
func (f *Filter) numberHits(fl *field, written *collector) []Hit {
	if !mayNumber(fl.text) {
		return nil
	}
	var c collector
	f.scan(string(numberedInto(nil, fl.text)), fl.html, &c)
	var out []Hit
	for _, sp := range unexplained(&c, written) {
		e := &f.entries[f.patterns[sp.pat].entry]
		out = append(out, Hit{Term: e.id, Category: e.category, Action: Quarantine, Field: fl.path})
	}
	return out
}

// unexplained are the disguise view's terms (disguised, resolved) that no
// term of the plain scan (written) covers: where a term is written plainly
// ("C.L.O.D.", "AION") both read it, and it is the plain scan's to judge;
// a plain term inside a disguised one ("Logos" in "D r Logos") explains
// nothing.
func unexplained(disguised, written *collector) []span {
	var out []span
next:
	for _, sp := range resolve(disguised) {
		for i := 0; i < written.len(); i++ {
			if w := written.at(i); w.start <= sp.start && sp.end <= w.end {
				continue next
			}
		}
		out = append(out, sp)
	}
	return out
}

// resolve orders the occurrences and keeps the leftmost-longest ones that
// do not overlap: "Ω = 97.4%" is one hit, not three, and "Dr. Logos" is
// the phrase, not the name inside it.
func resolve(c *collector) []span {
	all := make([]span, 0, c.len())
	for i := range c.len() {
		all = append(all, c.at(i))
	}
	sort.SliceStable(all, func(i, j int) bool {
		a, b := all[i], all[j]
		if a.start != b.start {
			return a.start < b.start
		}
		if a.end != b.end {
			return a.end > b.end
		}
		return a.act > b.act
	})
	out := all[:0]
	end := -1
	for _, sp := range all {
		if sp.start < end {
			continue
		}
		out = append(out, sp)
		end = sp.end
	}
	return out
}

// analysisClean checks every customer-visible field of a verdict, without
// allocating.
func (f *Filter) analysisClean(a oracle.Analysis) bool {
	if !f.clean(a.Summary, false) {
		return false
	}
	for k, note := range a.Breakdown {
		if !f.clean(k, false) || !f.clean(note.Analysis, false) {
			return false
		}
	}
	if s := a.Strategy; s != nil {
		if !f.clean(s.NextStep, false) || !f.clean(s.Alternative, false) {
			return false
		}
		for _, t := range s.Tests {
			if !f.clean(t, false) {
				return false
			}
		}
	}
	return true
}

// analysisFields lists a verdict's fields in reading order: the summary,
// the dimensions in oracle.Dimensions order (any other key after them,
// sorted), then the strategy.
func analysisFields(a oracle.Analysis) []field {
	fields := []field{{path: "summary", text: a.Summary, set: func(o *oracle.Analysis, v string) { o.Summary = v }}}
	var keys []string
	for _, d := range oracle.Dimensions {
		if _, ok := a.Breakdown[d]; ok {
			keys = append(keys, d)
		}
	}
	var other []string
	for k := range a.Breakdown {
		if !slices.Contains(oracle.Dimensions, k) {
			other = append(other, k)
		}
	}
	sort.Strings(other)
	for _, k := range append(keys, other...) {
		fields = append(fields,
			field{path: "breakdown." + k, text: k, key: true},
			field{path: "breakdown." + k + ".analysis", text: a.Breakdown[k].Analysis, set: func(o *oracle.Analysis, v string) {
				note := o.Breakdown[k]
				note.Analysis = v
				o.Breakdown[k] = note
			}})
	}
	if s := a.Strategy; s != nil {
		fields = append(fields,
			field{path: "strategy.next_step", text: s.NextStep, set: func(o *oracle.Analysis, v string) { o.Strategy.NextStep = v }},
			field{path: "strategy.alternative", text: s.Alternative, set: func(o *oracle.Analysis, v string) { o.Strategy.Alternative = v }})
		for i, t := range s.Tests {
			fields = append(fields, field{path: "strategy.tests[" + strconv.Itoa(i) + "]", text: t, set: func(o *oracle.Analysis, v string) { o.Strategy.Tests[i] = v }})
		}
	}
	return fields
}

// rebuild is a copy of a with each field's substituted text; a itself, its
// map and its strategy are left as they were.
func rebuild(a oracle.Analysis, fields []field) oracle.Analysis {
	out := a
	if a.Breakdown != nil {
		out.Breakdown = maps.Clone(a.Breakdown)
	}
	if a.Strategy != nil {
		s := *a.Strategy
		s.Tests = slices.Clone(a.Strategy.Tests)
		out.Strategy = &s
	}
	for _, fl := range fields {
		if fl.set != nil {
			fl.set(&out, fl.out)
		}
	}
	return out
}

// Listed returns the listed terms s holds as the filter would flag them in
// a verdict, each as s writes it, once, in order: the words a prompt asks
// the model never to repeat from a customer's query.
func (f *Filter) Listed(s string) []string {
	var c collector
	f.scan(s, false, &c)
	var out []string
	for _, sp := range resolve(&c) {
		if w := s[sp.start:sp.end]; !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out
}

// ListedIn is Listed over every customer-visible field of a verdict, in
// reading order, each word once: the words a writing again must avoid. A
// term only a disguise view reads (letters spaced or swapped) is not
// among them.
func (f *Filter) ListedIn(a oracle.Analysis) []string {
	var out []string
	for _, fl := range analysisFields(a) {
		for _, w := range f.Listed(fl.text) {
			if !slices.Contains(out, w) {
				out = append(out, w)
			}
		}
	}
	return out
}
