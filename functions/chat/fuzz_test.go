package main

import (
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"42sisters.ai/oracle/shared/chat"
	"42sisters.ai/oracle/shared/chatsession"
	"42sisters.ai/oracle/shared/httpapi"
	"42sisters.ai/oracle/shared/obs"
)

// spendOnce is the chat table as the sign-in button reaches it: one
// working token. Only ConsumeSignIn is on this path (any other method
// panics on the nil Accounts, which the fuzz would report), and without
// moto the fuzzer runs it for as long as it is asked to.
type spendOnce struct {
	Accounts
	token, account string
	spent          []string
}

func (s *spendOnce) ConsumeSignIn(_ context.Context, token string) (string, error) {
	s.spent = append(s.spent, token)
	if token != s.token {
		return "", chat.ErrSignInInvalid
	}
	return s.account, nil
}

// FuzzSignInForm posts arbitrary forms to POST /chat/signin, with any
// Content-Type, Origin and Sec-Fetch-Site: nothing panics, the store is
// asked only about a token of a minted token's form, and a session cookie
// is set only for the working token posted from the site's own page, and
// is one this service signed for its account.
func FuzzSignInForm(f *testing.F) {
	const (
		token   = "q3Zx9vB0kLm4Rt7YwE2sN8aHc5Jd1Pf6Gu0Ii3Oo9Kl"
		account = "hmac-sha256:0123456789abcdef0123456789abcdef"
		ct      = "application/x-www-form-urlencoded"
	)
	f.Add(ct, origin, "same-origin", []byte("token="+token), false)
	f.Add(ct, "", "same-origin", []byte("token="+token), false)
	f.Add(ct, "null", "same-origin", []byte("token="+token), false)
	f.Add(ct, "null", "cross-site", []byte("token="+token), false)
	f.Add(ct, "https://evil.example", "same-origin", []byte("token="+token), false)
	f.Add(ct, "", "", []byte("token="+token), false)
	f.Add(ct+"; charset=utf-8", origin, "", []byte(base64.StdEncoding.EncodeToString([]byte("token="+token))), true)
	f.Add(ct, origin, "", []byte("token="+token+"&token="+token), false)
	f.Add(ct, origin, "", []byte("token=%zz&"), false)
	f.Add(ct, origin, "", []byte("token="+strings.Repeat("A", 43)), false)
	f.Add("application/json", origin, "", []byte(`{"token":"`+token+`"}`), false)
	f.Add("multipart/form-data; boundary=x", origin, "", []byte("--x\r\nContent-Disposition: form-data; name=\"token\"\r\n\r\n"+token+"\r\n--x--"), false)
	f.Add(ct, origin, "", []byte("token="+token+"&pad="+strings.Repeat("a", chatsession.MaxForm)), false)
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, contentType, from, fetchSite string, body []byte, encoded bool) {
		store := &spendOnce{token: token, account: account}
		h := &Handler{Site: defaultSite, Origin: origin, CookieKey: []byte(cookieKey), Accounts: store,
			Log: obs.NewLogger(io.Discard, "ERROR"), Now: func() time.Time { return now }}
		var r httpapi.Request
		r.RawPath = "/chat/signin"
		r.RequestContext.HTTP.Method = http.MethodPost
		r.Headers = map[string]string{"content-type": contentType, "origin": from, "sec-fetch-site": fetchSite}
		r.Body, r.IsBase64Encoded = string(body), encoded
		resp, err := h.Handle(context.Background(), r)
		if err != nil {
			t.Fatalf("an error crossed the handler: %v", err)
		}
		for _, tok := range store.spent {
			if !chatsession.WellFormed(tok) {
				t.Fatalf("the store was asked about %q, not a token's form", tok)
			}
		}
		switch resp.StatusCode {
		case http.StatusSeeOther:
		case http.StatusBadRequest, http.StatusForbidden, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType:
			if len(resp.Cookies) != 0 {
				t.Fatalf("%d with cookies %v", resp.StatusCode, resp.Cookies)
			}
			return
		default:
			t.Fatalf("status %d", resp.StatusCode)
		}
		fromSite := from == origin || (from == "" || from == "null") && fetchSite == "same-origin"
		if !fromSite || len(store.spent) != 1 || store.spent[0] != token || len(resp.Cookies) != 1 {
			t.Fatalf("signed in: from the site %v, spent %q, cookies %v", fromSite, store.spent, resp.Cookies)
		}
		c, err := http.ParseSetCookie(resp.Cookies[0])
		if err != nil {
			t.Fatal(err)
		}
		if s, err := chatsession.Verify([]byte(cookieKey), c.Value, now); err != nil || s.Account != account {
			t.Fatalf("the session cookie %q: %+v %v", c.Value, s, err)
		}
	})
}
