package letter

import (
	"bytes"
	htmltemplate "html/template"
	"strings"
	"testing"
	"text/template"
	"time"

	"42sisters.ai/oracle/shared/oracle"
)

// reference runs the letters' templates with text/template and
// html/template, which the bootstrap does not link (see package tmplrun).
type reference struct {
	text *template.Template
	html *htmltemplate.Template
}

func (r reference) Execute(name string, data any) (string, error) {
	var b bytes.Buffer
	var err error
	if r.html != nil {
		err = r.html.ExecuteTemplate(&b, name, data)
	} else {
		err = r.text.ExecuteTemplate(&b, name, data)
	}
	return b.String(), err
}

// TestHTMLIsWhatHTMLTemplateWrites: every letter, with the samples' content
// and with hostile text in every field a customer, the model or the brand's
// name fills, renders byte for byte as text/template and html/template
// render it, html/template's contextual escaping included: so the plain
// HTML escaping of tmplrun is all these templates need. The links (checked
// by checkURL) and the support address (the operator's) stay realistic:
// in an href, html/template would percent-encode a quote where tmplrun
// writes an entity, which a browser reads as the same link.
func TestHTMLIsWhatHTMLTemplateWrites(t *testing.T) {
	ours := everyLetter(t)
	saved := [2]runner{texts, pages}
	defer func() { texts, pages = saved[0], saved[1] }()
	texts = reference{text: template.Must(template.New("").Funcs(textFuncs).ParseFS(files, "templates/*.txt"))}
	pages = reference{html: htmltemplate.Must(htmltemplate.New("").Funcs(htmltemplate.FuncMap(htmlFuncs)).ParseFS(files, "templates/*.html"))}
	theirs := everyLetter(t)
	if len(ours) != len(theirs) {
		t.Fatalf("%d letters, html/template %d", len(ours), len(theirs))
	}
	for i := range ours {
		if ours[i] != theirs[i] {
			t.Errorf("letter %d differs from html/template's:\n%s\nwant\n%s", i, ours[i], theirs[i])
		}
	}
}

// everyLetter renders the samples, then every letter again with hostile
// text wherever text is not a checked URL.
func everyLetter(t *testing.T) []string {
	t.Helper()
	all, err := Samples()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range all {
		out = append(out, s.Subject, s.Text, s.HTML)
	}
	const hostile = `<script>alert("x")</script> & &amp; ' " + <!-- --> {{.}} ` + "\x00 \u202e é\nsecond line"
	brand := Brand{Name: hostile, Support: "support+oracle@42sisters.ai", Sender: "oracle@42sisters.ai"}
	a := sampleAnalysis(oracle.TierStrategy, oracle.VerdictAmber)
	a.Summary = hostile
	for name, n := range a.Breakdown {
		n.Analysis = hostile + name
		a.Breakdown[name] = n
	}
	a.Strategy = &oracle.Strategy{NextStep: hostile, Alternative: hostile, Tests: []string{hostile, hostile, hostile}}
	add := func(m Message, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m.Subject, m.Text, m.HTML)
	}
	for _, tier := range oracle.Tiers() {
		add(Verdict(brand, tier, hostile, a, sampleURL+"&tier="+string(tier)))
	}
	add(SilentDropNotice(brand))
	for _, name := range Notices() {
		add(Notice(brand, name, sampleURL))
	}
	add(Autoresponse(brand, hostile))
	add(ChatSignIn(brand, sampleSignInURL, 15*time.Minute))
	add(ChatPaymentFailed(brand, sampleChatURL))
	if !strings.Contains(out[len(out)-1], "&lt;script&gt;") {
		t.Fatal("the hostile brand is not in the last letter")
	}
	return out
}
