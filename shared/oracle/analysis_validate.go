package oracle

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Bounds on a verdict's text, in characters (Unicode code points). They keep
// a runaway reply out of the email and the result page while leaving room:
// shared/prompt asks the model for at most half of each, so an answer that
// overshoots its target is still delivered rather than failed.
const (
	MaxSummaryChars  = 600  // summary
	MaxAnalysisChars = 1000 // each breakdown dimension's analysis
	MaxStrategyChars = 600  // next_step, alternative and each test
)

// MaxReplyBytes bounds the model's raw reply before it is decoded. The
// longest valid reply is under 10,000 characters; even written entirely as
// \u escapes (12 bytes for a character outside the BMP) it stays well below
// this, so the bound only refuses runaway output.
const MaxReplyBytes = 256 << 10

// StrategyTests is how many tests a Strategy Session recommends.
const StrategyTests = 3

// ParseAnalysis strictly decodes the model's reply for a tier and validates
// it (see Validate). The reply must be exactly one JSON object: a markdown
// fence, text around the object, trailing data, unknown, duplicated or
// differently cased keys, and null or mistyped values are all refused, never
// repaired, because a reply that needed repair is one the model did not mean
// as written. Every error has code CodeInvalid and names the offending field
// without quoting the model's text.
func ParseAnalysis(tier Tier, raw []byte) (Analysis, error) {
	if _, err := ParseTier(string(tier)); err != nil {
		return Analysis{}, Errorf(CodeInvalid, "analysis: unknown tier %q", Clip(string(tier), 32))
	}
	if len(raw) > MaxReplyBytes {
		return Analysis{}, invalid(tier, "reply", "is %d bytes long, at most %d allowed", len(raw), MaxReplyBytes)
	}
	// encoding/json would silently turn invalid UTF-8 into U+FFFD, so the
	// bytes are checked before decoding.
	if !utf8.Valid(raw) {
		return Analysis{}, invalid(tier, "reply", "is not valid UTF-8")
	}
	if bytes.HasPrefix(bytes.TrimLeft(raw, " \t\r\n"), []byte("```")) {
		return Analysis{}, invalid(tier, "reply", "is wrapped in a markdown code fence; it must be the JSON object alone")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	var object json.RawMessage
	if err := dec.Decode(&object); err != nil {
		return Analysis{}, invalid(tier, "reply", "is not well-formed JSON")
	}
	if _, err := dec.Token(); err != io.EOF {
		return Analysis{}, invalid(tier, "reply", "has data after the JSON object")
	}
	a, err := decodeAnalysis(tier, object)
	if err != nil {
		return Analysis{}, err
	}
	if err := a.Validate(tier); err != nil {
		return Analysis{}, err
	}
	return a, nil
}

// Validate checks an analysis against its tier: the verdict is one of the
// four tokens (NULL included); the summary is non-empty; quick has neither
// breakdown nor strategy; full has a breakdown of exactly the five
// Dimensions, each GREEN, AMBER or RED with a non-empty analysis, and no
// strategy; strategy has the breakdown and a strategy with a next step, an
// alternative and exactly StrategyTests tests. Every text is valid UTF-8,
// within its bound and free of control characters other than newline and
// tab. ParseAnalysis calls it, and a stored verdict can be re-checked with it.
func (a Analysis) Validate(tier Tier) error {
	if _, err := ParseTier(string(tier)); err != nil {
		return Errorf(CodeInvalid, "analysis: unknown tier %q", Clip(string(tier), 32))
	}
	if _, err := ParseVerdict(string(a.Verdict)); err != nil {
		return invalid(tier, "verdict", "must be GREEN, AMBER, RED or NULL")
	}
	if err := checkText(tier, "summary", a.Summary, MaxSummaryChars); err != nil {
		return err
	}
	if tier == TierQuick {
		if a.Breakdown != nil {
			return invalid(tier, "breakdown", "is not part of a %s", tier.Name())
		}
	} else if err := a.checkBreakdown(tier); err != nil {
		return err
	}
	if tier == TierStrategy {
		return a.checkStrategy(tier)
	}
	if a.Strategy != nil {
		return invalid(tier, "strategy", "is not part of a %s", tier.Name())
	}
	return nil
}

func (a Analysis) checkBreakdown(tier Tier) error {
	if a.Breakdown == nil {
		return invalid(tier, "breakdown", "is missing")
	}
	names := make([]string, 0, len(a.Breakdown))
	for name := range a.Breakdown {
		names = append(names, name)
	}
	// Sorted so that the same analysis always reports the same error.
	slices.Sort(names)
	for _, name := range names {
		if !slices.Contains(Dimensions, name) {
			return invalid(tier, fmt.Sprintf("breakdown[%q]", Clip(name, 32)), "is not one of the five dimensions")
		}
	}
	for _, name := range Dimensions {
		field := fmt.Sprintf("breakdown[%q]", name)
		note, ok := a.Breakdown[name]
		if !ok {
			return invalid(tier, field, "is missing")
		}
		switch note.Verdict {
		case VerdictGreen, VerdictAmber, VerdictRed:
		default:
			return invalid(tier, field+".verdict", "must be GREEN, AMBER or RED (NULL applies to the whole verdict only)")
		}
		if err := checkText(tier, field+".analysis", note.Analysis, MaxAnalysisChars); err != nil {
			return err
		}
	}
	return nil
}

func (a Analysis) checkStrategy(tier Tier) error {
	s := a.Strategy
	if s == nil {
		return invalid(tier, "strategy", "is missing")
	}
	if err := checkText(tier, "strategy.next_step", s.NextStep, MaxStrategyChars); err != nil {
		return err
	}
	if err := checkText(tier, "strategy.alternative", s.Alternative, MaxStrategyChars); err != nil {
		return err
	}
	if len(s.Tests) != StrategyTests {
		return invalid(tier, "strategy.tests", "must hold exactly %d tests, has %d", StrategyTests, len(s.Tests))
	}
	for i, test := range s.Tests {
		if err := checkText(tier, fmt.Sprintf("strategy.tests[%d]", i), test, MaxStrategyChars); err != nil {
			return err
		}
	}
	return nil
}

// checkText applies the rules every customer-facing text shares. Newline and
// tab are the only control characters allowed: anything else (a carriage
// return, an escape sequence, a NUL) can rewrite or hide what the email and
// the result page show.
func checkText(tier Tier, field, s string, maxChars int) error {
	if !utf8.ValidString(s) {
		return invalid(tier, field, "is not valid UTF-8")
	}
	if strings.TrimSpace(s) == "" {
		return invalid(tier, field, "is empty")
	}
	if n := utf8.RuneCountInString(s); n > maxChars {
		return invalid(tier, field, "is %d characters long, at most %d allowed", n, maxChars)
	}
	for _, r := range s {
		if unicode.IsControl(r) && r != '\n' && r != '\t' {
			return invalid(tier, field, "contains the control character U+%04X", r)
		}
	}
	return nil
}

// invalid builds the CodeInvalid error for one field of a tier's analysis.
func invalid(tier Tier, field, format string, args ...any) *Error {
	return Errorf(CodeInvalid, "%s analysis: %s %s", tier, field, fmt.Sprintf(format, args...))
}

// CanonicalJSON returns the analysis in its one canonical encoding: object
// keys sorted (byte order) at every level, no insignificant whitespace, text
// as UTF-8 without HTML escaping (encoding/json still writes U+2028 and
// U+2029 as escapes, which is deterministic). These bytes are what is stored
// and what the verdict hash is computed over, so two equal analyses hash
// alike whatever the key order or spacing of the replies they came from
// (SPEC_ORACLE_AUDIT_TRAIL GAP-08). A nil breakdown or strategy is omitted.
// It fails on text that is not valid UTF-8, which encoding/json would
// otherwise replace silently, making different analyses encode alike.
func (a Analysis) CanonicalJSON() ([]byte, error) {
	texts := []string{string(a.Verdict), a.Summary}
	// Maps, not structs, so encoding/json sorts the keys at every level.
	doc := map[string]any{"verdict": string(a.Verdict), "summary": a.Summary}
	if a.Breakdown != nil {
		breakdown := make(map[string]any, len(a.Breakdown))
		for name, note := range a.Breakdown {
			texts = append(texts, name, string(note.Verdict), note.Analysis)
			breakdown[name] = map[string]any{"verdict": string(note.Verdict), "analysis": note.Analysis}
		}
		doc["breakdown"] = breakdown
	}
	if s := a.Strategy; s != nil {
		texts = append(texts, s.NextStep, s.Alternative)
		texts = append(texts, s.Tests...)
		doc["strategy"] = map[string]any{"next_step": s.NextStep, "alternative": s.Alternative, "tests": s.Tests}
	}
	for _, t := range texts {
		if !utf8.ValidString(t) {
			return nil, Errorf(CodeInvalid, "canonical analysis: a text is not valid UTF-8")
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return nil, Wrap(CodeInternal, err, "canonical analysis: encoding failed")
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// replyReader walks one JSON value token by token. encoding/json's Unmarshal
// would accept what a strict reading refuses: keys matched without regard to
// case, a repeated key (the last one wins) and null for any field.
type replyReader struct {
	tier Tier
	dec  *json.Decoder
}

// decodeAnalysis reads the analysis from a single well-formed JSON value.
func decodeAnalysis(tier Tier, object json.RawMessage) (Analysis, error) {
	r := replyReader{tier: tier, dec: json.NewDecoder(bytes.NewReader(object))}
	// Numbers are only ever refused; as json.Number they cannot fail to
	// convert first and hide the real error.
	r.dec.UseNumber()
	var a Analysis
	err := r.object("reply", func(key string) error {
		var err error
		switch key {
		case "verdict":
			var v string
			v, err = r.text("verdict")
			a.Verdict = Verdict(v)
		case "summary":
			a.Summary, err = r.text("summary")
		case "breakdown":
			a.Breakdown, err = r.breakdown()
		case "strategy":
			a.Strategy, err = r.strategy()
		default:
			err = invalid(tier, fmt.Sprintf("reply field %q", Clip(key, 32)), "is not part of a verdict")
		}
		return err
	})
	return a, err
}

func (r replyReader) breakdown() (map[string]DimensionNote, error) {
	notes := map[string]DimensionNote{}
	err := r.object("breakdown", func(name string) error {
		field := fmt.Sprintf("breakdown[%q]", Clip(name, 32))
		var note DimensionNote
		err := r.object(field, func(key string) error {
			var err error
			switch key {
			case "verdict":
				var v string
				v, err = r.text(field + ".verdict")
				note.Verdict = Verdict(v)
			case "analysis":
				note.Analysis, err = r.text(field + ".analysis")
			default:
				err = invalid(r.tier, fmt.Sprintf("%s field %q", field, Clip(key, 32)), "is not part of a dimension")
			}
			return err
		})
		notes[name] = note
		return err
	})
	return notes, err
}

func (r replyReader) strategy() (*Strategy, error) {
	var s Strategy
	err := r.object("strategy", func(key string) error {
		var err error
		switch key {
		case "next_step":
			s.NextStep, err = r.text("strategy.next_step")
		case "alternative":
			s.Alternative, err = r.text("strategy.alternative")
		case "tests":
			s.Tests, err = r.texts("strategy.tests")
		default:
			err = invalid(r.tier, fmt.Sprintf("strategy field %q", Clip(key, 32)), "is not part of a strategy")
		}
		return err
	})
	return &s, err
}

// object reads an object whose member values the callback reads, refusing a
// key that appears twice.
func (r replyReader) object(field string, member func(key string) error) error {
	if err := r.delim(field, '{', "an object"); err != nil {
		return err
	}
	seen := map[string]bool{}
	for r.dec.More() {
		tok, err := r.dec.Token()
		if err != nil {
			return Wrap(CodeInvalid, err, fmt.Sprintf("%s analysis: %s is not well-formed", r.tier, field))
		}
		key, _ := tok.(string) // an object member always starts with its key
		if seen[key] {
			return invalid(r.tier, fmt.Sprintf("%s field %q", field, Clip(key, 32)), "appears twice")
		}
		seen[key] = true
		if err := member(key); err != nil {
			return err
		}
	}
	return r.delim(field, '}', "a closed object")
}

func (r replyReader) texts(field string) ([]string, error) {
	if err := r.delim(field, '[', "an array"); err != nil {
		return nil, err
	}
	list := []string{}
	for r.dec.More() {
		s, err := r.text(fmt.Sprintf("%s[%d]", field, len(list)))
		if err != nil {
			return nil, err
		}
		list = append(list, s)
	}
	return list, r.delim(field, ']', "a closed array")
}

func (r replyReader) text(field string) (string, error) {
	tok, err := r.dec.Token()
	if err != nil {
		return "", Wrap(CodeInvalid, err, fmt.Sprintf("%s analysis: %s is not well-formed", r.tier, field))
	}
	s, ok := tok.(string)
	if !ok {
		return "", invalid(r.tier, field, "must be a string")
	}
	return s, nil
}

func (r replyReader) delim(field string, want json.Delim, what string) error {
	tok, err := r.dec.Token()
	if err != nil {
		return Wrap(CodeInvalid, err, fmt.Sprintf("%s analysis: %s is not well-formed", r.tier, field))
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return invalid(r.tier, field, "must be %s", what)
	}
	return nil
}
