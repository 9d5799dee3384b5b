package stripex_test

import (
	"testing"
	"time"

	"42sisters.ai/oracle/shared/stripex"
)

func TestSmokeSignature(t *testing.T) {
	body := []byte(`{"tier":"quick"}`)
	now := time.Now()
	good := stripex.SignSmoke(body, "whsec_test", now)
	cases := []struct {
		name, header, secret string
		body                 []byte
		ok                   bool
	}{
		{"signed", good, "whsec_test", body, true},
		{"another secret", good, "whsec_other", body, false},
		{"another body", good, "whsec_test", []byte(`{"tier":"strategy"}`), false},
		{"too old", stripex.SignSmoke(body, "whsec_test", now.Add(-stripex.SmokeTolerance-time.Minute)), "whsec_test", body, false},
		{"no header", "", "whsec_test", body, false},
		{"no secret configured", good, "", body, false},
		{"garbage", "t=1,v1=zz", "whsec_test", body, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := stripex.VerifySmoke(c.body, c.header, c.secret); (err == nil) != c.ok {
				t.Errorf("VerifySmoke: %v, want ok=%v", err, c.ok)
			}
		})
	}
}

func TestSmokeSecrets(t *testing.T) {
	cases := []struct {
		name                string
		main, test, hook    string
		wantKey, wantSecret string
		ok                  bool
	}{
		{"test deployment", "sk_test_a", "", "whsec_test", "sk_test_a", "whsec_test", true},
		{"live with test mode", "sk_live_a", "rk_test_b", "whsec_test", "rk_test_b", "whsec_test", true},
		{"live without a test key", "sk_live_a", "", "whsec_test", "", "", false},
		{"live without a test secret", "sk_live_a", "sk_test_b", "", "", "", false},
		{"a live key as the test key", "sk_live_a", "sk_live_b", "whsec_test", "", "", false},
		{"test key without a secret", "sk_test_a", "", "", "", "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			key, secret, ok := stripex.SmokeSecrets(c.main, c.test, c.hook)
			if key != c.wantKey || secret != c.wantSecret || ok != c.ok {
				t.Errorf("SmokeSecrets = %q %q %v, want %q %q %v", key, secret, ok, c.wantKey, c.wantSecret, c.ok)
			}
		})
	}
}
