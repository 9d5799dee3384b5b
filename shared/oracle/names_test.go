package oracle

import (
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
