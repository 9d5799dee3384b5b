package chatsession

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"42sisters.ai/oracle/shared/httpapi"
)

const (
	token  = "q3Zx9vB0kLm4Rt7YwE2sN8aHc5Jd1Pf6Gu0Ii3Oo9Kl"
	site   = "https://chat.example.test"
	formCT = "application/x-www-form-urlencoded"
)

func formRequest(contentType, origin, fetchSite, body string, encoded bool) httpapi.Request {
	var r httpapi.Request
	r.Headers = map[string]string{"content-type": contentType, "origin": origin, "sec-fetch-site": fetchSite}
	r.Body, r.IsBase64Encoded = body, encoded
	return r
}

func TestFromSite(t *testing.T) {
	cases := []struct {
		origin, fetchSite string
		want              bool
	}{
		{site, "", true},
		{site, "cross-site", true}, // the Origin is the browser's own
		{"", "same-origin", true},
		{"null", "same-origin", true},
		{"null", "cross-site", false},
		{"null", "", false},
		{"https://evil.example", "same-origin", false},
		{"", "", false},
		{"", "same-site", false},
	}
	for _, c := range cases {
		if got := FromSite(formRequest(formCT, c.origin, c.fetchSite, "", false), site); got != c.want {
			t.Errorf("Origin %q, Sec-Fetch-Site %q: %v, want %v", c.origin, c.fetchSite, got, c.want)
		}
	}
}

func TestFormToken(t *testing.T) {
	cases := []struct {
		name, contentType, body string
		encoded                 bool
		err                     error
	}{
		{"the page's form", formCT, "token=" + token, false, nil},
		{"with a charset", formCT + "; charset=utf-8", "token=" + token, false, nil},
		{"base64 by the gateway", formCT, base64.StdEncoding.EncodeToString([]byte("token=" + token)), true, nil},
		{"JSON", "application/json", `{"token":"` + token + `"}`, false, ErrFormType},
		{"no type", "", "token=" + token, false, ErrFormType},
		{"two tokens", formCT, "token=" + token + "&token=" + token, false, ErrNoToken},
		{"no token", formCT, "other=1", false, ErrNoToken},
		{"a token's length, not its letters", formCT, "token=" + strings.Repeat("-", TokenLen), false, ErrNoToken},
		{"a bad escape", formCT, "token=%zz", false, ErrNoToken},
		{"too large", formCT, "token=" + token + "&pad=" + strings.Repeat("a", MaxForm), false, ErrFormTooLarge},
	}
	for _, c := range cases {
		got, err := FormToken(formRequest(c.contentType, site, "", c.body, c.encoded))
		if !errors.Is(err, c.err) || (c.err == nil && got != token) || (c.err != nil && got != "") {
			t.Errorf("%s: %q %v, want %v", c.name, got, err, c.err)
		}
	}
}

// FuzzFormToken reads arbitrary sign-in forms: nothing panics, every
// refusal is one of the three, and a token comes out only of a body within
// MaxForm, and only one of a minted token's form.
func FuzzFormToken(f *testing.F) {
	f.Add(formCT, []byte("token="+token), false)
	f.Add(formCT+"; charset=utf-8", []byte(base64.StdEncoding.EncodeToString([]byte("token="+token))), true)
	f.Add(formCT, []byte("token="+token+"&token="+token), false)
	f.Add(formCT, []byte("token=%zz&"), false)
	f.Add(formCT, []byte("token="+strings.Repeat("A", 43)), false)
	f.Add("application/json", []byte(`{"token":"`+token+`"}`), false)
	f.Add("multipart/form-data; boundary=x", []byte("--x\r\nContent-Disposition: form-data; name=\"token\"\r\n\r\n"+token+"\r\n--x--"), false)
	f.Add(formCT, []byte("token="+token+"&pad="+strings.Repeat("a", MaxForm)), false)
	f.Fuzz(func(t *testing.T, contentType string, body []byte, encoded bool) {
		got, err := FormToken(formRequest(contentType, site, "", string(body), encoded))
		if err != nil {
			if got != "" {
				t.Fatalf("%q with %v", got, err)
			}
			if !errors.Is(err, ErrFormType) && !errors.Is(err, ErrFormTooLarge) && !errors.Is(err, ErrNoToken) {
				t.Fatalf("an error of no kind: %v", err)
			}
			return
		}
		if !WellFormed(got) {
			t.Fatalf("the token %q is not of a minted token's form", got)
		}
		raw := body
		if encoded {
			if raw, err = base64.StdEncoding.DecodeString(string(body)); err != nil {
				t.Fatalf("a token out of a body that is not base64: %v", err)
			}
		}
		if len(raw) > MaxForm {
			t.Fatalf("the token %q out of a body of %d bytes", got, len(raw))
		}
	})
}
