package sosfilter

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"42sisters.ai/oracle/infra/fakes/fakegemini"
	"42sisters.ai/oracle/shared/oracle"
)

// The performance budget (docs/performance.md): at least 20x a regular
// expression alternation over the same block list, no allocation on clean
// text. The baseline is what one would write first: every term of the
// list, case-insensitive, \b around words, one alternation. It only finds
// matches; the filter also folds, checks context and decides.

func regexpBaseline(tb testing.TB) *regexp.Regexp {
	var alts []string
	for _, e := range shippedList(tb).Entries {
		for _, t := range e.Terms {
			q := regexp.QuoteMeta(t)
			if e.Match != "exact" {
				if isAlnum(firstRune(t)) {
					q = `\b` + q
				}
				if e.Match == "word" && isAlnum(lastRune(t)) {
					q += `\b`
				}
			}
			alts = append(alts, q)
		}
	}
	return regexp.MustCompile(`(?i)` + strings.Join(alts, "|"))
}

// benchVerdicts are a verdict of each tier, clean and with terms the
// filter replaces (one, two and three: as many as MaxDensity allows).
func benchVerdicts(tb testing.TB) []struct {
	name string
	a    oracle.Analysis
} {
	pick := map[oracle.Tier]verdictCase{}
	for _, vc := range cleanVerdicts {
		if _, ok := pick[vc.tier]; !ok || len(texts(vc.a)) > len(texts(pick[vc.tier].a)) {
			pick[vc.tier] = vc
		}
	}
	var out []struct {
		name string
		a    oracle.Analysis
	}
	for _, tier := range oracle.Tiers() {
		clean := pick[tier].a
		dirty := deepCopy(clean)
		dirty.Summary = "According to AION, " + dirty.Summary
		if tier != oracle.TierQuick {
			n := dirty.Breakdown["Stability"]
			n.Analysis = "The TMM shows it. " + n.Analysis
			dirty.Breakdown["Stability"] = n
		}
		if tier == oracle.TierStrategy {
			n := dirty.Breakdown["Curvature"]
			n.Analysis += " GAMMA concurs."
			dirty.Breakdown["Curvature"] = n
		}
		out = append(out,
			struct {
				name string
				a    oracle.Analysis
			}{string(tier) + "/clean", clean},
			struct {
				name string
				a    oracle.Analysis
			}{string(tier) + "/dirty", dirty})
	}
	return out
}

func size(a oracle.Analysis) int64 {
	n := 0
	for _, s := range texts(a) {
		n += len(s)
	}
	return int64(n)
}

func BenchmarkFilter(b *testing.B) {
	f := newFilter(b)
	for _, v := range benchVerdicts(b) {
		b.Run(v.name, func(b *testing.B) {
			want := Pass
			if strings.HasSuffix(v.name, "dirty") {
				want = Replace
			}
			if _, rep := f.Analysis(v.a); rep.Action != want {
				b.Fatalf("%s: %s (%s), want %s", v.name, rep.Action, rep.Reason, want)
			}
			b.SetBytes(size(v.a))
			b.ReportAllocs()
			for b.Loop() {
				f.Analysis(v.a)
			}
		})
	}
}

func BenchmarkRegexp(b *testing.B) {
	re := regexpBaseline(b)
	for _, v := range benchVerdicts(b) {
		b.Run(v.name, func(b *testing.B) {
			fields := texts(v.a)
			b.SetBytes(size(v.a))
			b.ReportAllocs()
			for b.Loop() {
				for _, s := range fields {
					re.FindAllStringIndex(s, -1)
				}
			}
		})
	}
}

// BenchmarkFilterMail is gate 2 over a formatted email (text and HTML).
func BenchmarkFilterMail(b *testing.B) {
	f := newFilter(b)
	a := cleanVerdicts[len(cleanVerdicts)-1].a
	text := strings.Join(texts(a), "\n\n")
	html := "<p>" + strings.Join(texts(a), "</p>\n<p style=\"margin:0\">") + "</p>&nbsp;&#9679;&amp;"
	b.SetBytes(int64(len(text) + len(html)))
	b.ReportAllocs()
	for b.Loop() {
		f.Mail("Your Strategy Session verdict", text, html, Own{})
	}
}

// BenchmarkViews is the cost of each way the filter reads a clean text:
// plain ASCII (one pass), text the disguise view reads again (business
// shorthand: letters with digits, one-letter words side by side), letters
// outside ASCII (folded one at a time, look-alikes through the table), a
// right-to-left override (the text as shown is read too), and an HTML part
// (visible text and source, markup and references decoded). Each is clean,
// so each must allocate nothing.
func BenchmarkViews(b *testing.B) {
	f := newFilter(b)
	base := cleanVerdicts[9].a.Summary
	for _, v := range []struct {
		name, text string
		html       bool
	}{
		{"plain", base, false},
		{"disguise", "Use A/B tests in Q4 with B2B leads, 10x growth and a 4 x 4 grid. " + base, false},
		{"look-alikes", "Добро: Ꭺ café in Łódź. 你好，世界。 " + base, false},
		{"override", "\u202e" + "sdrow desrever" + "\u202c " + base, false},
		{"html", "<p>" + strings.ReplaceAll(base, " ", " <b></b>&nbsp;") + "</p>&#9679;&amp;", true},
	} {
		b.Run(v.name, func(b *testing.B) {
			if !f.clean(v.text, v.html) {
				b.Fatalf("%s is not clean", v.name)
			}
			b.SetBytes(int64(len(v.text)))
			b.ReportAllocs()
			for b.Loop() {
				f.clean(v.text, v.html)
			}
		})
	}
}

// BenchmarkOrdinaryEnglish runs the false-positive corpus's prose and
// generated verdicts through the filter (TestOrdinaryEnglishIsNotTouched
// has the word list too) and reports how many texts it replaced or
// quarantined: the budget is none.
func BenchmarkOrdinaryEnglish(b *testing.B) {
	f := newFilter(b)
	var prose []string
	for _, name := range []string{"GPL-3", "GPL-2", "LGPL-3", "Apache-2.0", "MPL-2.0", "GFDL-1.3"} {
		text, err := os.ReadFile("/usr/share/common-licenses/" + name)
		if err != nil {
			b.Skipf("%v (Debian's base-files)", err)
		}
		prose = append(prose, strings.Split(string(text), "\n\n")...)
	}
	var verdicts []oracle.Analysis
	for i := range 1000 {
		tier := []oracle.Tier{oracle.TierQuick, oracle.TierFull, oracle.TierStrategy}[i%3]
		verdicts = append(verdicts, fakegemini.Verdict(fmt.Sprintf("Should I open business number %d?", i), tier))
	}
	touched, bytes := 0, 0
	for _, p := range prose {
		bytes += len(p)
		if r := f.Text(p); r.Action != Pass {
			touched++
		}
	}
	for _, a := range verdicts {
		bytes += int(size(a))
		if _, rep := f.Analysis(a); rep.Action != Pass {
			touched++
		}
	}
	b.SetBytes(int64(bytes))
	b.ReportAllocs()
	for b.Loop() {
		for _, p := range prose {
			f.Text(p)
		}
		for _, a := range verdicts {
			f.Analysis(a)
		}
	}
	b.ReportMetric(float64(touched), "false-hits")
	b.ReportMetric(float64(len(prose)+len(verdicts)), "texts")
}

// BenchmarkNew is the filter's share of a cold start: every function that
// gates text (the generator, the mailer, the chat, the inbox, ops) builds
// it before it serves. Its bytes are a cold process's page faults.
func BenchmarkNew(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := New(); err != nil {
			b.Fatal(err)
		}
	}
}
