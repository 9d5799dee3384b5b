package oracle

import (
	"regexp"
	"strings"
	"testing"
)

// NameIDs leaves a name and other text alone and cuts every whole id, of
// either kind and wherever it stands, to its name.
func TestNameIDs(t *testing.T) {
	const card = "cs_test_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8s9T0u1V2w3X4y5Z6"
	const agent = "x402_live_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6"
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"no order here", "no order here"},
		{card, ShortID(card)},
		{agent, ShortID(agent)},
		{"SESSION=" + card + "; and " + agent + ".", "SESSION=" + ShortID(card) + "; and " + ShortID(agent) + "."},
		{"https://x/result/" + card + "?a=1", "https://x/result/" + ShortID(card) + "?a=1"},
		{ShortID(card) + " stays", ShortID(card) + " stays"},
		{"cs_live_short", "cs_live_short"},
		{"cs_live_a1B2c3D4e5F6g7H8i", "cs_live_a1B2c3D4e5F6g7H8"},
		{"xcs_test_" + card[8:] + "-" + agent + "!", "xcs_test_" + card[8:24] + "-" + ShortID(agent) + "!"},
		{agent + card, ShortID(agent) + ShortID(card)},
	} {
		got := NameIDs(c.in)
		if got != c.want {
			t.Errorf("NameIDs(%q) = %q, want %q", c.in, got, c.want)
		}
		if strings.Contains(got, card) || strings.Contains(got, agent) {
			t.Errorf("NameIDs(%q) keeps a whole id", c.in)
		}
	}
}

func TestIsName(t *testing.T) {
	const card = "cs_live_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8s9T0u1V2w3X4y5Z6"
	const agent = "x402_test_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6"
	for _, c := range []struct {
		s    string
		want bool
	}{
		{ShortID(card), true},
		{ShortID(agent), true},
		{card, false},
		{agent, false},
		{"cs_live_a1B2", false},
		{"cs_prod_a1B2c3D4e5F6g7H8", false},
		{"", false},
	} {
		if got := IsName(c.s); got != c.want {
			t.Errorf("IsName(%q) = %v, want %v", c.s, got, c.want)
		}
	}
}

// FuzzValidSessionID holds ValidSessionID to the regular expressions it
// was, whatever the input.
func FuzzValidSessionID(f *testing.F) {
	session := regexp.MustCompile(`^cs_(test|live)_[A-Za-z0-9]{1,250}$`)
	agent := regexp.MustCompile(`^x402_(test|live)_[A-Za-z0-9]{32}$`)
	for _, id := range []string{"cs_test_a1", "cs_live_" + strings.Repeat("Z", 250), "cs_live_" + strings.Repeat("Z", 251), "cs_test_",
		"cs_test_a1\n", "cs_prod_a1", "x402_test_" + strings.Repeat("9", 32), "x402_live_" + strings.Repeat("9", 31), "x402_test_" + strings.Repeat("9", 33),
		"cs_test_é", "", "cs_test_a-b", "x402_test_" + strings.Repeat("é", 16)} {
		f.Add(id)
	}
	f.Fuzz(func(t *testing.T, id string) {
		if got, want := ValidSessionID(id), session.MatchString(id) || agent.MatchString(id); got != want {
			t.Fatalf("%q: %v, the regular expressions say %v", id, got, want)
		}
	})
}
