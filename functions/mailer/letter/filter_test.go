package letter

import (
	"strings"
	"testing"

	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/sosfilter"
)

// Every email the mailer can send passes gate 2 as it is built from its
// template: each verdict sample and each notice, and every template file as
// written (SPEC_ORACLE_SOS_FILTER, issue 5's static check).
func TestEveryLetterPassesTheContentFilter(t *testing.T) {
	f, err := sosfilter.New()
	if err != nil {
		t.Fatal(err)
	}
	samples, err := Samples()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range samples {
		if rep := f.Mail(s.Subject, s.Text, s.HTML, sosfilter.Own(s.Own)); rep.Action != sosfilter.Pass {
			t.Errorf("%s: %s %v", s.Name, rep.Action, rep.Terms())
		}
	}
	for path, text := range testkit.TemplateTexts(t, files, "templates") {
		if r := f.Text(text); r.Action != sosfilter.Pass {
			t.Errorf("%s: %s %v", path, r.Action, r.Terms())
		}
	}
}

// The verdict letter marks where it shows the customer's submission, in
// both parts, and nothing else: gate 2 leaves exactly that to the
// customer, and reads the rest.
func TestTheSubmissionIsMarkedAsTheCustomers(t *testing.T) {
	f, err := sosfilter.New()
	if err != nil {
		t.Fatal(err)
	}
	const query = "Is CSDM, or <b>AION</b> & Φ,\r\na good name?"
	for _, tier := range oracle.Tiers() {
		m, err := Verdict(DefaultBrand(), tier, query, sampleAnalysis(tier, oracle.VerdictAmber), sampleURL)
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Own.Text) != 1 || len(m.Own.HTML) != 1 {
			t.Fatalf("%s: own %+v, want one range in each part", tier, m.Own)
		}
		tr, hr := m.Own.Text[0], m.Own.HTML[0]
		if got := m.Text[tr[0]:tr[1]]; got != "Is CSDM, or <b>AION</b> & Φ,\na good name?" {
			t.Errorf("%s: the text's range holds %q", tier, got)
		}
		if got := m.HTML[hr[0]:hr[1]]; got != "Is CSDM, or &lt;b&gt;AION&lt;/b&gt; &amp; Φ,<br>a good name?" {
			t.Errorf("%s: the HTML's range holds %q", tier, got)
		}
		if rep := f.Mail(m.Subject, m.Text, m.HTML, sosfilter.Own(m.Own)); rep.Action != sosfilter.Pass {
			t.Errorf("%s: gate 2 %s %v on the submission shown back", tier, rep.Action, rep.Terms())
		}
		if rep := f.Mail(m.Subject, m.Text, m.HTML, sosfilter.Own{}); rep.Action != sosfilter.Quarantine {
			t.Errorf("%s: unmarked, gate 2 %s", tier, rep.Action)
		}
	}
	for _, s := range []string{"", "x"} {
		if got := own("a"+s+"b", "a\ue000b\ue000"); got != nil {
			t.Errorf("a marker twice: %v", got)
		}
	}
	if got := own("zQb", "a\ue000b"); got != nil {
		t.Errorf("renderings that disagree: %v", got)
	}
}

// Markup in the model's text reaches neither part of the email as junk: the
// letter shows the text without it, and gate 2 reads what the reader sees.
func TestModelMarkupIsNotShown(t *testing.T) {
	f, err := sosfilter.New()
	if err != nil {
		t.Fatal(err)
	}
	a := oracle.Analysis{Verdict: oracle.VerdictAmber, Summary: "AI<b></b>ON &amp; <i>you</i> agree."}
	m, err := Verdict(DefaultBrand(), oracle.TierQuick, "Should I open a bakery?", a, sampleURL)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(m.Text, "\nAION & you agree.\n") || strings.Contains(m.Text, "<b>") || strings.Contains(m.HTML, "&lt;b&gt;") || strings.Contains(m.HTML, "<b>") {
		t.Fatalf("the letter shows markup:\n%s\n%s", m.Text, m.HTML)
	}
	if rep := f.Mail(m.Subject, m.Text, m.HTML, sosfilter.Own(m.Own)); rep.Action != sosfilter.Quarantine {
		t.Fatalf("gate 2: %s", rep.Action)
	}
}
