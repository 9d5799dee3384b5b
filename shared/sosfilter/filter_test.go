package sosfilter

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode"
	"unicode/utf8"
	"unsafe"

	"42sisters.ai/oracle/shared/oracle"
)

func newFilter(tb testing.TB) *Filter {
	tb.Helper()
	f, err := New()
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	return f
}

// shippedList is the embedded block list as data, so tests can walk every
// entry and a new entry is covered without touching them.
func shippedList(tb testing.TB) listFile {
	tb.Helper()
	var lf listFile
	if err := json.Unmarshal(blocklistJSON, &lf); err != nil {
		tb.Fatal(err)
	}
	return lf
}

// frames put a term where its context rule calls it a leak. A new context
// rule without a frame fails TestEveryEntryIsCaught.
var frames = map[string]string{
	"":          "Note: %s here.",
	"manifold":  "The %s shows strain.",
	"manifolds": "The %s show strain.",
	"utterance": "%s, the plan holds.",
	"final":     "It is time to %s.",
	"amount":    "The damping is %s.",
}

func frame(tb testing.TB, e entryFile, term string) string {
	tb.Helper()
	fr, ok := frames[e.Context]
	if !ok {
		tb.Fatalf("no test frame for context %q (entry %s)", e.Context, e.ID)
	}
	return fmt.Sprintf(fr, term)
}

func hitIDs(hits []Hit) []string {
	var ids []string
	for _, h := range hits {
		ids = append(ids, h.Term)
	}
	return ids
}

func caught(r Result, id string) bool {
	for _, h := range r.Hits {
		if h.Term == id && h.Action != Pass {
			return r.Action != Pass
		}
	}
	return false
}

func TestVersion(t *testing.T) {
	f := newFilter(t)
	if !regexp.MustCompile(`^1\.1\.0\+[0-9a-f]{12}$`).MatchString(f.Version()) {
		t.Fatalf("version %q, want the list's version and a content digest", f.Version())
	}
	edited := strings.Replace(string(blocklistJSON), `"reason": "Crew personality layer. A radio question`, `"reason": "Crew personality layer. A CB question`, 1)
	g, err := load([]byte(edited))
	if err != nil {
		t.Fatal(err)
	}
	if g.Version() == f.Version() || !strings.HasPrefix(g.Version(), "1.1.0+") {
		t.Fatalf("an edited list keeps the version %q", g.Version())
	}
}

func TestActionString(t *testing.T) {
	for a, want := range map[Action]string{Pass: "PASS", Replace: "REPLACE", Quarantine: "QUARANTINE", 7: "Action(7)"} {
		if a.String() != want {
			t.Errorf("%d.String() = %q, want %q", a, a.String(), want)
		}
	}
	b, err := json.Marshal(Hit{Term: "cat3.tmm", Category: CategoryTerm, Action: Replace})
	if err != nil || string(b) != `{"term":"cat3.tmm","category":"internal_term","action":"REPLACE"}` {
		t.Fatalf("hit as JSON: %s %v", b, err)
	}
}

// VC-1 (GAP-F): one payload with exactly one instance of every entry of
// the block list; every one is caught, once, and nothing else is.
func TestBlockListCoverage(t *testing.T) {
	f := newFilter(t)
	lf := shippedList(t)
	var parts, want []string
	for _, e := range lf.Entries {
		parts = append(parts, frame(t, e, e.Terms[0]))
		want = append(want, e.ID)
	}
	r := f.Text(strings.Join(parts, " "))
	if r.Action != Quarantine || r.Text != "" {
		t.Fatalf("the coverage payload is %s with text %q, want QUARANTINE and no text", r.Action, r.Text)
	}
	got := hitIDs(r.Hits)
	if !slices.Equal(got, want) {
		for _, id := range want {
			if !slices.Contains(got, id) {
				t.Errorf("entry %s not caught", id)
			}
		}
		t.Fatalf("hits %v, want exactly one per entry in list order", got)
	}
}

// specBlockList is every string the spec's BLOCK_LIST tables enumerate,
// in its four categories, as the spec writes them.
var specBlockList = []string{
	"Φ", "Ψ", "Φζ", "Ψχ", "ΔΓ", "ΩQ", "ΛC", "⊕", "⊜", "⚒", "⚡", "⊡", "⊖", "☠", "⊘", "↗", "Σ.▶", "Σ.▷", "Σ.◇", "Σ.⟲", "◌", "ρ.M", "ρ.T", "Ξ",
	"AION", "ASTRA", "NOUS", "C.L.O.D.", "CLOD", "GAMMA", "MNEMOS", "MANTIS", "ANVIL", "ORPHEUS", "LOGOS", "MUSASHI", "GLOSS", "CHROMA", "CGNT-1",
	"TMM", "coherence score", "coherence threshold", "manifold", "CSDM", "Chronogeomic", "Chronogeome", "LX", "LATTICE", "S.O.S. v2", "THE RING",
	"E8", "Φ = 0.042", "0.042", "97.4%", "Ω = 97.4%", "sinai billiard", "TRNG", "kill box", "yield mandate", "agency walls", "brain forge",
	"brain factory", "oracle_toll", "simons_actuator", "summon_aether", "AETHER_SOUL",
	"10-4", "Copy that", "Hammer down", "Breaker breaker", "Over and out", "Negatory", "Keep the shiny side up", "Good buddy", "Smokey",
	"Got your ears on",
}

// GAP-K: the diff between the spec's enumeration and the shipped list. The
// canonical symbol file (LATTICE.md) is not part of this product; the
// spec's tables are what it has, and each of their strings, as the spec
// writes it, is caught by the shipped list.
func TestTheSpecsBlockListIsShipped(t *testing.T) {
	f := newFilter(t)
	for _, term := range specBlockList {
		if r := f.Text(term + "."); r.Action == Pass {
			t.Errorf("the spec's %q passes the shipped list", term)
		}
	}
}

// VC-1, every term of every entry, each in its own text.
func TestEveryTermIsCaught(t *testing.T) {
	f := newFilter(t)
	for _, e := range shippedList(t).Entries {
		for _, term := range e.Terms {
			text := frame(t, e, term)
			if r := f.Text(text); !caught(r, e.ID) {
				t.Errorf("%s: %q gave %s %v, want a hit of %s", e.ID, text, r.Action, r.Hits, e.ID)
			}
		}
	}
}

// Disguises generated from the list itself, so a new entry is covered too:
// zero-width and format characters between every character, full-width
// forms, mixed case, look-alike spaces, and all of them at once.
var disguises = map[string]func(string) string{
	"zero-width": zeroWidth,
	"full-width": fullWidth,
	"mixed-case": mixedCase,
	"odd-spaces": oddSpaces,
	"all":        func(s string) string { return zeroWidth(fullWidth(oddSpaces(mixedCase(s)))) },
}

func zeroWidth(s string) string {
	marks := []string{"\u200b", "\u200d", "\ufeff", "\u00ad", "\u2060", "\u200c"}
	var b strings.Builder
	i := 0
	for _, r := range s {
		if i > 0 {
			b.WriteString(marks[i%len(marks)])
		}
		b.WriteRune(r)
		i++
	}
	return b.String()
}

func fullWidth(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == ' ':
			return 0x3000
		case 0x21 <= r && r <= 0x7e:
			return r + 0xfee0
		}
		return r
	}, s)
}

func mixedCase(s string) string {
	var b strings.Builder
	up := true
	for _, r := range s {
		if unicode.IsLetter(r) {
			if up {
				r = unicode.ToUpper(r)
			} else {
				r = unicode.ToLower(r)
			}
			up = !up
		}
		b.WriteRune(r)
	}
	return b.String()
}

func oddSpaces(s string) string {
	spaces := []rune{0xa0, 0x2009, 0x202f, 0x2007}
	i := 0
	return strings.Map(func(r rune) rune {
		if r == ' ' {
			i++
			return spaces[i%len(spaces)]
		}
		return r
	}, s)
}

func TestDisguisesAreCaught(t *testing.T) {
	f := newFilter(t)
	for _, e := range shippedList(t).Entries {
		for _, term := range e.Terms {
			for name, disguise := range disguises {
				text := frame(t, e, disguise(term))
				if r := f.Text(text); !caught(r, e.ID) {
					t.Errorf("%s %s: %q gave %s %v", e.ID, name, text, r.Action, hitIDs(r.Hits))
				}
			}
		}
	}
}

func TestNamedDodges(t *testing.T) {
	f := newFilter(t)
	for _, tc := range []struct{ text, id string }{
		{"A\u200bION reviewed it.", "cat2.aion"},
		{"ＡＩＯＮ reviewed it.", "cat2.aion"},
		{"ⒶⒾⓄⓃ reviewed it.", "cat2.aion"},
		{"AIÓN reviewed it.", "cat2.aion"},
		{"AIO\u0301N reviewed it.", "cat2.aion"},
		{"АІОN reviewed it.", "cat2.aion"}, // Cyrillic А, І, О
		{"Our coherence\u00a0score is high.", "cat3.coherence-score"},
		{"Our coherence\u2009\u2009score is high.", "cat3.coherence-score"},
		{"Our coherence\nscore is high.", "cat3.coherence-score"},
		{"Our coherence-score is high.", "cat3.coherence-score"},
		{"Our coherence_score is high.", "cat3.coherence-score"},
		{"Our coherencescore is high.", "cat3.coherence-score"},
		{"The oracle toll runs it.", "cat3.oracle-toll"},
		{"The oracle-toll runs it.", "cat3.oracle-toll"},
		{"The OracleToll runs it.", "cat3.oracle-toll"},
		{"The killbox model says no.", "cat3.kill-box"},
		{"The kill boxes say no.", "cat3.kill-box"},
		{"Φ=0.042 here.", "cat3.phi-damping"},
		{"Ω=97.4% here.", "cat3.omega-threshold"},
		{"The bar is 97.4 % here.", "cat3.threshold-value"},
		{"Σ. ▶ running.", "cat1.exec-run"},
		{"Pushed ⚡️ today.", "cat1.pushed"},
		{"Signed Φζ.⊤.", "cat1.phi-zeta"},
		{"A Chronogeometer wrote it.", "cat3.chronogeom-family"},
		{"Dr Logos says yes.", "cat2.dr-logos"},
		{"Dr.Logos says yes.", "cat2.dr-logos"},
		{"TMM\u200bshows demand.", "cat3.tmm"},
		{"(TMM) shows demand.", "cat3.tmm"},
		{"The T.M.M. shows demand.", "cat3.tmm"},
		{"Ask GLOSS\u00ad.", "cat2.gloss"},
		{"We use CGNT-2 now.", "cat2.cgnt"},
		{"Authority: α.13", "cat1.greek-letter"},
		{"Latency is 5 µs.", "cat1.greek-letter"},
		{"Resistance of 5 Ω.", "cat1.greek-letter"}, // the ohm sign is Ω
		{"The 𝚽 kernel.", "cat1.phi"},
		{"Got your ears on?", "cat4.ears-on"},
		{"Breaker, breaker", ""},
	} {
		r := f.Text(tc.text)
		if tc.id == "" {
			if r.Action != Pass {
				t.Errorf("%q: %s %v, want PASS", tc.text, r.Action, hitIDs(r.Hits))
			}
			continue
		}
		if !caught(r, tc.id) {
			t.Errorf("%q: %s %v, want a hit of %s", tc.text, r.Action, hitIDs(r.Hits), tc.id)
		}
	}
}

// GAP-C: no Greek letter passes, in any form that reads as one.
func TestGreekLettersAlwaysBlocked(t *testing.T) {
	f := newFilter(t)
	n := 0
	for _, rng := range unicode.Greek.R16 {
		for r := rune(rng.Lo); r <= rune(rng.Hi); r += rune(rng.Stride) {
			if !unicode.IsLetter(r) {
				continue
			}
			n++
			text := "x " + string(r) + " x"
			if res := f.Text(text); res.Action != Quarantine {
				t.Errorf("%U %c: %s", r, r, res.Action)
			}
		}
	}
	for _, r := range []rune{0xb5, 0x2126, 0x1d6f7, 0x1d6c2, 0x3d0, 0x3f5, 0x1f00, 0x1d5d} {
		if res := f.Text("x " + string(r) + " x"); res.Action != Quarantine {
			t.Errorf("%U %c (a form of a Greek letter): %s", r, r, res.Action)
		}
	}
	if n < 200 {
		t.Fatalf("only %d Greek letters tried", n)
	}
}

// VC-2: clean verdicts of every tier pass byte for byte, as the same
// strings, map and strategy.
func TestCleanVerdictsPassUnchanged(t *testing.T) {
	f := newFilter(t)
	tiers := map[oracle.Tier]int{}
	for _, vc := range cleanVerdicts {
		if err := vc.a.Validate(vc.tier); err != nil {
			t.Fatalf("%s is not a valid %s verdict: %v", vc.name, vc.tier, err)
		}
		tiers[vc.tier]++
		out, rep := f.Analysis(vc.a)
		if rep.Action != Pass || len(rep.Hits) != 0 || rep.Version != f.Version() {
			t.Errorf("%s: %s %+v", vc.name, rep.Action, rep.Hits)
			continue
		}
		if !reflect.DeepEqual(out, vc.a) || unsafe.StringData(out.Summary) != unsafe.StringData(vc.a.Summary) ||
			reflect.ValueOf(out.Breakdown).UnsafePointer() != reflect.ValueOf(vc.a.Breakdown).UnsafePointer() || out.Strategy != vc.a.Strategy {
			t.Errorf("%s: the verdict was copied or changed", vc.name)
		}
		for _, text := range texts(vc.a) {
			if r := f.Text(text); r.Action != Pass || unsafe.StringData(r.Text) != unsafe.StringData(text) || len(r.Hits) != 0 {
				t.Errorf("%s: %q gave %s %q %v", vc.name, text, r.Action, r.Text, hitIDs(r.Hits))
			}
		}
	}
	if len(cleanVerdicts) < 20 || tiers[oracle.TierQuick] < 5 || tiers[oracle.TierFull] < 5 || tiers[oracle.TierStrategy] < 5 {
		t.Fatalf("VC-2 wants 20+ verdicts across the three tiers, have %v", tiers)
	}
}

func texts(a oracle.Analysis) []string {
	out := []string{a.Summary}
	for _, d := range oracle.Dimensions {
		if n, ok := a.Breakdown[d]; ok {
			out = append(out, n.Analysis)
		}
	}
	if a.Strategy != nil {
		out = append(out, a.Strategy.NextStep, a.Strategy.Alternative)
		out = append(out, a.Strategy.Tests...)
	}
	return out
}

// VC-3: one sentence per REPLACE entry comes out as correct English with no
// blocked term. The expected text is the reviewed English.
var substitutions = map[string]struct{ in, want string }{
	"cat2.aion":                 {"AION reviewed the pricing and found it sound.", "Our analysis team reviewed the pricing and found it sound."},
	"cat2.astra":                {"According to ASTRA, the market is growing.", "According to our analysis team, the market is growing."},
	"cat2.nous":                 {"NOUS flagged the lease as the main risk.", "Our analysis team flagged the lease as the main risk."},
	"cat2.clod-dotted":          {"The forecast was built by C.L.O.D. and checked twice.", "The forecast was built by our system and checked twice."},
	"cat2.clod":                 {"CLOD ran the numbers twice.", "Our system ran the numbers twice."},
	"cat2.gamma":                {"GAMMA recommends a pilot before a lease.", "Our analysis team recommends a pilot before a lease."},
	"cat2.mnemos":               {"The MNEMOS records show similar launches.", "Our knowledge base records show similar launches."},
	"cat2.mantis":               {"Every figure passed MANTIS before this verdict.", "Every figure passed our verification layer before this verdict."},
	"cat2.cgnt-1":               {"This verdict was produced on CGNT-1 in minutes.", "This verdict was produced on our platform in minutes."},
	"cat3.tmm":                  {"The TMM shows steady demand.", "Our analysis shows steady demand."},
	"cat3.coherence-score":      {"Your coherence score is high for a first venture.", "Your assessment is high for a first venture."},
	"cat3.coherence-scores":     {"The coherence scores of both options are close.", "Our assessments of both options are close."},
	"cat3.coherence-threshold":  {"The plan clears the coherence threshold comfortably.", "The plan clears our confidence threshold comfortably."},
	"cat3.coherence-thresholds": {"Both ideas pass the coherence thresholds.", "Both ideas pass our confidence thresholds."},
	"cat3.manifold":             {"The manifold shows strain under rapid growth.", "The system shows strain under rapid growth."},
	"cat3.manifolds":            {"The manifolds of both markets overlap.", "The systems of both markets overlap."},
	"cat3.damping-constant":     {"The damping is set at 0.042 for this market.", "The damping is set at our stability constant for this market."},
}

var brokenEnglish = regexp.MustCompile(`(?i)\b(the|a|an|our|your|this|these|those|its|their) (our|the)\b|\b(\w+) (\w+)\b`)

// readsBroken finds "the our", "a our" and doubled words.
func readsBroken(s string) string {
	for _, m := range brokenEnglish.FindAllStringSubmatch(s, -1) {
		if m[1] != "" || strings.EqualFold(m[3], m[4]) {
			return m[0]
		}
	}
	words := strings.Fields(s)
	for i := 1; i < len(words); i++ {
		if strings.EqualFold(strings.Trim(words[i-1], ",.;:"), strings.Trim(words[i], ",.;:")) {
			return words[i-1] + " " + words[i]
		}
	}
	if r, _ := utf8.DecodeRuneInString(s); unicode.IsLower(r) {
		return "lowercase start"
	}
	return ""
}

func TestSubstitutionReadsCorrectly(t *testing.T) {
	f := newFilter(t)
	for _, e := range shippedList(t).Entries {
		if e.Action != "REPLACE" {
			continue
		}
		tc, ok := substitutions[e.ID]
		if !ok {
			t.Errorf("REPLACE entry %s has no VC-3 sentence", e.ID)
			continue
		}
		r := f.Text(tc.in)
		if r.Action != Replace || r.Text != tc.want {
			t.Errorf("%s: %q gave %s %q, want %q", e.ID, tc.in, r.Action, r.Text, tc.want)
		}
		if len(r.Hits) != 1 || r.Hits[0].Term != e.ID || r.Hits[0].Action != Replace {
			t.Errorf("%s: hits %+v", e.ID, r.Hits)
		}
		if bad := readsBroken(r.Text); bad != "" {
			t.Errorf("%s: %q reads %q", e.ID, r.Text, bad)
		}
		if again := f.Text(r.Text); again.Action != Pass {
			t.Errorf("%s: the substituted %q still has %v", e.ID, r.Text, hitIDs(again.Hits))
		}
	}
}

// Grammar around substitutes: determiners, possessives, adjectives,
// articles, capitals, doubled words, lists, abbreviations; and where the
// English cannot be kept, a quarantine instead of broken text.
func TestSubstitutionGrammar(t *testing.T) {
	f := newFilter(t)
	long := " " + strings.Repeat("The plan is sound and the market is there. ", 20)
	for _, tc := range []struct {
		in, want string
		act      Action
	}{
		{"the TMM shows", "Our analysis shows", Replace},
		{"We trust the TMM.", "We trust our analysis.", Replace},
		{"This TMM is fresh.", "Our analysis is fresh.", Replace},
		{"A TMM of your idea is attached.", "Our analysis of your idea is attached.", Replace},
		{"Your TMM score is 0.8.", "Your analysis score is 0.8.", Replace},
		{"The idea’s TMM is strong.", "The idea’s analysis is strong.", Replace},
		{"The current TMM shows demand.", "The current analysis shows demand.", Replace},
		{"the AION team reviewed it", "Our analysis team reviewed it", Replace},
		{"We asked the ASTRA team.", "We asked our analysis team.", Replace},
		{"Our TMM analysis is done.", "Our analysis is done.", Replace},
		{"Results. TMM shows demand.", "Results. Our analysis shows demand.", Replace},
		{"- TMM shows demand", "- Our analysis shows demand", Replace},
		{"e.g. TMM shows demand", "e.g. our analysis shows demand", Replace},
		{"He is a good buddy of ours.", "", Quarantine},
		{"That's a negatory.", "", Quarantine},
		{"Okay, copy that.", "", Quarantine},
		{"The forecast was built by C.L.O.D.", "The forecast was built by our system.", Replace},
		{"Ask C.L.O.D., then decide.", "Ask our system, then decide.", Replace},
		{"We used TMM. the rest is noise.", "We used our analysis. the rest is noise.", Replace},
		{"The manifold's edge is near.", "The system's edge is near.", Replace},
		{"Its manifold is stable.", "Its system is stable.", Replace},
		{"The whole manifold is stable.", "The whole system is stable.", Replace},
		{"AION, ASTRA and NOUS agree." + long, "Our analysis team agree." + long, Replace},
		{"AION and MNEMOS agree." + long, "Our analysis team and our knowledge base agree." + long, Replace},
		{"Strong TMM signals are rare.", "", Quarantine},
		{"The TMM, TMM and TMM and TMM.", "", Quarantine},
	} {
		r := f.Text(tc.in)
		if r.Action != tc.act || r.Text != tc.want {
			t.Errorf("%q gave %s %q (%s), want %s %q", tc.in, r.Action, r.Text, r.Reason, tc.act, tc.want)
		}
	}
}

// GAP-I: the context rules, both ways.
func TestContextRules(t *testing.T) {
	f := newFilter(t)
	for _, tc := range []struct {
		text string
		act  Action
		id   string
	}{
		// manifold
		{"The options are manifold.", Pass, ""},
		{"Its uses are truly manifold, from retail to logistics.", Pass, ""},
		{"The plan has manifold benefits.", Pass, ""},
		{"The manifold ways in which buyers decide matter.", Pass, ""},
		{"Replace the exhaust manifold first.", Pass, ""},
		{"We sell intake manifolds.", Pass, ""},
		{"The MANIFOLD shows strain.", Replace, "cat3.manifold"},
		{"The manifold shows strain.", Replace, "cat3.manifold"},
		{"Check the manifold.", Replace, "cat3.manifold"},
		{"Bet on Manifold Markets.", Quarantine, "cat3.manifold"},
		{"The manifold curvature is high.", Quarantine, "cat3.manifold"},
		{"Growth bends manifold.", Quarantine, "cat3.manifold"},
		{"Several manifolds collapse.", Quarantine, "cat3.manifolds"},
		// common words: lowercase passes, capitals are the callsign
		{"A high-gloss finish sells.", Pass, ""},
		{"Brand logos on every box.", Pass, ""},
		{"Shielding against gamma rays.", Pass, ""},
		{"Use an anvil and a forge.", Pass, ""},
		{"A praying mantis logo.", Pass, ""},
		{"A smokey flavour.", Pass, ""},
		{"She has the business nous.", Pass, ""},
		{"A cedar lattice fence.", Pass, ""},
		{"Drive the ring road.", Pass, ""},
		{"A clod of earth.", Pass, ""},
		{"500 lx of light.", Pass, ""},
		{"An orphic tone.", Pass, ""},
		{"The aether of old physics.", Pass, ""},
		{"A chroma key studio.", Pass, ""},
		{"GLOSS reviewed this.", Quarantine, "cat2.gloss"},
		{"Ask Gloss about it.", Quarantine, "cat2.gloss"},
		{"Gamma recommends a pilot.", Quarantine, "cat2.gamma"},
		{"GAMMA recommends a pilot.", Replace, "cat2.gamma"},
		{"Ask gAmMa.", Quarantine, "cat2.gamma"},
		{"Competitors like Chroma exist.", Quarantine, "cat2.chroma"},
		{"THE RING is coming.", Quarantine, "cat3.the-ring"},
		{"The Ring is coming.", Quarantine, "cat3.the-ring"},
		{"Super Bowl LX ads are costly.", Quarantine, "cat3.lx"},
		// names: capitals are replaced, other spellings go to a person
		{"ASTRA agrees.", Replace, "cat2.astra"},
		{"Astra agrees.", Quarantine, "cat2.astra"},
		{"the astra agrees.", Quarantine, "cat2.astra"},
		{"Aion agrees.", Replace, "cat2.aion"},
		// copy that, hammer down
		{"Rivals can copy that feature.", Pass, ""},
		{"Rivals will copy that.", Pass, ""},
		{"Copy that approach from the leader.", Pass, ""},
		{"Copy that.", Quarantine, "cat4.copy-that"},
		{"Sure, copy that!", Quarantine, "cat4.copy-that"},
		{"Hammer down the price with suppliers.", Pass, ""},
		{"It is time to hammer down!", Quarantine, "cat4.hammer-down"},
		// numbers
		{"It costs $0.042 per call.", Pass, ""},
		{"It costs USD 0.042 per call.", Pass, ""},
		{"A fee of 0.042% applies.", Pass, ""},
		{"A fee of 0.042 percent applies.", Pass, ""},
		{"Values near 10.042 and 0.0425 and 20.042 are fine.", Pass, ""},
		{"0.4, 0.42, 97%, 97.5% and 97.40% are fine.", Pass, ""},
		{"A 10-minute drive in a 4x4, 10-40 units.", Pass, ""},
		{"Set at 0.042 mm.", Quarantine, "cat3.damping-constant"},
		{"A band of 0.042–0.05 applies.", Quarantine, "cat3.damping-constant"},
		{"Damping is 0.042.", Replace, "cat3.damping-constant"},
		{"Retention is 97.4% this year.", Quarantine, "cat3.threshold-value"},
		{"The vote was 10-4.", Quarantine, "cat4.ten-four"},
		{"The 1e8 budget.", Pass, ""},
		{"We have 104 customers and 10 4-person teams.", Quarantine, "cat4.ten-four"},
		{"We have 104 customers.", Pass, ""},
		{"E8 applies.", Quarantine, "cat3.e8"},
		// partial words are not terms
		{"Astral, aions, tmms, nouses, lattices and glossy: fine.", Pass, ""},
		{"Coherence matters; coherent plans win; stability helps.", Pass, ""},
		{"An SOS call.", Pass, ""},
		{"A brain factor and a yield mandated by law.", Pass, ""},
	} {
		r := f.Text(tc.text)
		if r.Action != tc.act {
			t.Errorf("%q: %s %v, want %s", tc.text, r.Action, r.Hits, tc.act)
			continue
		}
		if tc.id != "" && !slices.Contains(hitIDs(r.Hits), tc.id) {
			t.Errorf("%q: hits %v, want %s", tc.text, hitIDs(r.Hits), tc.id)
		}
	}
}

// Invariant 1 has no exceptions: a verdict that repeats a listed term the
// customer's own query holds is filtered as any other (the prompt asks the
// model to refer to such a word indirectly). Only the email's quotation of
// the submission itself is the customer's (TestMailLeavesTheSubmissionAlone).
func TestNoExceptionForTheQuerysTerms(t *testing.T) {
	f := newFilter(t)
	for _, tc := range []struct {
		text string // what the model wrote, about a query that holds the term
		act  Action
		out  string
	}{
		{"Your coherence score idea works.", Replace, "Your assessment idea works."},
		{"The Φ factor matters.", Quarantine, ""},
		{"TMM is your product.", Replace, "Our analysis is your product."},
		{"Lattice fencing sells well.", Quarantine, ""},
		{"Chroma is a strong competitor.", Quarantine, ""},
		{"It costs 0.042 mm.", Quarantine, ""},
		{"A I O N, as you asked.", Quarantine, ""},
		{"About \u202eNOIA\u202c: yes.", Quarantine, ""},
		{"Ω = 97.4% is claimed.", Quarantine, ""},
	} {
		r := f.Text(tc.text)
		if r.Action != tc.act || r.Text != tc.out {
			t.Errorf("%q: %s %q %+v, want %s %q", tc.text, r.Action, r.Text, r.Hits, tc.act, tc.out)
		}
		for _, h := range r.Hits {
			if h.Action == Pass {
				t.Errorf("%q: a hit passes: %+v", tc.text, h)
			}
		}
	}
}

// GAP-B: the density threshold over the whole payload.
func TestDensityThreshold(t *testing.T) {
	f := newFilter(t)
	filler := func(words int) string { return strings.Repeat("word ", words) }
	for _, tc := range []struct {
		name   string
		text   string
		act    Action
		reason Reason
	}{
		{"one hit in a short text", "The TMM shows demand.", Replace, ""},
		{"two hits in 50 words", "The TMM shows demand. AION agrees. " + filler(44), Quarantine, ReasonDensity},
		{"two hits in 100 words", "The TMM shows demand. AION agrees. " + filler(94), Replace, ""},
		{"two hits in 99 words", "The TMM shows demand. AION agrees. " + filler(93), Quarantine, ReasonDensity},
		{"three hits in 150 words", "The TMM shows demand. AION agrees. NOUS too. " + filler(142), Replace, ""},
		{"four hits in 1000 words", "The TMM shows demand. AION agrees. NOUS too. GAMMA too. " + filler(990), Quarantine, ReasonDensity},
		{"one quarantine term", "GLOSS. " + filler(500), Quarantine, ReasonTerm},
	} {
		r := f.Text(tc.text)
		if r.Action != tc.act || r.Reason != tc.reason {
			t.Errorf("%s: %s (%s), want %s (%s)", tc.name, r.Action, r.Reason, tc.act, tc.reason)
		}
	}
	// Across the fields of one verdict: one term in each of four fields.
	a := cleanVerdicts[8].a // full
	a.Summary = "The TMM shows demand. " + a.Summary
	a.Breakdown = mapsClone(a.Breakdown)
	for _, d := range oracle.Dimensions[:3] {
		n := a.Breakdown[d]
		n.Analysis = "AION agrees. " + n.Analysis
		a.Breakdown[d] = n
	}
	if out, rep := f.Analysis(a); rep.Action != Quarantine || rep.Reason != ReasonDensity || !reflect.DeepEqual(out, oracle.Analysis{}) {
		t.Errorf("four terms across a verdict: %s (%s)", rep.Action, rep.Reason)
	}
	// Reviewed by the operator, the same verdict is cleaned whole.
	out, rep := f.Reviewed(a)
	if rep.Action != Replace || !f.analysisClean(out) || out.Verdict != a.Verdict {
		t.Errorf("the reviewed verdict: %s (%s), clean %t", rep.Action, rep.Reason, f.analysisClean(out))
	}
}

// TestReviewLiftsOnlyTheDensity: a person's approval lifts the
// contamination threshold, never a quarantine-class term.
func TestReviewLiftsOnlyTheDensity(t *testing.T) {
	f := newFilter(t)
	a := cleanVerdicts[0].a
	a.Summary = "GLOSS. " + a.Summary
	if _, rep := f.Analysis(a); rep.Action != Quarantine || rep.Reason != ReasonTerm {
		t.Fatalf("a quarantine-class term: %s (%s)", rep.Action, rep.Reason)
	}
	if out, rep := f.Reviewed(a); rep.Action != Quarantine || rep.Reason != ReasonTerm || !reflect.DeepEqual(out, oracle.Analysis{}) {
		t.Fatalf("reviewed, a quarantine-class term: %s (%s)", rep.Action, rep.Reason)
	}
}

func mapsClone(m map[string]oracle.DimensionNote) map[string]oracle.DimensionNote {
	out := make(map[string]oracle.DimensionNote, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func TestAnalysis(t *testing.T) {
	f := newFilter(t)
	in := verdictNamed(t, "strategy/senior-meal-kits").a
	if n := wordsIn(in); n < 160 {
		t.Fatalf("the verdict has %d words: too few for three substitutions (MaxDensity)", n)
	}
	orig := deepCopy(in)
	a := deepCopy(in)
	a.Summary = "The TMM says no. " + a.Summary
	n := a.Breakdown["Change Rate"]
	n.Analysis = "According to AION, " + n.Analysis
	a.Breakdown["Change Rate"] = n
	a.Strategy.Tests[1] = "Ask GAMMA for help: " + a.Strategy.Tests[1]
	before := deepCopy(a)
	out, rep := f.Analysis(a)
	if rep.Action != Replace || rep.Version != f.Version() {
		t.Fatalf("%s (%s) %+v", rep.Action, rep.Reason, rep.Hits)
	}
	if !reflect.DeepEqual(a, before) {
		t.Fatal("Analysis changed its input")
	}
	want := deepCopy(orig)
	want.Summary = "Our analysis says no. " + orig.Summary
	n = want.Breakdown["Change Rate"]
	n.Analysis = "According to our analysis team, " + orig.Breakdown["Change Rate"].Analysis
	want.Breakdown["Change Rate"] = n
	want.Strategy.Tests[1] = "Ask our analysis team for help: " + orig.Strategy.Tests[1]
	if !reflect.DeepEqual(out, want) {
		t.Fatalf("got %+v\nwant %+v", out, want)
	}
	paths := []string{}
	for _, h := range rep.Hits {
		paths = append(paths, h.Field+"="+h.Term)
	}
	if !slices.Equal(paths, []string{"summary=cat3.tmm", "breakdown.Change Rate.analysis=cat2.aion", "strategy.tests[1]=cat2.gamma"}) {
		t.Fatalf("hits %v", paths)
	}

	// A quarantine-class term anywhere quarantines the whole verdict.
	q := deepCopy(in)
	q.Strategy.Alternative = "Ask about THE RING."
	out, rep = f.Analysis(q)
	if rep.Action != Quarantine || rep.Reason != ReasonTerm || !reflect.DeepEqual(out, oracle.Analysis{}) ||
		!slices.Equal(rep.Terms(), []string{"cat3.the-ring"}) || rep.Hits[0].Field != "strategy.alternative" {
		t.Fatalf("%s %s %+v", rep.Action, rep.Reason, rep.Hits)
	}

	// A breakdown key is model output too, and cannot be edited.
	k := deepCopy(cleanVerdicts[8].a)
	k.Breakdown["TMM"] = oracle.DimensionNote{Verdict: green, Analysis: "Fine."}
	if _, rep = f.Analysis(k); rep.Action != Quarantine || rep.Hits[0].Field != "breakdown.TMM" || rep.Hits[0].Action != Quarantine {
		t.Fatalf("a key hit: %s %+v", rep.Action, rep.Hits)
	}

	// The verdict labels are tokens, not text.
	if _, rep = f.Analysis(oracle.Analysis{Verdict: "GLOSS", Summary: "Fine."}); rep.Action != Pass {
		t.Fatalf("the verdict label was filtered: %s", rep.Action)
	}
}

func verdictNamed(t *testing.T, name string) verdictCase {
	for _, vc := range cleanVerdicts {
		if vc.name == name {
			return vc
		}
	}
	t.Fatalf("no verdict %s", name)
	return verdictCase{}
}

func wordsIn(a oracle.Analysis) int {
	n := 0
	for _, s := range texts(a) {
		n += words(s)
	}
	return n
}

func deepCopy(a oracle.Analysis) oracle.Analysis {
	out := a
	if a.Breakdown != nil {
		out.Breakdown = mapsClone(a.Breakdown)
	}
	if a.Strategy != nil {
		s := *a.Strategy
		s.Tests = slices.Clone(s.Tests)
		out.Strategy = &s
	}
	return out
}

func TestMail(t *testing.T) {
	f := newFilter(t)
	for _, tc := range []struct {
		subject, text, html string
		act                 Action
		field               string
	}{
		{"Your verdict", "Fine.", "<p>Fine &amp; <b>clear</b>&nbsp;&#9679;</p>", Pass, ""},
		{"Your verdict", "Fine.", "<p>AI&#79;N agrees</p>", Quarantine, "html"},
		{"Your verdict", "Fine.", "<p>AI<b></b>ON agrees</p>", Quarantine, "html"},
		{"Your verdict", "Fine.", "<p>T&#x4D;M agrees</p>", Quarantine, "html"},
		{"Your verdict", "Fine.", "<p>TMM</p><p>Next</p>", Quarantine, "html"},
		{"Your verdict", "Fine.", "<p>GL&shy;OSS</p>", Quarantine, "html"},
		{"Your verdict", "Fine.", "<!-- GLOSS draft --><p>Fine.</p>", Quarantine, "html"},
		{"Your verdict", "Fine.", `<img alt="AION" src="x.png">`, Quarantine, "html"},
		{"Your verdict", "Fine.", "<p>high<b>gloss</b> finish &lt;b&gt;</p>", Pass, ""},
		{"Your verdict", "The TMM agrees.", "<p>Fine.</p>", Quarantine, "text"},
		{"AION says GREEN", "Fine.", "<p>Fine.</p>", Quarantine, "subject"},
		{"Your verdict on TMM", "Fine.", "<p>Fine.</p>", Quarantine, "subject"},
		{"Your verdict", "You asked about TMM.", "<p>Fine.</p>", Quarantine, "text"},
	} {
		rep := f.Mail(tc.subject, tc.text, tc.html, Own{})
		if rep.Action != tc.act || rep.Version != f.Version() {
			t.Errorf("%q/%q/%q: %s %+v, want %s", tc.subject, tc.text, tc.html, rep.Action, rep.Hits, tc.act)
			continue
		}
		if tc.field != "" && (len(rep.Hits) == 0 || rep.Hits[0].Field != tc.field || rep.Hits[0].Action != Quarantine) {
			t.Errorf("%q: hits %+v, want one in %s that quarantines", tc.html, rep.Hits, tc.field)
		}
	}
}

// The email shows the customer's submission back to them ("YOUR
// SUBMISSION:"): what it holds is theirs, and gate 2 reads everything
// around it, never across it. Ranges that do not fit the text are ignored,
// so the whole part is read.
func TestMailLeavesTheSubmissionAlone(t *testing.T) {
	f := newFilter(t)
	const q = "Is T&#77;M, or AI<b></b>ON, a good name?"
	text := "YOUR SUBMISSION:\nIs TMM, or A I O N, a good name?\n\nVERDICT: AMBER\n\nThe name is taken.\n"
	html := "<h2>Your submission</h2><p>" + q + "</p><p>The name is taken.</p>"
	tq := [2]int{strings.Index(text, "Is TMM"), strings.Index(text, "?\n\n") + 1}
	hq := [2]int{strings.Index(html, q), strings.Index(html, q) + len(q)}
	for _, tc := range []struct {
		name       string
		text, html string
		own        Own
		act        Action
	}{
		{"the submission alone", text, html, Own{Text: [][2]int{tq}, HTML: [][2]int{hq}}, Pass},
		{"not marked", text, html, Own{}, Quarantine},
		{"only the text marked", text, html, Own{Text: [][2]int{tq}}, Quarantine},
		{"a term outside it", text + "AION agrees.\n", html + "<p>AION agrees.</p>", Own{Text: [][2]int{tq}, HTML: [][2]int{hq}}, Quarantine},
		{"a term joined across its edge", "A I O\n" + text[tq[0]:tq[1]] + "\nN", html, Own{Text: [][2]int{{6, 6 + tq[1] - tq[0]}}, HTML: [][2]int{hq}}, Pass},
		{"out of bounds", text, html, Own{Text: [][2]int{{tq[0], len(text) + 1}}, HTML: [][2]int{hq}}, Quarantine},
		{"out of order", text, html, Own{Text: [][2]int{tq, {0, 3}}, HTML: [][2]int{hq}}, Quarantine},
		{"inside a character", "Φ" + text, html, Own{Text: [][2]int{{1, 2}}, HTML: [][2]int{hq}}, Quarantine},
	} {
		rep := f.Mail("Your verdict", tc.text, tc.html, tc.own)
		if rep.Action != tc.act {
			t.Errorf("%s: %s %+v, want %s", tc.name, rep.Action, rep.Hits, tc.act)
		}
	}
}

// GAP-E: the shipped substitutes are clean, and a list whose substitute
// holds a blocked term is refused.
func TestShippedSubstitutesAreConsistent(t *testing.T) {
	f := newFilter(t)
	n := 0
	for _, e := range f.entries {
		if e.action != Replace {
			continue
		}
		n++
		for _, s := range []string{e.sub, e.bare} {
			if ids := f.termsIn(s); len(ids) > 0 {
				t.Errorf("%s: substitute %q holds %v", e.id, s, ids)
			}
			if r := f.Text(s); r.Action != Pass {
				t.Errorf("%s: substitute %q is %s", e.id, s, r.Action)
			}
		}
	}
	if n < 17 {
		t.Fatalf("only %d REPLACE entries", n)
	}
}

// GAP-D: the spec's SUBSTITUTION_MAP is followed where it speaks, and an
// entry it does not map quarantines. The only substitutes it does not
// write itself are the plurals of its own entries ("coherence scores" take
// "our assessments"), the same entry inflected.
func TestEntriesTheSpecDoesNotMapQuarantine(t *testing.T) {
	specMap := map[string]string{
		"cat3.tmm": "our analysis", "cat3.coherence-score": "our assessment",
		"cat3.coherence-threshold": "our confidence threshold", "cat3.manifold": "the system",
		"cat3.damping-constant": "our stability constant",
		"cat2.aion":             "our analysis team", "cat2.astra": "our analysis team", "cat2.nous": "our analysis team",
		"cat2.gamma": "our analysis team", "cat2.mnemos": "our knowledge base", "cat2.mantis": "our verification layer",
		"cat2.clod-dotted": "our system", "cat2.clod": "our system", "cat2.cgnt-1": "our platform",
	}
	plurals := map[string]string{
		"cat3.coherence-scores": "our assessments", "cat3.coherence-thresholds": "our confidence thresholds",
		"cat3.manifolds": "the systems",
	}
	for _, e := range shippedList(t).Entries {
		want, mapped := specMap[e.ID]
		if plural, ok := plurals[e.ID]; ok {
			want, mapped = plural, true
		}
		switch {
		case mapped && (e.Action != "REPLACE" || e.Substitute != want):
			t.Errorf("%s: %s %q, want the spec's REPLACE %q", e.ID, e.Action, e.Substitute, want)
		case !mapped && e.Action != "QUARANTINE":
			t.Errorf("%s: %s %q, but the spec's map does not name it: QUARANTINE (GAP-D)", e.ID, e.Action, e.Substitute)
		case mapped && plurals[e.ID] == "" && e.Basis != "spec":
			t.Errorf("%s: basis %q, want spec", e.ID, e.Basis)
		}
	}
}

// editList changes the shipped list through its JSON.
func editList(t *testing.T, edit func(lf map[string]any, entries []any)) []byte {
	t.Helper()
	var lf map[string]any
	if err := json.Unmarshal(blocklistJSON, &lf); err != nil {
		t.Fatal(err)
	}
	edit(lf, lf["entries"].([]any))
	b, err := json.Marshal(lf)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func entryByID(entries []any, id string) map[string]any {
	for _, e := range entries {
		if m := e.(map[string]any); m["id"] == id {
			return m
		}
	}
	panic("no entry " + id)
}

func TestInconsistentListIsRefused(t *testing.T) {
	for _, sub := range []string{"our tmm derived assessment", "the system of gloss", "our aion team", "our lattice view"} {
		data := editList(t, func(_ map[string]any, entries []any) {
			entryByID(entries, "cat3.manifold")["substitute"] = sub
		})
		f, err := load(data)
		if !errors.Is(err, ErrInconsistent) || f != nil {
			t.Errorf("substitute %q: %v, want ErrInconsistent", sub, err)
		}
	}
}

func TestInvalidListIsRefused(t *testing.T) {
	for name, edit := range map[string]func(map[string]any, []any){
		"no version":           func(lf map[string]any, _ []any) { lf["version"] = "" },
		"no entries":           func(lf map[string]any, _ []any) { lf["entries"] = []any{} },
		"unknown field":        func(lf map[string]any, _ []any) { lf["extra"] = 1 },
		"repeated id":          func(_ map[string]any, es []any) { entryByID(es, "cat3.csdm")["id"] = "cat3.tmm" },
		"id of another cat":    func(_ map[string]any, es []any) { entryByID(es, "cat3.csdm")["id"] = "cat2.csdm" },
		"repeated term":        func(_ map[string]any, es []any) { entryByID(es, "cat3.csdm")["terms"] = []any{"CSDM", "TMM"} },
		"term that reads same": func(_ map[string]any, es []any) { entryByID(es, "cat3.csdm")["terms"] = []any{"T M-M"} },
		"empty term":           func(_ map[string]any, es []any) { entryByID(es, "cat3.csdm")["terms"] = []any{"\u200b"} },
		"no terms":             func(_ map[string]any, es []any) { entryByID(es, "cat3.csdm")["terms"] = []any{} },
		"unknown category":     func(_ map[string]any, es []any) { entryByID(es, "cat3.csdm")["category"] = "misc" },
		"unknown match":        func(_ map[string]any, es []any) { entryByID(es, "cat3.csdm")["match"] = "fuzzy" },
		"unknown case":         func(_ map[string]any, es []any) { entryByID(es, "cat3.csdm")["case"] = "upper" },
		"unknown context":      func(_ map[string]any, es []any) { entryByID(es, "cat3.csdm")["context"] = "nearby" },
		"unknown action":       func(_ map[string]any, es []any) { entryByID(es, "cat3.csdm")["action"] = "DROP" },
		"replace without sub":  func(_ map[string]any, es []any) { entryByID(es, "cat3.csdm")["action"] = "REPLACE" },
		"quarantine with sub":  func(_ map[string]any, es []any) { entryByID(es, "cat3.csdm")["substitute"] = "our model" },
		"capital substitute":   func(_ map[string]any, es []any) { entryByID(es, "cat3.tmm")["substitute"] = "Our analysis" },
		"no reason":            func(_ map[string]any, es []any) { entryByID(es, "cat3.csdm")["reason"] = " " },
		"unknown basis":        func(_ map[string]any, es []any) { entryByID(es, "cat3.csdm")["basis"] = "hunch" },
		"lowercase common":     func(_ map[string]any, es []any) { entryByID(es, "cat2.gloss")["terms"] = []any{"gloss"} },
		"too long":             func(_ map[string]any, es []any) { entryByID(es, "cat3.csdm")["terms"] = []any{strings.Repeat("x", 65)} },
	} {
		data := editList(t, edit)
		if f, err := load(data); !errors.Is(err, ErrInvalidList) || f != nil {
			t.Errorf("%s: %v, want ErrInvalidList", name, err)
		}
	}
	if _, err := load(append(slices.Clone(blocklistJSON), "{}"...)); !errors.Is(err, ErrInvalidList) {
		t.Errorf("trailing data: %v", err)
	}
}

// Clean text, the common case, allocates nothing: plain ASCII, text with
// curly quotes and dashes, a whole verdict, and a clean email.
func TestNoAllocationOnCleanText(t *testing.T) {
	f := newFilter(t)
	ascii := cleanVerdicts[9].a
	curly := cleanVerdicts[7].a.Summary // curly quotes and dashes
	strategy := cleanVerdicts[len(cleanVerdicts)-2].a
	html := "<p>Fine &amp; <b>clear</b>&nbsp;&#9679; and the options are manifold.</p>"
	for name, fn := range map[string]func(){
		"text ascii":         func() { f.Text(ascii.Summary) },
		"text curly":         func() { f.Text(curly) },
		"text ordinary":      func() { f.Text("The options are manifold; a high-gloss finish; gamma rays; $0.042.") },
		"analysis full":      func() { f.Analysis(ascii) },
		"analysis strategy":  func() { f.Analysis(strategy) },
		"mail":               func() { f.Mail("Your verdict", ascii.Summary, html, Own{}) },
		"text cyrillic, cjk": func() { f.Text("Добро. 你好，世界。") },
		// Text the disguise view reads again: letters with digits, and
		// one-letter words side by side.
		"text override":  func() { f.Text("\u202esdrow desrever\u202c and the options are manifold.") },
		"text shorthand": func() { f.Text("Use A/B tests in Q4 with B2B leads, 10x growth and a 4 x 4 grid; it's U.S. only.") },
		"mail shorthand": func() {
			f.Mail("Q4 plan", "A/B tests, B2B leads.", "<p>A/B tests &amp; <b>B2B</b> leads at 10x.</p>", Own{})
		},
	} {
		if n := testing.AllocsPerRun(100, fn); n != 0 {
			t.Errorf("%s: %v allocations per call, want 0", name, n)
		}
	}
}

// Invariant 7: no state between calls, safe for concurrent use (run with
// -race).
func TestConcurrentUse(t *testing.T) {
	f := newFilter(t)
	inputs := []string{"The TMM shows demand.", "GLOSS reviewed this.", "The options are manifold.", "AI\u200bON agrees.", ""}
	want := make([]Result, len(inputs))
	for i, in := range inputs {
		want[i] = f.Text(in)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				k := (g + i) % len(inputs)
				if got := f.Text(inputs[k]); !reflect.DeepEqual(got, want[k]) {
					errs <- fmt.Sprintf("%q: %+v, want %+v", inputs[k], got, want[k])
					return
				}
				vc := cleanVerdicts[(g+i)%len(cleanVerdicts)]
				if _, rep := f.Analysis(vc.a); rep.Action != Pass {
					errs <- vc.name + ": " + rep.Action.String()
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

func TestEdgeInputs(t *testing.T) {
	f := newFilter(t)
	for _, in := range []string{"", " ", "\x00", "\xff\xfe", "TMM\xff", "&", "<", "&#", "&#x;", "<!--", strings.Repeat("a", 10000), strings.Repeat("\u200b", 100) + "TMM"} {
		r := f.Text(in)
		if r.Action == Pass && r.Text != in {
			t.Errorf("%q: PASS changed the text", in)
		}
		f.Mail(in, in, in, Own{})
	}
	if r := f.Text("TMM\xff shows"); r.Action != Replace || r.Text != "Our analysis\xff shows" {
		t.Errorf("invalid UTF-8 next to a term: %s %q", r.Action, r.Text)
	}
}

// A right-to-left override shows the letters after it reversed: a term
// written backwards behind one reads as the term and quarantines (its
// letters cannot be replaced in place), at either gate and in any part of
// an email; text that merely holds an override, or a reversed word that
// is no term, passes; a term written plainly beside an override is still
// replaced as usual.
func TestReversedTermsBehindAnOverrideAreCaught(t *testing.T) {
	f := newFilter(t)
	for _, tc := range []struct {
		text string
		act  Action
		id   string
	}{
		{"The \u202eNOIA\u202c method agrees.", Quarantine, "cat2.aion"},
		{"Ask \u202eSSOLG", Quarantine, "cat2.gloss"},
		{"Ask \u202eSSO\u200bLG\u2069 today.", Quarantine, "cat2.gloss"},
		{"Plain \u202eolleh\u202c text.", Pass, ""},
		{"An override alone \u202e.", Pass, ""},
		{"An embedding keeps letters in order: \u202bSSOLG\u202c.", Pass, ""},
		{"The TMM agrees \u202eolleh\u202c.", Replace, "cat3.tmm"},
		{"Two lines \u202eNO\nIA stay apart.", Pass, ""},
	} {
		r := f.Text(tc.text)
		if r.Action != tc.act || (tc.id != "" && !caught(r, tc.id)) {
			t.Errorf("%q: %s %v, want %s %s", tc.text, r.Action, hitIDs(r.Hits), tc.act, tc.id)
		}
	}
	// Gate 1 quarantines a reversed term it could otherwise replace.
	a := oracle.Analysis{Verdict: oracle.VerdictGreen, Summary: "Strong demand, says the \u202eMMT\u202c."}
	if _, rep := f.Analysis(a); rep.Action != Quarantine {
		t.Errorf("gate 1: %s %+v", rep.Action, rep.Hits)
	}
	// Gate 2, in the subject, the text and the HTML part.
	for _, m := range [][3]string{
		{"Your \u202eNOIA verdict", "Fine.", "<p>Fine.</p>"},
		{"Your verdict", "Fine \u202eNOIA\u202c.", "<p>Fine.</p>"},
		{"Your verdict", "Fine.", "<p>Fine \u202eNOIA\u202c.</p>"},
	} {
		if rep := f.Mail(m[0], m[1], m[2], Own{}); rep.Action != Quarantine {
			t.Errorf("gate 2 %q: %s %+v", m, rep.Action, rep.Hits)
		}
	}
}

// TestShared: every caller gets one filter, New's, whether or not
// Prepare started building it.
func TestShared(t *testing.T) {
	Prepare()
	a, err := Shared()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Shared()
	want, _ := New()
	if a != b || a.Version() != want.Version() {
		t.Fatalf("Shared gave %p (%s) then %p; New's version is %s", a, a.Version(), b, want.Version())
	}
}
