package main

import (
	"context"
	"fmt"
	"strings"

	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/coldstart"
)

// wired is what other pieces of Sisters Chat provide this function, as
// the interfaces of deps.go.
type wired struct {
	Replier       Replier
	Subscriptions Subscriptions
	Billing       Billing
}

// wire makes the production Replier (shared/chatreply on the Gemini
// client), Subscriptions (shared/subscription on the chat table) and
// Billing (shared/stripex's subscription Checkout and portal sessions).
// Each is built here, from cfg and the function's AWS configuration and
// alerts, once its package exists; until all three are, the function
// refuses to start rather than serve a chat that cannot answer, bill or
// see a subscription.
func wire(_ context.Context, _ *coldstart.Function, _ settings, _ *alert.Alerter) (wired, error) {
	var w wired
	var missing []string
	if w.Replier == nil {
		missing = append(missing, "the model's replies (Replier)")
	}
	if w.Subscriptions == nil {
		missing = append(missing, "the subscriptions (Subscriptions)")
	}
	if w.Billing == nil {
		missing = append(missing, "Stripe's Checkout and portal (Billing)")
	}
	if len(missing) > 0 {
		return wired{}, fmt.Errorf("not wired in wire.go: %s", strings.Join(missing, ", "))
	}
	return w, nil
}
