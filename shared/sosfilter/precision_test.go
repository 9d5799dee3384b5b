package sosfilter

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"42sisters.ai/oracle/shared/oracle"
)

var update = flag.Bool("update", false, "rewrite testdata/precision.golden from the filter's decisions")

// The precision corpus (issue 41): ordinary sentences a verdict could hold
// that use a listed word or phrase in its everyday sense (gamma rays, a
// chroma key backdrop, an anvil, the ring of shops around a square, the E8
// road, a lattice fence, a gloss finish, manifold options, "copy that
// approach"), numbers beside the listed ones, and sentences in French,
// Russian, Ukrainian and Greek. testdata/precision.txt holds them, a
// section ("## gamma") for each word or language; precision.golden what
// gate 1 does with each: the section's figures, and every sentence it
// repairs or holds with the entries that decided it.

const (
	precisionCorpus = "testdata/precision.txt"
	precisionGolden = "testdata/precision.golden"
)

// precisionSection is one section of the corpus.
type precisionSection struct {
	name      string
	sentences []string
}

func readPrecision(tb testing.TB) []precisionSection {
	tb.Helper()
	file, err := os.Open(precisionCorpus)
	if err != nil {
		tb.Fatal(err)
	}
	defer file.Close()
	var sections []precisionSection
	sc := bufio.NewScanner(file)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "":
		case strings.HasPrefix(line, "## "):
			sections = append(sections, precisionSection{name: strings.TrimSpace(line[3:])})
		case len(sections) == 0:
			tb.Fatalf("%s: %q comes before any section", precisionCorpus, line)
		default:
			s := &sections[len(sections)-1]
			s.sentences = append(s.sentences, line)
		}
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return sections
}

// precisionFigures is what gate 1 did with the corpus: for each section,
// how many sentences reached the customer untouched, repaired (a listed
// term replaced by its substitute) or were held for review.
type precisionFigures struct {
	sections                  []string
	untouched, repaired, held map[string]int
	sentences                 int
	decisions                 []string // the golden file's lines of what was not untouched
}

// total sums a figure over the sections named, or over all of them.
func total(m map[string]int, names ...string) int {
	n := 0
	for name, v := range m {
		if len(names) == 0 || slices.Contains(names, name) {
			n += v
		}
	}
	return n
}

// measurePrecision runs each sentence through gate 1 as a quick verdict's
// summary, the way the generator filters what the model wrote.
func measurePrecision(f *Filter, sections []precisionSection) precisionFigures {
	p := precisionFigures{untouched: map[string]int{}, repaired: map[string]int{}, held: map[string]int{}}
	for _, s := range sections {
		p.sections = append(p.sections, s.name)
		for _, text := range s.sentences {
			p.sentences++
			_, rep := f.Analysis(oracle.Analysis{Verdict: oracle.VerdictGreen, Summary: text})
			switch rep.Action {
			case Pass:
				p.untouched[s.name]++
				continue
			case Replace:
				p.repaired[s.name]++
			default:
				p.held[s.name]++
			}
			p.decisions = append(p.decisions, fmt.Sprintf("%s %s %s: %s", s.name, rep.Action, strings.Join(rep.Terms(), ","), text))
		}
	}
	return p
}

func (p precisionFigures) golden() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# gate 1 on %s: %d sentences, %d untouched, %d repaired, %d held\n", precisionCorpus, p.sentences, total(p.untouched), total(p.repaired), total(p.held))
	fmt.Fprintf(&b, "# section: untouched repaired held\n")
	for _, name := range p.sections {
		fmt.Fprintf(&b, "%s: %d %d %d\n", name, p.untouched[name], p.repaired[name], p.held[name])
	}
	fmt.Fprintf(&b, "# what was repaired or held, and by which entries\n")
	for _, d := range p.decisions {
		fmt.Fprintln(&b, d)
	}
	return b.String()
}

// TestPrecisionCorpus measures the filter's precision on ordinary text
// and pins it: a change that holds or repairs one sentence more, or one
// fewer, changes precision.golden, to be read and rewritten with -update.
// Whatever the golden file says, no sentence in French, Russian or
// Ukrainian is touched, and every Greek one is held (GAP-C).
func TestPrecisionCorpus(t *testing.T) {
	f := newFilter(t)
	sections := readPrecision(t)
	p := measurePrecision(f, sections)
	if p.sentences < 300 {
		t.Fatalf("%d sentences in %s, want at least 300", p.sentences, precisionCorpus)
	}
	for _, want := range []string{"gamma", "chroma", "anvil", "the ring", "e8", "lattice", "gloss", "manifold", "copy that", "french", "russian", "ukrainian", "greek"} {
		if !slices.Contains(p.sections, want) {
			t.Errorf("%s has no section %q", precisionCorpus, want)
		}
	}
	for _, name := range []string{"french", "russian", "ukrainian"} {
		if p.repaired[name]+p.held[name] > 0 {
			t.Errorf("%s: %d repaired, %d held; a sentence in its own script is no disguise", name, p.repaired[name], p.held[name])
		}
	}
	if p.held["greek"] != p.untouched["greek"]+p.repaired["greek"]+p.held["greek"] {
		t.Errorf("greek: %d of %d held; every Greek letter is a listed symbol (GAP-C)", p.held["greek"], p.untouched["greek"]+p.repaired["greek"]+p.held["greek"])
	}
	got := p.golden()
	if *update {
		if err := os.WriteFile(precisionGolden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(precisionGolden)
	if err != nil {
		t.Fatalf("%v (run go test ./shared/sosfilter -run TestPrecisionCorpus -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("gate 1's decisions on %s differ from %s; read the difference, and if it is meant run go test ./shared/sosfilter -run TestPrecisionCorpus -update\n%s",
			precisionCorpus, precisionGolden, lineDiff(string(want), got))
	}
	t.Logf("%d sentences: %d untouched, %d repaired, %d held", p.sentences, total(p.untouched), total(p.repaired), total(p.held))
}

// lineDiff lists the lines only one of a and b has.
func lineDiff(a, b string) string {
	in := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, l := range strings.Split(s, "\n") {
			m[l] = true
		}
		return m
	}
	inA, inB := in(a), in(b)
	var out []string
	for _, l := range strings.Split(a, "\n") {
		if !inB[l] {
			out = append(out, "- "+l)
		}
	}
	for _, l := range strings.Split(b, "\n") {
		if !inA[l] {
			out = append(out, "+ "+l)
		}
	}
	return strings.Join(out, "\n")
}

// BenchmarkPrecision reports the corpus's figures for make bench: the
// sentences, how many reached the customer untouched, repaired or held,
// and how many in French, Russian or Ukrainian were held (the budget: 0)
// and in Greek (held by design).
func BenchmarkPrecision(b *testing.B) {
	f := newFilter(b)
	sections := readPrecision(b)
	var p precisionFigures
	for b.Loop() {
		p = measurePrecision(f, sections)
	}
	b.ReportMetric(float64(p.sentences), "sentences")
	b.ReportMetric(float64(total(p.untouched)), "untouched")
	b.ReportMetric(float64(total(p.repaired)), "repaired")
	b.ReportMetric(float64(total(p.held)), "held")
	b.ReportMetric(float64(total(p.held, "french", "russian", "ukrainian")), "held-fr-ru-uk")
	b.ReportMetric(float64(total(p.held, "greek")), "held-greek")
}
