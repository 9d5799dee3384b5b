package letter

import (
	"testing"

	"42sisters.ai/oracle/infra/testkit"
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
		if rep := f.Mail(s.Subject, s.Text, s.HTML, ""); rep.Action != sosfilter.Pass {
			t.Errorf("%s: %s %v", s.Name, rep.Action, rep.Terms())
		}
	}
	for path, text := range testkit.TemplateTexts(t, files, "templates") {
		if r := f.Text(text, ""); r.Action != sosfilter.Pass {
			t.Errorf("%s: %s %v", path, r.Action, r.Terms())
		}
	}
}
