package oracle

import "testing"

func TestDiverge(t *testing.T) {
	tests := []struct {
		original, regenerated Verdict
		want                  string
		notify                bool
	}{
		{VerdictGreen, VerdictGreen, DivergenceNone, false},
		{VerdictNull, VerdictNull, DivergenceNone, false},
		{VerdictGreen, VerdictAmber, DivergenceMinor, false},
		{VerdictAmber, VerdictGreen, DivergenceMinor, false},
		{VerdictAmber, VerdictRed, DivergenceMinor, false},
		{VerdictRed, VerdictAmber, DivergenceMinor, false},
		{VerdictGreen, VerdictRed, DivergenceSignificant, true},
		{VerdictRed, VerdictGreen, DivergenceSignificant, true},
		{VerdictGreen, VerdictNull, DivergenceSignificant, true},
		{VerdictNull, VerdictAmber, DivergenceSignificant, true},
		{VerdictRed, VerdictNull, DivergenceSignificant, true},
		{"", VerdictGreen, DivergenceUnknown, true},
		{"UNKNOWN", VerdictRed, DivergenceUnknown, true},
	}
	for _, tc := range tests {
		got := Diverge(tc.original, tc.regenerated)
		if got != tc.want || NotifyDivergence(got) != tc.notify {
			t.Errorf("Diverge(%q, %q) = %s (notify %v), want %s (notify %v)", tc.original, tc.regenerated, got, NotifyDivergence(got), tc.want, tc.notify)
		}
	}
}
