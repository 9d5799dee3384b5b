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
	// The agent rail's prices in USDC's atomic units: 0.05, 0.25, 1.00 USDC.
	usdc := map[Tier]int64{TierQuick: 50_000, TierFull: 250_000, TierStrategy: 1_000_000}
	for _, tier := range Tiers() {
		if got := tier.PriceUSDCAtomic(); got != usdc[tier] {
			t.Errorf("%s costs %d USDC units, want %d", tier, got, usdc[tier])
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

// TestShortID: two sessions whose first 12 characters agree (the mode
// prefix and four random ones, as SPEC_ORACLE_CACHE_ALERT cuts them) get
// different names, and a whole Stripe-length id is never the name.
func TestShortID(t *testing.T) {
	const a, b = "cs_live_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8s9T0u1V2w3X4y5Z6a7B8c9D0", "cs_live_a1B2zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz"
	for _, c := range []struct{ id, want string }{
		{a, "cs_live_a1B2c3D4e5F6g7H8"},
		{b, "cs_live_a1B2zzzzzzzzzzzz"},
		{"cs_test_a1B2c3D4e5F6g7H8", "cs_test_a1B2c3D4e5F6g7H8"},
		{"short", "short"},
	} {
		if got := ShortID(c.id); got != c.want {
			t.Errorf("ShortID(%q) = %q, want %q", c.id, got, c.want)
		}
	}
	if ShortID(a) == ShortID(b) {
		t.Error("two sessions that share their first 12 characters share a name")
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
