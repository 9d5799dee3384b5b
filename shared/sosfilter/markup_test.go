package sosfilter

import (
	"testing"

	"42sisters.ai/oracle/shared/oracle"
)

// The model's text without markup: what a reader of the rendered text
// sees, and what gate 1 reads.
func TestUnmarked(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"AI<b></b>ON agrees.", "AION agrees."},
		{"AI&#79;N and T&#x4D;M.", "AION and TMM."},
		{"AI&lt;b&gt;&lt;/b&gt;ON", "AION"},
		{"AI&amp;#79;N", "AION"},
		{"G<!-- x -->LOSS", "GLOSS"},
		{`<span class="x">Strong</span> demand &amp; fair margins.`, "Strong demand & fair margins."},
		{"A <5% margin, R&D, AT&T, x < y > z, &copy without a semicolon.", "A <5% margin, R&D, AT&T, x < y > z, &copy without a semicolon."},
		{"a <b\nc> d", "a <b\nc> d"},
		{"&nosuchname; stays", "&nosuchname; stays"},
		{"Plain text.", "Plain text."},
	} {
		if got := Unmarked(tc.in); got != tc.want {
			t.Errorf("Unmarked(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	a := oracle.Analysis{Summary: "<b>Fine</b>.", Breakdown: map[string]oracle.DimensionNote{"Stability": {Analysis: "AI<i></i>ON"}},
		Strategy: &oracle.Strategy{NextStep: "x", Alternative: "y &amp; z", Tests: []string{"<p>t</p>"}}}
	got := UnmarkedAnalysis(a)
	if got.Summary != "Fine." || got.Breakdown["Stability"].Analysis != "AION" || got.Strategy.Alternative != "y & z" || got.Strategy.Tests[0] != "t" {
		t.Fatalf("UnmarkedAnalysis: %+v %+v", got, got.Strategy)
	}
	if a.Summary != "<b>Fine</b>." || a.Strategy.Tests[0] != "<p>t</p>" {
		t.Fatal("UnmarkedAnalysis modified its argument")
	}
	if got := UnmarkedAnalysis(oracle.Analysis{Summary: "<img alt=x>"}); got.Summary != "<img alt=x>" {
		t.Fatalf("a summary of markup alone became %q", got.Summary)
	}
}

// Markup between a term's letters does not hide the term from gate 1 once
// the text is read without it, and Text on the marked-up text alone does
// not let it through either way.
func TestMarkupBetweenLettersIsReadWithoutIt(t *testing.T) {
	f := newFilter(t)
	for _, in := range []string{"AI<b></b>ON agrees.", "AI&#79;N agrees.", "G<i>L</i>OSS agrees.", "C&#83;DM agrees."} {
		if r := f.Text(Unmarked(in)); r.Action == Pass {
			t.Errorf("%q: %s", in, r.Action)
		}
	}
}
