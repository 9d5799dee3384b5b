package oracle_test

import (
	"testing"

	"42sisters.ai/oracle/shared/oracle"
)

// TestASessionIsPricedAsItsTier: only the tier's fixed subtotal in the
// tier's currency counts as priced as the tier; what the customer paid
// after a discount (the total) does not matter.
func TestASessionIsPricedAsItsTier(t *testing.T) {
	for _, c := range []struct {
		name string
		s    oracle.Session
		want bool
	}{
		{"quick at C$1", oracle.Session{Tier: oracle.TierQuick, AmountSubtotal: 100, AmountTotal: 100, Currency: "cad"}, true},
		{"strategy at C$25, discounted", oracle.Session{Tier: oracle.TierStrategy, AmountSubtotal: 2500, AmountTotal: 2000, Currency: "cad"}, true},
		{"strategy at C$1", oracle.Session{Tier: oracle.TierStrategy, AmountSubtotal: 100, AmountTotal: 100, Currency: "cad"}, false},
		{"full in US dollars", oracle.Session{Tier: oracle.TierFull, AmountSubtotal: 500, AmountTotal: 500, Currency: "usd"}, false},
		{"no subtotal", oracle.Session{Tier: oracle.TierQuick, AmountTotal: 100, Currency: "cad"}, false},
	} {
		if got := c.s.PricedAsTier(); got != c.want {
			t.Errorf("%s: PricedAsTier() = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestWhatAClaimOwes: a paid order is owed its generation, a dropped one
// its notice, and a HELD one its alert and notice only when its claim held
// it for its amount; a crosscheck's hold, and every other state, owe
// nothing at a claim.
func TestWhatAClaimOwes(t *testing.T) {
	for _, c := range []struct {
		o    oracle.Order
		want bool
	}{
		{oracle.Order{Status: oracle.StatusPaid}, true},
		{oracle.Order{Status: oracle.StatusDropped}, true},
		{oracle.Order{Status: oracle.StatusHeld, Failure: oracle.HoldAmountMismatch}, true},
		{oracle.Order{Status: oracle.StatusHeld, Failure: "crosscheck_field_missing"}, false},
		{oracle.Order{Status: oracle.StatusAwaitingPayment}, false},
		{oracle.Order{Status: oracle.StatusReady}, false},
		{oracle.Order{Status: oracle.StatusQuarantined}, false},
	} {
		if got := c.o.OwesJob(); got != c.want {
			t.Errorf("%s (%q): OwesJob() = %v, want %v", c.o.Status, c.o.Failure, got, c.want)
		}
	}
}
