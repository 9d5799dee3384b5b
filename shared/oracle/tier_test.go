package oracle

import (
	"bytes"
	"crypto/rand"
	"strings"
	"testing"
)

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

func TestFormatUSDC(t *testing.T) {
	for atomic, want := range map[int64]string{
		0: "0.00", 50_000: "0.05", 250_000: "0.25", 1_000_000: "1.00", 12_345: "0.012345", 1_300_000: "1.30",
		3_050_001: "3.050001", -1_000_000: "-1.00", -50_000: "-0.05",
	} {
		if got := FormatUSDC(atomic); got != want {
			t.Errorf("FormatUSDC(%d) = %q, want %q", atomic, got, want)
		}
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

// TestAgentOrderIDs: an agent order's id is 32 base62 characters after its
// mode, drawn uniformly from the random source, names an order wherever a
// session id does, and its name keeps 16 of its random characters.
func TestAgentOrderIDs(t *testing.T) {
	for _, live := range []bool{true, false} {
		id, err := NewAgentOrderID(rand.Reader, live)
		if err != nil {
			t.Fatal(err)
		}
		prefix := map[bool]string{true: "x402_live_", false: "x402_test_"}[live]
		if !strings.HasPrefix(id, prefix) || len(id) != len(prefix)+32 {
			t.Errorf("id %q, want %s and 32 characters", id, prefix)
		}
		if !ValidSessionID(id) || !IsAgentOrder(id) {
			t.Errorf("%q is not taken for an agent order's id", id)
		}
		if got := ShortID(id); got != id[:len(prefix)+16] {
			t.Errorf("ShortID(%q) = %q", id, got)
		}
	}
	// Bytes at or past 248 are drawn again: the first 32 are all 255.
	src := bytes.NewReader(append(bytes.Repeat([]byte{255}, 32), bytes.Repeat([]byte{61}, 32)...))
	id, err := NewAgentOrderID(src, false)
	if err != nil {
		t.Fatal(err)
	}
	if want := "x402_test_" + strings.Repeat("z", 32); id != want {
		t.Errorf("id %q, want %q", id, want)
	}
	if _, err := NewAgentOrderID(bytes.NewReader(nil), true); err == nil {
		t.Error("an exhausted random source made an id")
	}
	for _, bad := range []string{"x402_live_short", "x402_prod_" + strings.Repeat("a", 32), "x402_live_" + strings.Repeat("a", 31) + "-"} {
		if ValidSessionID(bad) || IsAgentOrder(bad) {
			t.Errorf("%q is taken for an order's id", bad)
		}
	}
	if IsAgentOrder("cs_live_a1B2c3D4e5F6g7H8") {
		t.Error("a Checkout Session is taken for an agent order")
	}
}
