package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"42sisters.ai/oracle/shared/httpapi"
)

// CookieName is the session cookie's name.
const CookieName = "oracle_chat"

// SessionTTL is how long a session lasts from its sign-in.
const SessionTTL = 30 * 24 * time.Hour

// MinCookieKey is the shortest cookie key accepted: 256 bits.
const MinCookieKey = 32

// clockSkew is how far in the future a cookie's issue time may be (another
// instance's clock) before it is refused as forged.
const clockSkew = time.Minute

// errNoSession: no cookie, or one this service did not sign, or one that
// has expired or was signed out.
var errNoSession = errors.New("no valid session")

// accountForm is an account's name (audit.Hasher.Email).
var accountForm = regexp.MustCompile(`^hmac-sha256:[0-9a-f]{32}$`)

// session is a signed-in person: their account and when they signed in.
type session struct {
	Account string
	Issued  time.Time
}

// sign is the cookie's value for s: the account, the issue time in unix
// milliseconds and their HMAC-SHA-256 under key, dot-separated.
func sign(key []byte, s session) string {
	payload := s.Account + "." + strconv.FormatInt(s.Issued.UnixMilli(), 10)
	return payload + "." + mac(key, payload)
}

func mac(key []byte, payload string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(payload))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// verify reads a cookie's value: its signature checked in constant time,
// its age within SessionTTL at now.
func verify(key []byte, value string, now time.Time) (session, error) {
	i := strings.LastIndexByte(value, '.')
	if i < 0 {
		return session{}, errNoSession
	}
	payload, sum := value[:i], value[i+1:]
	if !hmac.Equal([]byte(sum), []byte(mac(key, payload))) {
		return session{}, errNoSession
	}
	account, ms, ok := strings.Cut(payload, ".")
	n, err := strconv.ParseInt(ms, 10, 64)
	if !ok || err != nil || !accountForm.MatchString(account) {
		return session{}, errNoSession
	}
	issued := time.UnixMilli(n).UTC()
	if issued.After(now.Add(clockSkew)) || !now.Before(issued.Add(SessionTTL)) {
		return session{}, errNoSession
	}
	return session{Account: account, Issued: issued}, nil
}

// cookieOf returns the request's session cookie value, or "".
func cookieOf(req httpapi.Request) string {
	lines := req.Cookies
	if h := httpapi.Header(req, "Cookie"); h != "" {
		lines = append(lines, h)
	}
	for _, line := range lines {
		cs, err := http.ParseCookie(line)
		if err != nil {
			continue
		}
		for _, c := range cs {
			if c.Name == CookieName {
				return c.Value
			}
		}
	}
	return ""
}

// setCookie is the Set-Cookie of a new session.
func setCookie(value string) string {
	return (&http.Cookie{Name: CookieName, Value: value, Path: "/", MaxAge: int(SessionTTL / time.Second),
		HttpOnly: true, Secure: true, SameSite: http.SameSiteLaxMode}).String()
}

// clearCookie is the Set-Cookie that ends a session in the browser.
func clearCookie() string {
	return (&http.Cookie{Name: CookieName, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: true, SameSite: http.SameSiteLaxMode}).String()
}
