package main

import (
	"testing"

	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/sosfilter"
)

// Every word the pages can show a customer passes the content filter
// (SPEC_ORACLE_SOS_FILTER, issue 5's static check): each rendered page as
// HTML, and every template and asset file as written, hidden states and
// script included.
func TestEveryPageTextPassesTheContentFilter(t *testing.T) {
	f, err := sosfilter.New()
	if err != nil {
		t.Fatal(err)
	}
	pages, err := renderAll()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pages {
		if rep := f.Mail("", "", p.Body, sosfilter.Own{}); rep.Action != sosfilter.Pass {
			t.Errorf("%s: %s %v", p.Name, rep.Action, rep.Terms())
		}
	}
	for path, text := range testkit.TemplateTexts(t, files, "templates") {
		if r := f.Text(text); r.Action != sosfilter.Pass {
			t.Errorf("%s: %s %v", path, r.Action, r.Terms())
		}
	}
}
