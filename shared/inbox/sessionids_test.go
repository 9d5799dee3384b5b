package inbox

import (
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestSessionIDsIsTheRegexp: sessionIDs finds what FindAllString of the
// regular expression it stands for finds, in texts of ids near the run's
// bounds (10 and 250), ids run together, prefixes that start over, and
// other text between them.
func TestSessionIDsIsTheRegexp(t *testing.T) {
	re := regexp.MustCompile(`cs_(?:test|live)_[A-Za-z0-9]{10,250}`)
	rng := rand.New(rand.NewPCG(5, 6))
	parts := []string{"cs_", "cs_test_", "cs_live_", "test_", "cs_cs_test_", " ", "é", "\xff", "-", "_", "Session: "}
	lengths := []int{1, 9, 10, 11, 249, 250, 251, 260, 500}
	for range 5000 {
		var b strings.Builder
		for range 1 + rng.IntN(6) {
			if rng.IntN(2) == 0 {
				b.WriteString(parts[rng.IntN(len(parts))])
			} else {
				for range lengths[rng.IntN(len(lengths))] {
					b.WriteByte("aZ09"[rng.IntN(4)])
				}
			}
		}
		text := b.String()
		if got, want := sessionIDs(text), re.FindAllString(text, -1); !slices.Equal(got, want) {
			t.Fatalf("sessionIDs(%q) = %q, the regular expression finds %q", text, got, want)
		}
	}
}
