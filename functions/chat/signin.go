package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/mail"
	"net/netip"
	"strings"
	"time"
	"unicode/utf8"

	"42sisters.ai/oracle/shared/chat"
	"42sisters.ai/oracle/shared/chatsession"
	"42sisters.ai/oracle/shared/httpapi"
	"42sisters.ai/oracle/shared/mailaddr"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/queue"
)

// MaxAddress is the longest address accepted (RFC 5321's path limit).
const MaxAddress = 254

// signInBody is POST /api/chat/signin's body.
type signInBody struct {
	Email *string `json:"email"`
}

// decode reads a JSON object body into v.
func decode(req httpapi.Request, v any) error {
	body, err := httpapi.Body(req, MaxBody)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(v); err != nil {
		return oracle.Wrap(oracle.CodeInvalid, err, "request body must be a JSON object")
	}
	if dec.More() {
		return oracle.Errorf(oracle.CodeInvalid, "request body must be a single JSON object")
	}
	return nil
}

// validAddress checks an address as a person types it and returns its
// canonical form (shared/mailaddr), the only one the chat keys or mails: one
// plain address, no display name, a dot in its domain, of a sensible
// length. A look-alike of another address (a domain whose Unicode lower
// case names another domain) or a local part beyond ASCII is refused with
// the way to type it.
func validAddress(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", oracle.Errorf(oracle.CodeInvalid, "email is required: the address to send your sign-in link to")
	}
	if !utf8.ValidString(s) || len(s) > MaxAddress {
		return "", oracle.Errorf(oracle.CodeInvalid, "email is not a valid address")
	}
	a, err := mail.ParseAddress(s)
	if err != nil || a.Name != "" || a.Address != s {
		return "", oracle.Errorf(oracle.CodeInvalid, "email is not a valid address")
	}
	canonical, err := mailaddr.Canonical(s)
	switch {
	case errors.Is(err, mailaddr.ErrLookalike), errors.Is(err, mailaddr.ErrLocalNotASCII):
		return "", oracle.Errorf(oracle.CodeInvalid, "email has letters we cannot send to safely: please type the address exactly as your mail provider writes it")
	case err != nil:
		return "", oracle.Errorf(oracle.CodeInvalid, "email is not a valid address")
	}
	return canonical, nil
}

// clientOf names the client a request comes from for its rate limits: an
// IPv4 address, or an IPv6 address's /64, which one subscriber holds whole
// (RFC 6177): keyed on the whole address, one client would be 2^64.
func clientOf(ip string) string {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return ip
	}
	a = a.Unmap()
	if a.Is4() {
		return a.String()
	}
	return netip.PrefixFrom(a, 64).Masked().String()
}

// signInSent is the answer to every accepted sign-in request, whether or
// not the address had an account, and whether or not its own limit let a
// link go: the answer tells no one anything about an address.
var signInSent = map[string]string{"status": "sent"}

// requestSignIn is POST /api/chat/signin {email}: the account is made or
// refreshed and its sign-in email queued (the mailer mints the link).
func (h *Handler) requestSignIn(ctx context.Context, req httpapi.Request) httpapi.Response {
	var body signInBody
	if err := decode(req, &body); err != nil {
		return h.fail(ctx, err)
	}
	if body.Email == nil {
		return h.fail(ctx, oracle.Errorf(oracle.CodeInvalid, "email is required: the address to send your sign-in link to"))
	}
	email, err := validAddress(*body.Email)
	if err != nil {
		return h.fail(ctx, err)
	}
	client := "signin-ip#" + h.Hasher.Hash("client "+clientOf(req.RequestContext.HTTP.SourceIP))
	ok, err := h.Accounts.Allow(ctx, client, h.SignInPerClient)
	if err != nil {
		return h.fail(ctx, unavailable(err))
	}
	if !ok {
		resp := httpapi.JSON(http.StatusTooManyRequests, map[string]string{"error": "too many sign-in requests from here: please wait an hour and try again"})
		resp.Headers["Retry-After"] = retryAfter(h.Now(), h.SignInPerClient.Per)
		return resp
	}
	account := h.Hasher.Email(email)
	ok, err = h.Accounts.Allow(ctx, chat.SignInAccountLimit(account), h.SignInPerAccount)
	if err != nil {
		return h.fail(ctx, unavailable(err))
	}
	if !ok {
		h.Log.InfoContext(ctx, "sign-in request over the account's limit; no email sent", "account", account)
		return httpapi.JSON(http.StatusAccepted, signInSent)
	}
	if account, _, err = h.Accounts.SignUp(ctx, email); err != nil {
		return h.fail(ctx, unavailable(err))
	}
	nonce, err := h.randomID()
	if err != nil {
		return h.fail(ctx, unavailable(err))
	}
	if err := h.Mail.Send(ctx, queue.Job{Kind: oracle.MailChatSignIn, Account: account, Nonce: nonce}); err != nil {
		return h.fail(ctx, unavailable(err))
	}
	h.Log.InfoContext(ctx, "sign-in email queued", "account", account)
	return httpapi.JSON(http.StatusAccepted, signInSent)
}

// retryAfter is the seconds until now's window of length per ends.
func retryAfter(now time.Time, per time.Duration) string {
	left := now.Truncate(per).Add(per).Sub(now)
	return itoa(int(left.Round(time.Second) / time.Second))
}

// signInPage is GET (and HEAD) /chat/signin?token=…, the emailed link: a
// page whose one button posts the token to POST /chat/signin. It reads
// and spends nothing and sets no cookie, so a mail scanner that opens the
// link first leaves it working, and a page elsewhere that sends a visitor
// to its own link signs no one in; a token that could not have been minted
// gets the "not valid" page at once.
func (h *Handler) signInPage(ctx context.Context, req httpapi.Request) page {
	token := req.QueryStringParameters["token"]
	if !chatsession.WellFormed(token) {
		return h.signInRefused(ctx, chat.ErrSignInInvalid)
	}
	return h.render("signin.html", http.StatusOK, nil, signInView{frame: h.newFrame("Sign in to Sisters Chat", nil),
		Token: token, SessionDays: int(chatsession.TTL / (24 * time.Hour))})
}

// signIn is POST /chat/signin, the sign-in page's button: from this site's
// own page only (chatsession.FromSite), it spends the token, signs the person in
// (the session cookie) and takes them to the chat; a refused form or link
// gets a page saying why, with the way to ask for a new link, and spends
// nothing.
func (h *Handler) signIn(ctx context.Context, req httpapi.Request) httpapi.Response {
	if !chatsession.FromSite(req, h.Origin) {
		h.Log.InfoContext(ctx, "sign-in form from another site refused", "sec_fetch_site", oracle.Clip(httpapi.Header(req, "Sec-Fetch-Site"), 20))
		return h.html(h.signInRefused(ctx, chatsession.ErrNotFromSite))
	}
	token, err := chatsession.FormToken(req)
	if err != nil {
		return h.html(h.signInRefused(ctx, err))
	}
	account, err := h.Accounts.ConsumeSignIn(ctx, token)
	if err != nil {
		return h.html(h.signInRefused(ctx, err))
	}
	resp := httpapi.Response{StatusCode: http.StatusSeeOther, Headers: map[string]string{
		"Location":        "/chat",
		"Cache-Control":   "no-store",
		"Referrer-Policy": "no-referrer",
	}}
	resp.Cookies = []string{chatsession.SetCookie(chatsession.Sign(h.CookieKey, chatsession.Session{Account: account, Issued: h.Now()}))}
	h.Log.InfoContext(ctx, "signed in", "account", account)
	return resp
}

// signInRefused is the page of a sign-in that did not happen: why, and the
// way to ask for a new link.
func (h *Handler) signInRefused(ctx context.Context, err error) page {
	switch {
	case errors.Is(err, chat.ErrSignInInvalid), errors.Is(err, chatsession.ErrNoToken):
		return h.signInProblem(http.StatusBadRequest, "This sign-in link is not valid",
			"The link may have been cut short when it was copied. Ask for a new one below.")
	case errors.Is(err, chat.ErrSignInUsed):
		return h.signInProblem(http.StatusGone, "This sign-in link was already used",
			"Each link signs you in once. If that was not you, nothing else was shared. Ask for a new one below.")
	case errors.Is(err, chat.ErrSignInExpired):
		return h.signInProblem(http.StatusGone, "This sign-in link has expired",
			"Links work for 15 minutes. Ask for a new one below.")
	case errors.Is(err, chatsession.ErrNotFromSite):
		return h.signInProblem(http.StatusForbidden, "This sign-in was refused",
			"A sign-in link works only from its own page on this site. Open the link from your email again and press Sign in there.")
	case errors.Is(err, chatsession.ErrFormType), errors.Is(err, chatsession.ErrFormTooLarge):
		status := http.StatusUnsupportedMediaType
		if errors.Is(err, chatsession.ErrFormTooLarge) {
			status = http.StatusRequestEntityTooLarge
		}
		return h.signInProblem(status, "This request is not supported",
			"This address takes the sign-in page's button only. Open the link from your email again and press Sign in there.")
	default:
		h.Log.ErrorContext(ctx, "sign-in link not read", "error", err.Error())
		return h.signInProblem(http.StatusServiceUnavailable, "We could not sign you in just now",
			"Please go back and press Sign in again in a moment.")
	}
}
