package oracle

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// TestIDFormsAreTheRegexps: ValidSessionID, IsAgentOrder and IsName, which
// read ids by hand, answer as the regular expressions they stand for, on
// ids near their bounds, with either mode, and spoilt.
func TestIDFormsAreTheRegexps(t *testing.T) {
	session := regexp.MustCompile(`^cs_(test|live)_[A-Za-z0-9]{1,250}$`)
	agent := regexp.MustCompile(`^x402_(test|live)_[A-Za-z0-9]{32}$`)
	name := regexp.MustCompile(`^(?:cs_(?:live|test)_|x402_(?:live|test)_)[A-Za-z0-9]{16}$`)
	rng := rand.New(rand.NewPCG(3, 4))
	const alnum = "abcXYZ0189"
	prefixes := []string{"cs_test_", "cs_live_", "x402_test_", "x402_live_", "cs_", "cs_prod_", "x402_", "x402_test", "", "ch_"}
	lengths := []int{0, 1, 2, 15, 16, 17, 31, 32, 33, 249, 250, 251}
	for range 20000 {
		var b strings.Builder
		b.WriteString(prefixes[rng.IntN(len(prefixes))])
		n := lengths[rng.IntN(len(lengths))]
		for range n {
			b.WriteByte(alnum[rng.IntN(len(alnum))])
		}
		id := b.String()
		if len(id) > 0 && rng.IntN(4) == 0 {
			at := rng.IntN(len(id))
			id = id[:at] + []string{"_", "-", "é", "\n", "\xff"}[rng.IntN(5)] + id[at+1:]
		}
		if got, want := ValidSessionID(id), session.MatchString(id) || agent.MatchString(id); got != want {
			t.Fatalf("ValidSessionID(%q) = %v, the regular expressions say %v", id, got, want)
		}
		if got, want := IsAgentOrder(id), agent.MatchString(id); got != want {
			t.Fatalf("IsAgentOrder(%q) = %v, the regular expression says %v", id, got, want)
		}
		if got, want := IsName(id), name.MatchString(id); got != want {
			t.Fatalf("IsName(%q) = %v, the regular expression says %v", id, got, want)
		}
	}
}
