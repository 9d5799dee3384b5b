package main

import (
	"net/http"
	"testing"
	"time"

	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/oracle"
)

// The operator rolls the webhook signing secret in Stripe's Dashboard and
// puts the new one in its secret in moto's Secrets Manager: events signed
// with it are accepted by a warm container, which reads the secret again
// (at most once a minute) when a signature matches neither secret it
// holds. A secret that did not change still refuses them, and nothing is
// written.
func TestARolledSigningSecretIsReadAgain(t *testing.T) {
	const newSecret = "whsec_rolled_in_the_dashboard"
	cases := []struct {
		name   string
		rotate bool
		after  time.Duration
		want   int
	}{
		{"rolled", true, time.Minute, http.StatusOK},
		{"rolled, read less than a minute ago", true, 59 * time.Second, http.StatusBadRequest},
		{"not rolled", false, time.Minute, http.StatusBadRequest},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, Secrets{Test: testSecret})
			clock := testkit.NewClock(time.Now())
			test := testkit.RotatingSecret(t, "STRIPE_TEST_WEBHOOK_SECRET", testSecret, clock)
			e.h.Signing = &Signing{Test: test.Value}
			if c.rotate {
				test.Rotate(newSecret)
			}
			clock.Add(c.after)
			s := paidSession("cs_test_rolledSecret"+string(rune('a'+i)), oracle.TierQuick, "Open a bakery")
			body := e.event("evt_rolled"+string(rune('a'+i)), audit.EventCheckoutCompleted, s)
			resp := e.deliver(request(body, sign(body, newSecret, time.Now())))
			if resp.StatusCode != c.want {
				t.Fatalf("got %s, want %d", status(resp), c.want)
			}
			if _, ok := e.order(s.ID); ok != (c.want == http.StatusOK) {
				t.Fatalf("order written: %v", ok)
			}
		})
	}
}
