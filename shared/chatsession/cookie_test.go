package chatsession

import (
	"strings"
	"testing"
	"time"

	"42sisters.ai/oracle/shared/httpapi"
)

const testKey = "a cookie key of thirty-two bytes or more, for tests"

// FuzzSessionCookie reads arbitrary Cookie lines as the API does
// (CookieValue, then Verify): nothing panics, and a session comes only from
// a value this service signed, for an account's name, within its 30 days.
func FuzzSessionCookie(f *testing.F) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	account := "hmac-sha256:0123456789abcdef0123456789abcdef"
	good := Sign([]byte(testKey), Session{Account: account, Issued: now.Add(-time.Hour)})
	f.Add(CookieName + "=" + good)
	f.Add("a=b; " + CookieName + "=" + good + "; c=d")
	f.Add(CookieName + `="` + good + `"`)
	f.Add(CookieName + "=" + strings.Replace(good, account, "hmac-sha256:ffffffffffffffffffffffffffffffff", 1))
	f.Add(CookieName + "=" + Sign([]byte("another key of thirty-two bytes or more"), Session{Account: account, Issued: now}))
	f.Add(CookieName + "=" + Sign([]byte(testKey), Session{Account: account, Issued: now.Add(-TTL)}))
	f.Add(CookieName + "=" + Sign([]byte(testKey), Session{Account: "not an account", Issued: now}))
	f.Add(CookieName + "=" + account + ".1.")
	f.Add(CookieName + "=...")
	f.Add(CookieName + "=")
	f.Add("")
	f.Fuzz(func(t *testing.T, line string) {
		for _, r := range []httpapi.Request{{Cookies: []string{line}}, {Headers: map[string]string{"cookie": line}}} {
			value := CookieValue(r)
			s, err := Verify([]byte(testKey), value, now)
			if err != nil {
				continue
			}
			if value != Sign([]byte(testKey), s) || !accountForm.MatchString(s.Account) ||
				s.Issued.After(now.Add(clockSkew)) || !now.Before(s.Issued.Add(TTL)) {
				t.Fatalf("a session %+v from %q, which this service did not sign so", s, value)
			}
		}
	})
}

func TestVerify(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	account := "hmac-sha256:0123456789abcdef0123456789abcdef"
	good := Sign([]byte(testKey), Session{Account: account, Issued: now.Add(-time.Hour)})
	cases := []struct {
		name, value string
		ok          bool
	}{
		{"signed here", good, true},
		{"from the near future (another clock)", Sign([]byte(testKey), Session{Account: account, Issued: now.Add(clockSkew)}), true},
		{"from further in the future", Sign([]byte(testKey), Session{Account: account, Issued: now.Add(clockSkew + time.Millisecond)}), false},
		{"at its thirty days", Sign([]byte(testKey), Session{Account: account, Issued: now.Add(-TTL)}), false},
		{"another key", Sign([]byte("another key of thirty-two bytes or more"), Session{Account: account, Issued: now}), false},
		{"another account, this signature", strings.Replace(good, "0123", "4567", 1), false},
		{"not an account's name", Sign([]byte(testKey), Session{Account: "someone", Issued: now}), false},
		{"no signature", account + ".1", false},
		{"empty", "", false},
	}
	for _, c := range cases {
		s, err := Verify([]byte(testKey), c.value, now)
		if (err == nil) != c.ok || (c.ok && s.Account != account) {
			t.Errorf("%s: %+v %v, want ok=%v", c.name, s, err, c.ok)
		}
	}
}
