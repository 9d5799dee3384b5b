package letter

import (
	"flag"
	"html"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"text/template/parse"
	"time"
	"unicode/utf8"

	"42sisters.ai/oracle/infra/testkit"

	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/tmplrun"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/ from the current templates")

func samples(t *testing.T) map[string]Message {
	t.Helper()
	list, err := Samples()
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]Message, len(list))
	for _, s := range list {
		if _, dup := out[s.Name]; dup {
			t.Fatalf("two samples are named %s", s.Name)
		}
		out[s.Name] = s.Message
	}
	return out
}

func TestGolden(t *testing.T) {
	// One golden letter per tier and the notice; strategy is shown with NULL
	// so the golden files also show the NULL marker.
	all := samples(t)
	for _, name := range []string{"quick/AMBER", "full/GREEN", "strategy/NULL", "notice", Failed, Review, Divergence, PaymentReview, Refund, chatSignIn, chatPaymentFailed} {
		m, ok := all[name]
		if !ok {
			t.Fatalf("no sample %s", name)
		}
		base := filepath.Join("testdata", strings.ReplaceAll(strings.ToLower(name), "/", "-"))
		for ext, got := range map[string]string{".txt": m.Text, ".html": m.HTML} {
			file := base + ext
			if *update {
				if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("%s differs from %s (run go test -update after checking the change):\n%s", name, file, got)
			}
		}
	}
}

// example1 is SPEC_ORACLE_VERDICT_PIPELINE Example 1, copied from the spec
// byte for byte, with the result page link added between the summary and
// the rule.
const example1 = `ORACLE VERDICT — QUICK TAKE
═══════════════════════════

YOUR SUBMISSION:
Should I quit my job to start this business?

VERDICT: 🟡 AMBER

The instinct is sound but the timing is missing — this needs a 6-month runway before you pull the trigger.

` + "View your verdict online: " + sampleURL + `

───────────────────────────
42 Sisters AI · oracle@42sisters.ai
Questions? Reply to this email.
`

func TestExample1ByteForByte(t *testing.T) {
	m, err := Verdict(DefaultBrand(), oracle.TierQuick, "Should I quit my job to start this business?",
		oracle.Analysis{Verdict: oracle.VerdictAmber, Summary: "The instinct is sound but the timing is missing — this needs a 6-month runway before you pull the trigger."},
		sampleURL)
	if err != nil {
		t.Fatal(err)
	}
	if m.Subject != "Your 42 Sisters AI Verdict" {
		t.Errorf("subject %q", m.Subject)
	}
	if m.Text != example1 {
		t.Errorf("the quick take is not Example 1:\ngot:\n%s\nwant:\n%s", m.Text, example1)
	}
}

// notice is SPEC_ORACLE_SILENT_DROP Output 1, copied from the spec.
const (
	noticeSubjectText = "We received your payment — please reply with your question"
	noticeBody        = `Hi there,

We received your payment but couldn't process your submission — something was missing from the session when it arrived on our end.

This is our error, not yours.

To get your Oracle verdict, please reply to this email with:
1. Your question or idea (the submission you intended to send)
2. The tier you selected: Quick Take ($1), Full Breakdown ($5), or Strategy Session ($25)

We'll process your verdict manually and send it within 24 hours at no additional charge.

If you'd prefer a refund instead, just say so in your reply — we'll process it immediately.

We're sorry for the friction. We hold ourselves to a higher standard.

— 42 Sisters AI
oracle@42sisters.ai
`
)

func TestNoticeIsTheSpecText(t *testing.T) {
	m, err := SilentDropNotice(Brand{})
	if err != nil {
		t.Fatal(err)
	}
	if m.Subject != noticeSubjectText {
		t.Errorf("subject %q, want %q", m.Subject, noticeSubjectText)
	}
	if m.Text != noticeBody {
		t.Errorf("body differs from the spec:\ngot:\n%s\nwant:\n%s", m.Text, noticeBody)
	}
	for _, s := range []string{"couldn't process your submission", "Quick Take ($1), Full Breakdown ($5), or Strategy Session ($25)", "higher standard", "— 42 Sisters AI"} {
		if !strings.Contains(visibleText(m.HTML), s) {
			t.Errorf("the HTML notice lacks %q", s)
		}
	}
}

func TestHeaderPerTier(t *testing.T) {
	all := samples(t)
	for _, tier := range oracle.Tiers() {
		lines := strings.Split(all[string(tier)+"/GREEN"].Text, "\n")
		title := "ORACLE VERDICT — " + strings.ToUpper(tier.Name())
		if lines[0] != title {
			t.Errorf("%s: header %q, want %q", tier, lines[0], title)
		}
		width := utf8.RuneCountInString(title)
		if lines[1] != strings.Repeat("═", width) {
			t.Errorf("%s: underline %q is not %d ═", tier, lines[1], width)
		}
		if !slices.Contains(lines, strings.Repeat("─", width)) {
			t.Errorf("%s: no ─ rule as wide as the header", tier)
		}
	}
}

func TestTierBlocks(t *testing.T) {
	all := samples(t)
	followUp := "Your follow-up submission is included in this tier. Reply to this email with your follow-up question."
	for _, tier := range oracle.Tiers() {
		m := all[string(tier)+"/RED"]
		breakdown := strings.Contains(m.Text, "\nBREAKDOWN:\n")
		strategy := strings.Contains(m.Text, "\nSTRATEGIC RECOMMENDATIONS:\n")
		note := strings.HasSuffix(m.Text, "Questions? Reply to this email.\n"+followUp+"\n")
		if breakdown != (tier != oracle.TierQuick) || strategy != (tier == oracle.TierStrategy) || note != (tier == oracle.TierStrategy) {
			t.Errorf("%s: breakdown=%v strategy=%v follow-up=%v", tier, breakdown, strategy, note)
		}
		if tier == oracle.TierQuick {
			continue
		}
		// The five dimensions in the domain's order, each with its marker,
		// word and analysis.
		a := sampleAnalysis(tier, oracle.VerdictRed)
		at := strings.Index(m.Text, "\nBREAKDOWN:\n")
		for _, name := range oracle.Dimensions {
			n := a.Breakdown[name]
			block := "\n\n" + name + ": " + marker(n.Verdict) + " " + string(n.Verdict) + "\n" + n.Analysis + "\n"
			i := strings.Index(m.Text, block)
			if i < at {
				t.Fatalf("%s: %s is missing or out of order", tier, name)
			}
			at = i
		}
	}
	s := sampleAnalysis(oracle.TierStrategy, oracle.VerdictRed).Strategy
	want := "\nNext step:\n" + s.NextStep + "\n\nAlternative path:\n" + s.Alternative + "\n\nTests to run:\n1. " + s.Tests[0] + "\n2. " + s.Tests[1] + "\n3. " + s.Tests[2] + "\n\nView your verdict online: "
	if !strings.Contains(all["strategy/RED"].Text, want) {
		t.Errorf("strategy block is not\n%s\nin\n%s", want, all["strategy/RED"].Text)
	}
}

func TestTheTierDecidesTheFormat(t *testing.T) {
	// Parts beyond the tier are not shown: the tier selects the format,
	// not what the model happened to return.
	extra := sampleAnalysis(oracle.TierStrategy, oracle.VerdictGreen)
	quick, err := Verdict(DefaultBrand(), oracle.TierQuick, "q", extra, sampleURL)
	if err != nil {
		t.Fatal(err)
	}
	full, err := Verdict(DefaultBrand(), oracle.TierFull, "q", extra, sampleURL)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"BREAKDOWN", "Breakdown", "Stability", "STRATEGIC", "Strategic", extra.Strategy.NextStep, "follow-up"} {
		if strings.Contains(quick.Text, s) || strings.Contains(quick.HTML, s) {
			t.Errorf("the quick take shows %q", s)
		}
	}
	for _, s := range []string{"STRATEGIC", "Strategic", extra.Strategy.NextStep, "follow-up"} {
		if strings.Contains(full.Text, s) || strings.Contains(full.HTML, s) {
			t.Errorf("the full breakdown shows %q", s)
		}
	}
}

func TestNullRendersLikeTheOthers(t *testing.T) {
	// PRODUCT_TIERS invariant 6: NULL is delivered identically to GREEN,
	// AMBER and RED. Rendered from the same content, a NULL letter is the
	// GREEN letter with only the marker, the dot colour and the word changed.
	all := samples(t)
	for _, tier := range oracle.Tiers() {
		null, green := all[string(tier)+"/NULL"], all[string(tier)+"/GREEN"]
		if !strings.Contains(null.Text, "\nVERDICT: ⚪ NULL\n") {
			t.Errorf("%s: no NULL verdict line in\n%s", tier, null.Text)
		}
		if got := strings.Replace(null.Text, "VERDICT: ⚪ NULL", "VERDICT: 🟢 GREEN", 1); got != green.Text {
			t.Errorf("%s: the NULL text differs from the GREEN text beyond the verdict", tier)
		}
		got := strings.Replace(null.HTML, dot("#555", "NULL"), dot("#34d399", "GREEN"), 1)
		if got != green.HTML {
			t.Errorf("%s: the NULL HTML differs from the GREEN HTML beyond the verdict", tier)
		}
		if null.Subject != green.Subject {
			t.Errorf("%s: NULL subject %q", tier, null.Subject)
		}
	}
}

// dot is how the HTML shows a verdict: its coloured dot next to its word.
func dot(colour, word string) string {
	return `<span aria-hidden="true" style="color:` + colour + `;font-size:1.2em;">&#9679;</span>&nbsp;<strong>` + word + `</strong>`
}

var dotPattern = regexp.MustCompile(`<span aria-hidden="true" style="color:(#[0-9a-f]+);font-size:1.2em;">&#9679;</span>&nbsp;<strong>([A-Z]+)</strong>`)

func TestHTMLCarriesTheTextContent(t *testing.T) {
	all := samples(t)
	colours := map[string]string{"GREEN": "#34d399", "AMBER": "#f5c842", "RED": "#ff4444", "NULL": "#555"}
	for _, tier := range oracle.Tiers() {
		for _, v := range []oracle.Verdict{oracle.VerdictGreen, oracle.VerdictAmber, oracle.VerdictRed, oracle.VerdictNull} {
			m := all[string(tier)+"/"+string(v)]
			a := sampleAnalysis(tier, v)
			visible := visibleText(m.HTML)
			want := []string{sampleQueries[tier], a.Summary, "View your verdict online: " + sampleURL, "42 Sisters AI · oracle@42sisters.ai", "Questions? Reply to this email."}
			verdicts := []string{string(v)}
			if tier != oracle.TierQuick {
				for _, name := range oracle.Dimensions {
					want = append(want, a.Breakdown[name].Analysis)
					verdicts = append(verdicts, string(a.Breakdown[name].Verdict))
				}
			}
			if tier == oracle.TierStrategy {
				want = append(want, a.Strategy.NextStep, a.Strategy.Alternative, "Your follow-up submission is included in this tier.")
				want = append(want, a.Strategy.Tests...)
			}
			for _, s := range want {
				if !strings.Contains(visible, s) {
					t.Errorf("%s/%s: the HTML lacks %q", tier, v, s)
				}
			}
			// Every verdict, overall and per dimension, is its word beside
			// a dot of its colour, in the text's order.
			var got []string
			for _, d := range dotPattern.FindAllStringSubmatch(m.HTML, -1) {
				if colours[d[2]] != d[1] {
					t.Errorf("%s/%s: %s shown with the colour %s", tier, v, d[2], d[1])
				}
				got = append(got, d[2])
			}
			if strings.Join(got, " ") != strings.Join(verdicts, " ") {
				t.Errorf("%s/%s: HTML verdicts %v, want %v", tier, v, got, verdicts)
			}
		}
	}
}

func TestLinkIsPresent(t *testing.T) {
	for name, m := range samples(t) {
		if name == "notice" || name == "autoresponse" || name == chatSignIn || name == chatPaymentFailed { // they answer no order
			continue
		}
		line := "\n\nView your verdict online: "
		if slices.Contains(Notices(), name) {
			line = "\n\nYour result page: "
		}
		if !strings.Contains(m.Text, line+sampleURL+"\n\n") {
			t.Errorf("%s: the text has no link line", name)
		}
		if !strings.Contains(m.HTML, `<a href="`+sampleURL+`"`) {
			t.Errorf("%s: the HTML has no link", name)
		}
	}
	// A URL with several parameters is written as is in the text and
	// attribute-escaped in the HTML.
	u := "https://42sisters.ai/oracle/result?session_id=cs_test_1&from=mail"
	m, err := Verdict(DefaultBrand(), oracle.TierQuick, "q", sampleAnalysis(oracle.TierQuick, oracle.VerdictRed), u)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(m.Text, "View your verdict online: "+u+"\n") || !strings.Contains(m.HTML, `href="https://42sisters.ai/oracle/result?session_id=cs_test_1&amp;from=mail"`) {
		t.Errorf("link not rendered:\n%s\n%s", m.Text, m.HTML)
	}
}

// allowedTags are the only elements the templates write; anything else in
// the output came from the data.
var allowedTags = map[string]bool{
	"!doctype": true, "html": true, "head": true, "meta": true, "title": true, "body": true, "table": true, "tr": true,
	"td": true, "h1": true, "h2": true, "h3": true, "p": true, "span": true, "strong": true, "br": true, "ol": true,
	"li": true, "a": true, "hr": true,
}

var (
	tagPattern  = regexp.MustCompile(`<(/?)([!a-zA-Z][a-zA-Z0-9]*)([^>]*)>`)
	hrefPattern = regexp.MustCompile(`href="([^"]*)"`)
	onPattern   = regexp.MustCompile(`(?i)\son[a-z]+\s*=`)
)

func TestHTMLEscapesHostileInput(t *testing.T) {
	hostile := []string{
		`<script>alert("query")</script>`,
		`<img src=x onerror=alert(1)>`,
		`</p><a href="javascript:alert(2)">click</a>`,
		`<style>body{display:none}</style>`,
		`"><iframe src="https://evil.example"></iframe>`,
		`{{.Brand.Name}} <!-- --> & &amp; ' "`,
	}
	a := sampleAnalysis(oracle.TierStrategy, oracle.VerdictAmber)
	a.Summary = hostile[1]
	for i, name := range oracle.Dimensions {
		n := a.Breakdown[name]
		n.Analysis = hostile[i%len(hostile)] + "\n" + hostile[(i+1)%len(hostile)]
		a.Breakdown[name] = n
	}
	a.Strategy = &oracle.Strategy{NextStep: hostile[2], Alternative: hostile[3], Tests: []string{hostile[4], hostile[5], hostile[0]}}
	query := strings.Join(hostile, "\n")
	u := sampleURL + `&x="><script>alert(3)</script>`
	m, err := Verdict(DefaultBrand(), oracle.TierStrategy, query, a, u)
	if err != nil {
		t.Fatal(err)
	}
	for _, tag := range tagPattern.FindAllStringSubmatch(m.HTML, -1) {
		if !allowedTags[strings.ToLower(tag[2])] {
			t.Errorf("the data produced a <%s> element", tag[2])
		}
		if onPattern.MatchString(tag[3]) {
			t.Errorf("the data produced an event handler: %s", tag[0])
		}
	}
	for _, h := range hrefPattern.FindAllStringSubmatch(m.HTML, -1) {
		if !strings.HasPrefix(h[1], "https://42sisters.ai/") && h[1] != "mailto:oracle@42sisters.ai" {
			t.Errorf("unexpected link %q", h[1])
		}
	}
	// The hostile text is still there for the reader to see, as text.
	visible := visibleText(m.HTML)
	for _, s := range hostile {
		if !strings.Contains(visible, s) {
			t.Errorf("the HTML does not show %q as text", s)
		}
	}
	// The plain text is plain: what the customer typed, unchanged.
	if !strings.Contains(m.Text, "YOUR SUBMISSION:\n"+query+"\n\n") {
		t.Error("the plain text altered the query")
	}
}

// visibleText is what a reader of the HTML sees: the tags dropped, line
// breaks for <br>, entities decoded.
func visibleText(h string) string {
	h = strings.ReplaceAll(h, "<br>", "\n")
	h = tagPattern.ReplaceAllString(h, "")
	return strings.ReplaceAll(html.UnescapeString(h), "\u00a0", " ")
}

func TestLineBreaksAreOneKind(t *testing.T) {
	a := sampleAnalysis(oracle.TierQuick, oracle.VerdictGreen)
	a.Summary = "first\r\nsecond\rthird"
	m, err := Verdict(DefaultBrand(), oracle.TierQuick, "a\r\nb", a, sampleURL)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(m.Text, "\r") || strings.Contains(m.HTML, "\r") {
		t.Error("a carriage return reached the letter")
	}
	if !strings.Contains(m.Text, "YOUR SUBMISSION:\na\nb\n") || !strings.Contains(m.Text, "\nfirst\nsecond\nthird\n") {
		t.Errorf("line breaks lost:\n%s", m.Text)
	}
	if !strings.Contains(m.HTML, ">a<br>b</p>") || !strings.Contains(m.HTML, ">first<br>second<br>third</p>") {
		t.Errorf("HTML line breaks lost:\n%s", m.HTML)
	}
}

func TestVerdictRefusesWhatItCannotShow(t *testing.T) {
	const query = "my secret plan to sell maple syrup on the moon"
	valid := func(tier oracle.Tier) oracle.Analysis { return sampleAnalysis(tier, oracle.VerdictGreen) }
	cases := []struct {
		name   string
		tier   oracle.Tier
		query  string
		mutate func(*oracle.Analysis)
		url    string
	}{
		{"unknown tier", "premium", query, func(*oracle.Analysis) {}, sampleURL},
		{"blank query", oracle.TierQuick, " \n", func(*oracle.Analysis) {}, sampleURL},
		{"unknown verdict", oracle.TierQuick, query, func(a *oracle.Analysis) { a.Verdict = "PURPLE" }, sampleURL},
		{"lower-case verdict", oracle.TierQuick, query, func(a *oracle.Analysis) { a.Verdict = "green" }, sampleURL},
		{"blank summary", oracle.TierQuick, query, func(a *oracle.Analysis) { a.Summary = "\t" }, sampleURL},
		{"no URL", oracle.TierQuick, query, func(*oracle.Analysis) {}, ""},
		{"relative URL", oracle.TierQuick, query, func(*oracle.Analysis) {}, "/oracle/result?session_id=cs_test_1"},
		{"javascript URL", oracle.TierQuick, query, func(*oracle.Analysis) {}, "javascript:alert(1)"},
		{"URL with a space", oracle.TierQuick, query, func(*oracle.Analysis) {}, sampleURL + " x"},
		{"missing dimension", oracle.TierFull, query, func(a *oracle.Analysis) { delete(a.Breakdown, "Curvature") }, sampleURL},
		{"no breakdown", oracle.TierStrategy, query, func(a *oracle.Analysis) { a.Breakdown = nil }, sampleURL},
		{"blank analysis", oracle.TierFull, query, func(a *oracle.Analysis) {
			a.Breakdown["Turbulence"] = oracle.DimensionNote{Verdict: oracle.VerdictRed, Analysis: " "}
		}, sampleURL},
		{"unknown dimension verdict", oracle.TierFull, query, func(a *oracle.Analysis) {
			a.Breakdown["Completion"] = oracle.DimensionNote{Verdict: "MAYBE", Analysis: "x"}
		}, sampleURL},
		{"no strategy", oracle.TierStrategy, query, func(a *oracle.Analysis) { a.Strategy = nil }, sampleURL},
		{"blank next step", oracle.TierStrategy, query, func(a *oracle.Analysis) { a.Strategy.NextStep = "" }, sampleURL},
		{"blank alternative", oracle.TierStrategy, query, func(a *oracle.Analysis) { a.Strategy.Alternative = "" }, sampleURL},
		{"two tests", oracle.TierStrategy, query, func(a *oracle.Analysis) { a.Strategy.Tests = a.Strategy.Tests[:2] }, sampleURL},
		{"four tests", oracle.TierStrategy, query, func(a *oracle.Analysis) { a.Strategy.Tests = append(a.Strategy.Tests, "x") }, sampleURL},
		{"blank test", oracle.TierStrategy, query, func(a *oracle.Analysis) { a.Strategy.Tests = []string{"a", "", "c"} }, sampleURL},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tier := c.tier
			if tier.Name() == "" {
				tier = oracle.TierQuick
			}
			a := valid(tier)
			c.mutate(&a)
			_, err := Verdict(DefaultBrand(), c.tier, c.query, a, c.url)
			if err == nil {
				t.Fatal("rendered a letter that cannot be right")
			}
			if strings.Contains(err.Error(), "maple syrup") {
				t.Errorf("the error quotes the query: %v", err)
			}
		})
	}
	// And the valid analyses render, NULL dimensions included: which tokens
	// a dimension may carry is the generator's check.
	for _, tier := range oracle.Tiers() {
		a := valid(tier)
		if tier != oracle.TierQuick {
			a.Breakdown["Stability"] = oracle.DimensionNote{Verdict: oracle.VerdictNull, Analysis: "x"}
		}
		if _, err := Verdict(DefaultBrand(), tier, query, a, sampleURL); err != nil {
			t.Errorf("%s: %v", tier, err)
		}
	}
}

func TestBrand(t *testing.T) {
	if (Brand{}).From() != `"42 Sisters AI" <oracle@42sisters.ai>` || DefaultBrand() != (Brand{Name: "42 Sisters AI", Sender: "oracle@42sisters.ai", Support: "oracle@42sisters.ai"}) {
		t.Fatalf("defaults: %+v %s", DefaultBrand(), Brand{}.From())
	}
	b := Brand{Name: "Acme Oracle", Sender: "noreply@acme.test", Support: "help@acme.test"}
	if b.From() != `"Acme Oracle" <noreply@acme.test>` {
		t.Errorf("From %q", b.From())
	}
	m, err := Verdict(b, oracle.TierFull, "q", sampleAnalysis(oracle.TierFull, oracle.VerdictAmber), sampleURL)
	if err != nil {
		t.Fatal(err)
	}
	if m.Subject != "Your Acme Oracle Verdict" || !strings.Contains(m.Text, "\nAcme Oracle · help@acme.test\n") || !strings.Contains(visibleText(m.HTML), "Acme Oracle · help@acme.test") {
		t.Errorf("brand not applied: %q\n%s", m.Subject, m.Text)
	}
	n, err := SilentDropNotice(b)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(n.Text, "\n— Acme Oracle\nhelp@acme.test\n") || strings.Contains(n.Text+n.HTML, "42") {
		t.Errorf("brand not applied to the notice:\n%s", n.Text)
	}
}

func TestSamplesCoverEveryTierAndVerdict(t *testing.T) {
	all := samples(t)
	if len(all) != len(oracle.Tiers())*4+1+len(Notices())+1+2 {
		t.Fatalf("%d samples", len(all))
	}
	for _, tier := range oracle.Tiers() {
		for _, v := range []string{"GREEN", "AMBER", "RED", "NULL"} {
			if m := all[string(tier)+"/"+v]; m.Subject == "" || m.Text == "" || m.HTML == "" {
				t.Errorf("sample %s/%s is missing or empty", tier, v)
			}
		}
	}
	for name, m := range all {
		if !utf8.ValidString(m.Subject+m.Text+m.HTML) || strings.ContainsAny(m.Subject, "\r\n") {
			t.Errorf("%s: invalid UTF-8 or a multi-line subject", name)
		}
	}
}

// roots are the templates the code executes, by template set.
var roots = map[string][]string{
	".txt": {verdictSubject, verdictText, noticeSubject, noticeText, autoresponseTemplate + ".txt",
		chatSignIn + " subject", chatSignIn + ".txt", chatPaymentFailed + " subject", chatPaymentFailed + ".txt"},
	".html": {verdictHTML, noticeHTML, autoresponseTemplate + ".html", chatSignIn + ".html", chatPaymentFailed + ".html"},
}

func init() {
	for _, name := range Notices() {
		roots[".txt"] = append(roots[".txt"], name+" subject", name+".txt")
		roots[".html"] = append(roots[".html"], name+".html")
	}
}

// The acknowledgement is the canonical text, verbatim, under the
// message's subject with "Re: " once (V3, V9).
func TestAutoresponseCarriesTheCanonicalText(t *testing.T) {
	const canonical = "Your inquiry has been received by the 42Sisters.AI Oracle. Expect a response within 24 hours. " +
		"Thank you for reaching out. — 42 Sisters AI · oracle@42sisters.ai"
	for _, tc := range []struct{ subject, want string }{
		{"Question about my verdict", "Re: Question about my verdict"},
		{"Re: Hello", "Re: Hello"},
		{"RE: Hello", "RE: Hello"},
		{"", "Re: your message"},
		{"Two\r\nBcc: lines", "Re: Two Bcc: lines"},
		{strings.Repeat("é", 300), "Re: " + strings.Repeat("é", maxReplySubject)},
	} {
		m, err := Autoresponse(DefaultBrand(), tc.subject)
		if err != nil {
			t.Fatal(err)
		}
		if m.Subject != tc.want {
			t.Errorf("subject of %q = %q, want %q", tc.subject, m.Subject, tc.want)
		}
		if m.Text != canonical+"\n" {
			t.Errorf("text = %q, want the canonical %q", m.Text, canonical)
		}
		if !strings.Contains(m.HTML, "Expect a response within 24 hours.") || !strings.Contains(m.HTML, "oracle@42sisters.ai") {
			t.Errorf("the HTML alternative lacks the text: %s", m.HTML)
		}
	}
}

func TestNoticesCarryTheSpecTexts(t *testing.T) {
	tests := []struct {
		name, subject, text string
	}{
		{Failed, "Your 42 Sisters AI Verdict could not be completed",
			"\n\nAnalysis failed. Please contact oracle@42sisters.ai for a refund.\n\n"},
		{Review, "Your 42 Sisters AI Verdict is under review",
			"\n\nYour verdict is under review. We will email you when it is ready.\n\n"},
		{Divergence, "A note about your 42 Sisters AI Verdict",
			"\n\nNOTE: Due to a technical condition, the verdict on your results page may differ slightly from the one you received by email. " +
				"Both represent a valid coherence reading of your submission. If you have questions, reply to this email and we will provide clarification.\n\n"},
		{PaymentReview, "Your 42 Sisters AI order is being checked",
			"\n\nWe received your payment, but its amount does not match the price of the option you chose"},
		{Refund, "Your 42 Sisters AI payment has been refunded",
			"\n\nWe have refunded your payment for your 42 Sisters AI Verdict in full."},
	}
	for _, tc := range tests {
		m, err := Notice(DefaultBrand(), tc.name, sampleURL)
		if err != nil {
			t.Fatal(err)
		}
		if m.Subject != tc.subject || !strings.Contains(m.Text, tc.text) || !strings.HasSuffix(m.Text, "\n— 42 Sisters AI\noracle@42sisters.ai\n") {
			t.Errorf("%s: %q\n%s", tc.name, m.Subject, m.Text)
		}
	}
	if _, err := Notice(DefaultBrand(), "verdict", sampleURL); err == nil {
		t.Error("a notice named after the verdict letter was rendered")
	}
	if _, err := Notice(DefaultBrand(), Review, "javascript:alert(1)"); err == nil {
		t.Error("a notice with a script link was rendered")
	}
}

func TestEveryTemplateIsUsed(t *testing.T) {
	// Every file under templates/ is in a template set, and every template
	// in a set is reachable from one the code executes: no text that no
	// customer can receive, none that an editor would change in vain.
	sets := map[string]map[string]*parse.Tree{".txt": texts.(*tmplrun.Set).Trees(), ".html": pages.(*tmplrun.Set).Trees()} // by extension, then name
	for ext, trees := range sets {
		unused, undefined := testkit.UnusedTemplates(trees, roots[ext])
		for _, name := range unused {
			t.Errorf("template %s:%s is never used", ext, name)
		}
		for _, name := range undefined {
			t.Errorf("the code executes %s:%s, which no file defines", ext, name)
		}
	}
	err := fs.WalkDir(files, "templates", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if _, ok := sets[path.Ext(p)][path.Base(p)]; !ok {
			t.Errorf("%s is in no template set", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The chat's emails say what the issue asks of them, in both parts: the
// sign-in link works once and for 15 minutes and may be ignored; a failed
// renewal keeps access while Stripe retries and sends the person to the
// chat page, never to a portal session (its URL expires).
func TestChatEmailsSayWhatTheyMust(t *testing.T) {
	all := samples(t)
	for _, tc := range []struct {
		name, subject, link string
		says                []string
	}{
		{chatSignIn, "Your sign-in link for Sisters Chat", sampleSignInURL,
			[]string{"It works once, and only for the next 15 minutes.", "If you did not ask to sign in, you can ignore this email"}},
		{chatPaymentFailed, "Your Sisters Chat payment did not go through", sampleChatURL,
			[]string{"the payment for your next month did not go through", "Your access continues while Stripe, our payment processor, tries your card again",
				"update your card"}},
	} {
		m := all[tc.name]
		if m.Subject != tc.subject {
			t.Errorf("%s: subject %q", tc.name, m.Subject)
		}
		visible := visibleText(m.HTML)
		for _, s := range append(tc.says, tc.link, "— 42 Sisters AI") {
			if !strings.Contains(m.Text, s) || !strings.Contains(visible, s) {
				t.Errorf("%s: a part lacks %q", tc.name, s)
			}
		}
		if !strings.Contains(m.Text, "\n\n"+tc.link+"\n\n") && !strings.Contains(m.Text, "Chat page: "+tc.link+"\n\n") {
			t.Errorf("%s: the link is not on a line of its own:\n%s", tc.name, m.Text)
		}
		if !strings.Contains(m.HTML, `<a href="`+tc.link+`"`) {
			t.Errorf("%s: the HTML does not link %s", tc.name, tc.link)
		}
		if strings.Contains(m.Text+m.HTML, "billing.stripe.com") {
			t.Errorf("%s: links to a portal session", tc.name)
		}
	}
	if m, err := ChatSignIn(DefaultBrand(), sampleSignInURL, 30*time.Minute); err != nil || !strings.Contains(m.Text, "next 30 minutes") {
		t.Errorf("a 30-minute link: %v\n%s", err, m.Text)
	}
	for _, bad := range []string{"javascript:alert(1)", "/chat/signin?token=x", "https://42sisters.ai/chat/signin?token=a b"} {
		if _, err := ChatSignIn(DefaultBrand(), bad, 15*time.Minute); err == nil {
			t.Errorf("a sign-in email linking %q was rendered", bad)
		}
		if _, err := ChatPaymentFailed(DefaultBrand(), bad); err == nil {
			t.Errorf("a failed renewal linking %q was rendered", bad)
		}
	}
	if _, err := ChatSignIn(DefaultBrand(), sampleSignInURL, 0); err == nil {
		t.Error("a sign-in email for a link valid for no time was rendered")
	}
}
