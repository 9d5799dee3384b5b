package oracle

import "testing"

func TestTierPrices(t *testing.T) {
	// VC-1 and invariant 1: the hard-coded CAD cent prices.
	want := map[Tier]int64{TierQuick: 100, TierFull: 500, TierStrategy: 2500}
	for _, tier := range Tiers() {
		if got := tier.PriceCents(); got != want[tier] {
			t.Errorf("%s costs %d cents, want %d", tier, got, want[tier])
		}
	}
	if len(Tiers()) != len(want) {
		t.Fatalf("got %d tiers", len(Tiers()))
	}
}

func TestParseTier(t *testing.T) {
	for _, s := range []string{"quick", "full", "strategy"} {
		if _, err := ParseTier(s); err != nil {
			t.Errorf("ParseTier(%q): %v", s, err)
		}
	}
	for _, s := range []string{"", "premium", "QUICK", " quick", "quick ", "strategy\x00"} {
		_, err := ParseTier(s)
		if ErrorCode(err) != CodeInvalid {
			t.Errorf("ParseTier(%q) = %v, want an invalid error", s, err)
		}
	}
}

func TestShortID(t *testing.T) {
	if got := ShortID("cs_live_a1b2c3d4e5f6g7h8"); got != "cs_live_a1b2" {
		t.Fatalf("ShortID = %q", got)
	}
	if got := ShortID("short"); got != "short" {
		t.Fatalf("ShortID = %q", got)
	}
}

func TestErrorMessageHidesInternals(t *testing.T) {
	if got := ErrorMessage(Wrap(CodeInternal, nil, "dynamodb table xyz unreachable")); got != "internal error" {
		t.Fatalf("internal message leaked: %q", got)
	}
	if got := ErrorMessage(Errorf(CodeInvalid, "tier is required")); got != "tier is required" {
		t.Fatalf("client message lost: %q", got)
	}
}
