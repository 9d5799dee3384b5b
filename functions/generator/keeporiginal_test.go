package main

import (
	"context"
	"strings"
	"testing"

	fakegemini "42sisters.ai/oracle/infra/fakes/fakegemini"
	"42sisters.ai/oracle/shared/oracle"
)

// The first verdict is kept past its order only where it can be read: a
// Stripe session's, which the result page's landing claims again once its
// order is gone; an agent's order never comes back so (the verdict
// function answers an unknown agent order 404), and its verdict is not
// written to the Ledger.
func TestTheFirstVerdictIsKeptOnlyForAStripeOrder(t *testing.T) {
	for _, tc := range []struct {
		name string
		id   string
		kept bool
	}{
		{"a Stripe order", "cs_test_keepOriginalStripe0001", true},
		{"an agent's order", "x402_test_" + strings.Repeat("K", 32), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			if tc.kept {
				e.paid(tc.id, oracle.TierQuick, "Should I open a bakery on my street?")
			} else {
				e.agentPaid(tc.id, oracle.TierQuick)
			}
			e.control(fakegemini.Scenario{Verdict: oracle.VerdictGreen})
			if failed := e.run(record("k1", job(tc.id), 1)); len(failed) != 0 {
				t.Fatal("the item failed")
			}
			o := e.order(tc.id)
			if o.Status != oracle.StatusReady {
				t.Fatalf("order %+v", o)
			}
			got, kept, err := e.ledger.Original(context.Background(), tc.id)
			if err != nil || kept != tc.kept {
				t.Fatalf("original kept %v (%v), want %v", kept, err, tc.kept)
			}
			if kept && (got.Verdict != o.VerdictLabel || got.Hash != o.VerdictHash) {
				t.Fatalf("original %+v, want the order's %s %s", got, o.VerdictLabel, o.VerdictHash)
			}
		})
	}
}
