package stripex

import (
	"strings"

	"github.com/stripe/stripe-go/v76"
)

// APIVersion is the Stripe API version every Stripe object is read in here:
// the one stripe-go v76 pins and sends with each request it makes, so that
// what the API answers always has this shape. A webhook event has its
// endpoint's version instead (or the account's default when the endpoint
// has none), which is why each endpoint is created with this one
// (docs/deploying.md) and an event in any other is refused (EventVersion).
const APIVersion = stripe.APIVersion

// maxVersionName bounds a version as logs and alerts show it; Stripe's are
// a date with a release name ("2024-09-30.acacia").
const maxVersionName = 40

// EventVersion reports whether v, an event's api_version, is APIVersion,
// and names v for a log line or an alert: "none" when the event has none
// (every event Stripe sends has one), "unrecognised" when it is not of a
// version's form. An event in another version, or in none, has an unknown
// shape: later versions moved fields (a subscription's
// current_period_end onto its items), which would decode as zeros.
func EventVersion(v string) (name string, ok bool) {
	switch {
	case v == APIVersion:
		return v, true
	case v == "":
		return "none", false
	case len(v) > maxVersionName || strings.IndexFunc(v, notVersionRune) >= 0:
		return "unrecognised", false
	}
	return v, false
}

func notVersionRune(r rune) bool {
	return !(r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '-' || r == '.' || r == '_')
}
