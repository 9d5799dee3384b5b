// Package oracle is the dependency-free domain of the verdict service: tiers
// and their fixed prices, verdict tokens, order states, the query's journey
// through Stripe metadata, and the error codes every function maps to HTTP.
package oracle

import (
	"fmt"
	"strings"
)

// Tier is a product tier key as it appears in requests and Stripe metadata.
type Tier string

// The three paid tiers.
const (
	TierQuick    Tier = "quick"
	TierFull     Tier = "full"
	TierStrategy Tier = "strategy"
)

// Currency is the only currency the service charges in (ISO 4217, lower case
// as Stripe writes it).
const Currency = "cad"

type tierInfo struct {
	name  string
	cents int64
	// usdc is the agent rail's price in USDC's atomic units (6 decimals).
	usdc int64
}

// tiers is the hard-coded price table (SPEC_ORACLE_PRODUCT_TIERS invariant 1).
// It is unexported and copied nowhere, so nothing at run time can alter it.
var tiers = map[Tier]tierInfo{
	TierQuick:    {name: "Quick Take", cents: 100, usdc: 50_000},
	TierFull:     {name: "Full Breakdown", cents: 500, usdc: 250_000},
	TierStrategy: {name: "Strategy Session", cents: 2500, usdc: 1_000_000},
}

// Sisters Chat is sold beside the tiers as a subscription at a price fixed
// here as theirs are: C$5.00 (ChatPriceCents, in Currency) every month.
// Stripe holds it as a recurring Price found by ChatPriceLookupKey, which
// `make chat-price` creates; a Price found there with another amount,
// currency or interval is refused, never charged.
const (
	ChatPlanName             = "Sisters Chat"
	ChatPriceCents     int64 = 500
	ChatInterval             = "month"
	ChatPriceLookupKey       = "sisters_chat_monthly_cad"
)

// Tiers lists the tiers in price order.
func Tiers() []Tier { return []Tier{TierQuick, TierFull, TierStrategy} }

// ParseTier returns the tier for an exact, canonical key. Anything else,
// including different case or surrounding spaces, is invalid: the key selects
// the price, the prompt and the mail format, so it is never guessed.
func ParseTier(s string) (Tier, error) {
	t := Tier(s)
	if _, ok := tiers[t]; !ok {
		return "", Errorf(CodeInvalid, "unknown tier %q: choose quick, full or strategy", Clip(s, 32))
	}
	return t, nil
}

// PriceCents is the tier's fixed price in CAD cents (0 for an invalid tier).
func (t Tier) PriceCents() int64 { return tiers[t].cents }

// USDCDecimals is the number of decimals of USDC: one USDC is 10^6 atomic
// units, the unit x402 payments are priced in.
const USDCDecimals = 6

// PriceUSDCAtomic is the tier's fixed price on the agent rail in USDC's
// atomic units (0.05, 0.25 and 1.00 USDC; 0 for an invalid tier).
func (t Tier) PriceUSDCAtomic() int64 { return tiers[t].usdc }

// FormatUSDC writes USDC's atomic units as USDC, with two decimals or as
// many as it needs: 50000 is "0.05", 12345 is "0.012345", -1000000 "-1.00".
func FormatUSDC(atomic int64) string {
	sign := ""
	if atomic < 0 {
		sign, atomic = "-", -atomic
	}
	frac := strings.TrimRight(fmt.Sprintf("%06d", atomic%1_000_000), "0")
	for len(frac) < 2 {
		frac += "0"
	}
	return fmt.Sprintf("%s%d.%s", sign, atomic/1_000_000, frac)
}

// Name is the tier's customer-facing product name.
func (t Tier) Name() string { return tiers[t].name }

func (t Tier) String() string { return string(t) }

// Clip shortens untrusted text before it is echoed in an error or alert.
func Clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

// FormatAmount renders cents and a currency as the specs write amounts in
// alerts, for example "100_CAD".
func FormatAmount(cents int64, currency string) string {
	if currency == "" {
		currency = "unknown"
	}
	return fmt.Sprintf("%d_%s", cents, strings.ToUpper(currency))
}

// SupportAddress is where customers are told to write, and the emails'
// sender, unless SUPPORT_EMAIL and MAIL_FROM say otherwise.
const SupportAddress = "oracle@42sisters.ai"

// MinRetentionDays is the shortest order retention: Stripe retries a webhook
// for up to 3 days, and an order must outlive every retry of its events, or
// a late one would claim the deleted order again.
const MinRetentionDays = 4
