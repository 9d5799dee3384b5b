package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"42sisters.ai/oracle/shared/httpapi"
)

// The samples in events/webhook stay valid: each one, re-signed the way
// `invoke` re-signs it, gets the answer its name promises.
func TestSampleEvents(t *testing.T) {
	e := newEnv(t, Secrets{Test: testSecret})
	want := map[string]int{
		"checkout-session-completed.json":        200,
		"checkout-session-completed-unpaid.json": 200,
		"async-payment-succeeded.json":           200,
		"payment-link-idea.json":                 200,
		"silent-drop-missing-tier.json":          200,
		"unsigned.json":                          400,
		// An endpoint in another API version (WEBHOOK_API_VERSION).
		"api-version-mismatch.json": 409,
		// Stripe's money events, for the sample session's payment intent
		// (pi_sample): answered whether or not its order exists yet.
		"charge-refunded.json":           200,
		"charge-dispute-created.json":    200,
		"radar-early-fraud-warning.json": 200,
		// Sisters Chat's subscription events, for an account no one
		// signed up locally: CHAT_SUBSCRIPTION_UNKNOWN, answered 200.
		"customer-subscription-updated.json": 200,
		"invoice-payment-failed.json":        200,
	}
	files, err := filepath.Glob("../../events/webhook/*.json")
	if err != nil || len(files) != len(want) {
		t.Fatalf("samples %v %v: every sample needs an expectation here", files, err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var r httpapi.Request
			if err := json.Unmarshal(b, &r); err != nil {
				t.Fatal(err)
			}
			if _, ok := r.Headers["stripe-signature"]; ok {
				r.Headers["stripe-signature"] = sign([]byte(r.Body), testSecret, time.Now())
			}
			if resp := e.deliver(r); resp.StatusCode != want[filepath.Base(file)] {
				t.Fatalf("got %s", status(resp))
			}
		})
	}
}
