package chatsession

import (
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"regexp"

	"42sisters.ai/oracle/shared/httpapi"
)

// TokenLen is a sign-in token's length: 43 base62 characters, 256 bits.
// Letters and digits only: a separator would cut the token into short
// words that the content filter reads in the email that carries it.
const TokenLen = 43

// tokenForm is a minted token.
var tokenForm = regexp.MustCompile(`^[0-9A-Za-z]{43}$`)

// WellFormed reports whether token has a minted token's form, without
// reading the store.
func WellFormed(token string) bool { return tokenForm.MatchString(token) }

// MaxForm bounds POST /chat/signin's body: the sign-in page's form is one
// token of 43 characters.
const MaxForm = 1 << 10

// Why a POST /chat/signin is not the sign-in page's form.
var (
	ErrNotFromSite  = errors.New("the sign-in form was posted from another site")
	ErrFormType     = errors.New("the sign-in form is not form-encoded")
	ErrFormTooLarge = errors.New("the sign-in form is too large")
	// ErrNoToken: the form holds no token of a minted token's form, or
	// more than one.
	ErrNoToken = errors.New("the sign-in form holds no token")
)

// FromSite is the CSRF defence of the sign-in form, which a browser posts
// form-encoded, so the API's JSON rule cannot apply: the browser's Origin
// must be the site's (origin); without one, or with "null" (what a browser
// sends for a form posted from a page whose referrer policy is
// no-referrer, as the sign-in page's is), its Sec-Fetch-Site must say
// same-origin. Both headers are the browser's own: no page can set them.
func FromSite(req httpapi.Request, origin string) bool {
	if o := httpapi.Header(req, "Origin"); o != "" && o != "null" {
		return o == origin
	}
	return httpapi.Header(req, "Sec-Fetch-Site") == "same-origin"
}

// FormToken reads the sign-in page's form: form-encoded (ErrFormType),
// at most MaxForm bytes (ErrFormTooLarge), with one token of a minted
// token's form (ErrNoToken).
func FormToken(req httpapi.Request) (string, error) {
	mt, _, err := mime.ParseMediaType(httpapi.Header(req, "Content-Type"))
	if err != nil || mt != "application/x-www-form-urlencoded" {
		return "", ErrFormType
	}
	body, err := httpapi.Body(req, MaxForm)
	if err != nil {
		if httpapi.Status(err) == http.StatusRequestEntityTooLarge {
			return "", fmt.Errorf("%w: %w", ErrFormTooLarge, err)
		}
		return "", fmt.Errorf("%w: %w", ErrNoToken, err)
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrNoToken, err)
	}
	tokens := form["token"]
	if len(tokens) != 1 || !WellFormed(tokens[0]) {
		return "", ErrNoToken
	}
	return tokens[0], nil
}
