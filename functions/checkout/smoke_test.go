package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"42sisters.ai/oracle/infra/fakes/fakestripe"
	"42sisters.ai/oracle/shared/stripex"
)

// TestSmokeCheckoutNeedsItsSignature: a request signed with the test-mode
// signing secret gets a test-mode session flagged smoke and made out to the
// smoke address, from the test key's account, whatever its origin; any
// other signature, or none configured, is refused and reaches no Stripe.
func TestSmokeCheckoutNeedsItsSignature(t *testing.T) {
	const body = `{"tier":"quick","query":"Is the Oracle pipeline operational? This is an automated smoke test."}`
	now := time.Now()
	cases := []struct {
		name       string
		configured bool
		header     string
		want       int
	}{
		{"signed", true, stripex.SignSmoke([]byte(body), "whsec_smoke", now), http.StatusOK},
		{"signed with another secret", true, stripex.SignSmoke([]byte(body), "whsec_other", now), http.StatusForbidden},
		{"signed too long ago", true, stripex.SignSmoke([]byte(body), "whsec_smoke", now.Add(-time.Hour)), http.StatusForbidden},
		{"a malformed signature", true, "v1=abc", http.StatusForbidden},
		{"test mode not configured", false, stripex.SignSmoke([]byte(body), "whsec_smoke", now), http.StatusForbidden},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, "sk_live_main")
			test := fakestripe.New(fakestripe.Options{})
			srv := httptest.NewServer(test)
			t.Cleanup(srv.Close)
			if c.configured {
				f.h.Smoke = &Smoke{Stripe: stripex.New("sk_test_smoke", stripex.Options{BaseURL: srv.URL}), SigningSecret: "whsec_smoke", Email: stripex.SmokeEmail}
			}
			resp := f.call(t, post(body, stripex.SmokeHeader, c.header, "origin", "https://elsewhere.example"))
			if resp.StatusCode != c.want {
				t.Fatalf("status %d %s, want %d", resp.StatusCode, resp.Body, c.want)
			}
			if n := len(f.stripe.SessionIDs()); n != 0 {
				t.Errorf("%d sessions made with the main key, want none", n)
			}
			if c.want != http.StatusOK {
				if n := len(test.SessionIDs()); n != 0 {
					t.Errorf("%d test-mode sessions made, want none", n)
				}
				return
			}
			var out struct {
				URL       string `json:"url"`
				SessionID string `json:"session_id"`
			}
			if err := json.Unmarshal([]byte(resp.Body), &out); err != nil || out.URL == "" {
				t.Fatalf("answer %s", resp.Body)
			}
			s, ok := test.Session(out.SessionID)
			if !ok {
				t.Fatalf("no test-mode session %s", out.SessionID)
			}
			if s.Metadata["smoke"] != "1" || s.Metadata["tier"] != "quick" || s.AmountTotal != 100 || s.CustomerEmail != stripex.SmokeEmail || s.Livemode {
				t.Errorf("session %+v, want a test-mode quick session flagged smoke for %s", s, stripex.SmokeEmail)
			}
		})
	}
}
