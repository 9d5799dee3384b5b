// Package chatsession is Sisters Chat's session as the browser holds it:
// the signed cookie, and the sign-in page's form that starts one. Both
// read what any client sends, so both are fuzzed here, apart from the
// function and the SDKs it links.
package chatsession

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

// TTL is how long a session lasts from its sign-in.
const TTL = 30 * 24 * time.Hour

// MinKey is the shortest cookie key accepted: 256 bits.
const MinKey = 32

// clockSkew is how far in the future a cookie's issue time may be (another
// instance's clock) before it is refused as forged.
const clockSkew = time.Minute

// ErrNoSession: no cookie, or one this service did not sign, or one that
// has expired.
var ErrNoSession = errors.New("no valid session")

// accountForm is an account's name (audit.Hasher.Email).
var accountForm = regexp.MustCompile(`^hmac-sha256:[0-9a-f]{32}$`)

// Session is a signed-in person: their account and when they signed in.
type Session struct {
	Account string
	Issued  time.Time
}

// Sign is the cookie's value for s: the account, the issue time in unix
// milliseconds and their HMAC-SHA-256 under key, dot-separated.
func Sign(key []byte, s Session) string {
	payload := s.Account + "." + strconv.FormatInt(s.Issued.UnixMilli(), 10)
	return payload + "." + mac(key, payload)
}

func mac(key []byte, payload string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(payload))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// Verify reads a cookie's value: its signature checked in constant time,
// its age within TTL at now.
func Verify(key []byte, value string, now time.Time) (Session, error) {
	i := strings.LastIndexByte(value, '.')
	if i < 0 {
		return Session{}, ErrNoSession
	}
	payload, sum := value[:i], value[i+1:]
	if !hmac.Equal([]byte(sum), []byte(mac(key, payload))) {
		return Session{}, ErrNoSession
	}
	account, ms, ok := strings.Cut(payload, ".")
	n, err := strconv.ParseInt(ms, 10, 64)
	if !ok || err != nil || !accountForm.MatchString(account) {
		return Session{}, ErrNoSession
	}
	issued := time.UnixMilli(n).UTC()
	if issued.After(now.Add(clockSkew)) || !now.Before(issued.Add(TTL)) {
		return Session{}, ErrNoSession
	}
	return Session{Account: account, Issued: issued}, nil
}

// CookieValue is the request's session cookie value, or "".
func CookieValue(req httpapi.Request) string {
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

// SetCookie is the Set-Cookie of a new session.
func SetCookie(value string) string {
	return (&http.Cookie{Name: CookieName, Value: value, Path: "/", MaxAge: int(TTL / time.Second),
		HttpOnly: true, Secure: true, SameSite: http.SameSiteLaxMode}).String()
}

// ClearCookie is the Set-Cookie that ends a session in the browser.
func ClearCookie() string {
	return (&http.Cookie{Name: CookieName, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: true, SameSite: http.SameSiteLaxMode}).String()
}
