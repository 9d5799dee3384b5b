package main

import (
	"testing"

	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/sosfilter"
)

// Every text this function can answer with passes the content filter
// (issue 5's static check): each string literal of the handler's package,
// which holds all of its customer-facing error and state messages.
func TestEveryAnswerTextPassesTheContentFilter(t *testing.T) {
	f, err := sosfilter.New()
	if err != nil {
		t.Fatal(err)
	}
	for pos, s := range testkit.StringLiterals(t, ".") {
		if r := f.Text(s, ""); r.Action != sosfilter.Pass {
			t.Errorf("%s: %q: %s %v", pos, s, r.Action, r.Terms())
		}
	}
}
