package main

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/chat"
	"42sisters.ai/oracle/shared/chatsession"
	"42sisters.ai/oracle/shared/httpapi"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/queue"
)

// Accounts is the chat table's accounts (chat.Store).
type Accounts interface {
	SignUp(ctx context.Context, email string) (account string, created bool, err error)
	ConsumeSignIn(ctx context.Context, token string) (account string, err error)
	Usage(ctx context.Context, account string) (chat.Usage, error)
	TakeExchange(ctx context.Context, u chat.Usage, p chat.Policy) (chat.Spent, error)
	Settle(ctx context.Context, sp chat.Spent) error
	GiveBack(ctx context.Context, sp chat.Spent) (bool, error)
	SignOut(ctx context.Context, account string) error
	Allow(ctx context.Context, name string, w chat.Window) (bool, error)
}

// Conversations keeps each account's messages (chat.Conversation).
type Conversations interface {
	Append(ctx context.Context, account, message, reply string, at time.Time) error
	Recent(ctx context.Context, account string, maxChars int) ([]chat.Turn, error)
	Forget(ctx context.Context, account string) (int, error)
	Erase(ctx context.Context, account string, signIn chat.Window) (chat.Erased, error)
}

// Mailer queues the sign-in email (queue.Sender on the mail queue).
type Mailer interface {
	Send(ctx context.Context, j queue.Job) error
}

// Auditor appends audit records, alerting when one cannot be written.
type Auditor interface {
	Record(ctx context.Context, r audit.Record, id string)
}

// Alerter raises an operator alert (alert.Alerter).
type Alerter interface {
	Raise(ctx context.Context, a alert.Alert)
}

// Counter counts a metric (obs.Metrics): the chat counts only its
// failures, for the dashboard's Sisters Chat chart, so that a chat that is
// well costs no metric.
type Counter interface {
	Count(name string, n float64)
}

// Handler serves Sisters Chat: the page at GET /chat, the sign-in link's
// page at GET /chat/signin, its button at POST /chat/signin and the API
// under /api/chat.
type Handler struct {
	Site    string // the company name in titles and the header
	Support string // the address for people, and for the Bridge tier
	// Origin is the site's origin (scheme and host of BASE_URL): the only
	// one a state-changing request may come from.
	Origin string
	// CookieKey signs the session cookie (CHAT_COOKIE_KEY).
	CookieKey []byte
	// RetentionDays is how long messages are kept (the page says it).
	RetentionDays int
	// DailyCap is a subscriber's exchanges per UTC day.
	DailyCap int
	// HistoryChars bounds the conversation the model is given; ShowChars
	// the conversation GET /api/chat returns.
	HistoryChars int
	ShowChars    int
	// ReplyTimeout bounds the model's answer, so that the person hears
	// within API Gateway's 30 s even when it fails.
	ReplyTimeout time.Duration
	// SignInPerAccount and SignInPerClient limit sign-in requests.
	SignInPerAccount chat.Window
	SignInPerClient  chat.Window
	// NewTrialsPerDay bounds the trials started service-wide each UTC day;
	// GiveBacksPerDay an account's apologies given back.
	NewTrialsPerDay int
	GiveBacksPerDay chat.Window

	Accounts      Accounts
	Conversations Conversations
	Mail          Mailer
	Replier       Replier
	Subscriptions Subscriptions
	Billing       Billing
	Canceller     Canceller
	Audit         Auditor
	Alerts        Alerter
	Metrics       Counter
	Hasher        *audit.Hasher
	Log           *slog.Logger
	Now           func() time.Time
	Random        io.Reader
}

// MaxBody bounds a request body: a message is at most MaxMessageChars
// characters of up to four bytes, escaped in JSON at most six each.
const MaxBody = 64 << 10

// route names one route: method and path.
type route struct{ method, path string }

// Handle answers one request; no error crosses it.
func (h *Handler) Handle(ctx context.Context, req httpapi.Request) (httpapi.Response, error) {
	method, path := req.RequestContext.HTTP.Method, strings.TrimSuffix(req.RawPath, "/")
	if path == "" {
		path = "/"
	}
	switch {
	case path == "/chat" && (method == http.MethodGet || method == http.MethodHead):
		return h.html(h.chatPage(req)), nil
	case path == "/chat/signin" && (method == http.MethodGet || method == http.MethodHead):
		// The emailed link only shows a button: a mail scanner, or a page
		// elsewhere that sends the browser here, spends nothing.
		return h.html(h.signInPage(ctx, req)), nil
	case path == "/chat/signin" && method == http.MethodPost:
		return h.signIn(ctx, req), nil
	case path == "/chat":
		return h.html(h.problem(http.StatusMethodNotAllowed, "This request is not supported",
			"This address shows a page; it does not accept anything sent to it.")), nil
	case path == "/chat/signin":
		resp := h.html(h.signInProblem(http.StatusMethodNotAllowed, "This request is not supported",
			"This address shows the page of a sign-in link and takes its button, nothing else."))
		resp.Headers["Allow"] = "GET, HEAD, POST"
		return resp, nil
	}
	serve, known := api[route{method, path}]
	if !known {
		for r := range api {
			if r.path == path {
				return httpapi.JSON(http.StatusMethodNotAllowed, map[string]string{"error": "method not allowed"}), nil
			}
		}
		return httpapi.JSON(http.StatusNotFound, map[string]string{"error": "not found"}), nil
	}
	if method != http.MethodGet {
		if err := h.sameOrigin(req); err != nil {
			return h.fail(ctx, err), nil
		}
	}
	return serve(h, ctx, req), nil
}

// api is every API route and what serves it: made once, not on every
// request.
var api = map[route]func(*Handler, context.Context, httpapi.Request) httpapi.Response{
	{http.MethodPost, "/api/chat/signin"}:    (*Handler).requestSignIn,
	{http.MethodPost, "/api/chat"}:           signedInReading(beside{subscription: true}, (*Handler).message),
	{http.MethodGet, "/api/chat"}:            signedInReading(beside{subscription: true, conversation: true}, (*Handler).conversation),
	{http.MethodDelete, "/api/chat"}:         signedIn((*Handler).forget),
	{http.MethodPost, "/api/chat/subscribe"}: signedInReading(beside{subscription: true}, (*Handler).subscribe),
	{http.MethodPost, "/api/chat/portal"}:    signedInReading(beside{subscription: true}, (*Handler).portal),
	{http.MethodPost, "/api/chat/signout"}:   signedIn((*Handler).signOut),
	{http.MethodDelete, "/api/chat/account"}: signedIn((*Handler).erase),
}

// sameOrigin is the CSRF defence of every state-changing route: a JSON
// body (which a form on another site cannot send without a preflight this
// API never grants) from the site's own origin, by the browser's Origin or,
// without one, its Sec-Fetch-Site.
func (h *Handler) sameOrigin(req httpapi.Request) error {
	mt, _, err := mime.ParseMediaType(httpapi.Header(req, "Content-Type"))
	if err != nil || mt != "application/json" {
		return oracle.Errorf(oracle.CodeForbidden, "requests that change anything must send Content-Type: application/json")
	}
	if origin := httpapi.Header(req, "Origin"); origin != "" {
		if origin != h.Origin {
			return oracle.Errorf(oracle.CodeForbidden, "requests from another site are refused")
		}
		return nil
	}
	if httpapi.Header(req, "Sec-Fetch-Site") != "same-origin" {
		return oracle.Errorf(oracle.CodeForbidden, "requests that change anything must come from this site's page")
	}
	return nil
}

// signedIn wraps a route that needs a session: a missing, forged,
// expired or signed-out cookie is a 401 that also clears it.
func signedIn(serve func(*Handler, context.Context, httpapi.Request, chatsession.Session, chat.Usage) httpapi.Response) func(*Handler, context.Context, httpapi.Request) httpapi.Response {
	return signedInReading(beside{}, func(h *Handler, ctx context.Context, req httpapi.Request, s chatsession.Session, u chat.Usage, _ *read) httpapi.Response {
		return serve(h, ctx, req, s, u)
	})
}

// beside names what a route reads of the account besides its session.
type beside struct {
	subscription bool // the account's subscription
	conversation bool // the conversation as the page shows it (ShowChars)
}

// read is what a route read beside the session, each with its error,
// which the route answers where it needs the value.
type read struct {
	sub      Subscription
	subErr   error
	turns    []chat.Turn
	turnsErr error
}

// signedInReading is signedIn for a route that also reads what b names:
// those reads need only the account's name, which the cookie's signature
// proves before anything is read, so they are made beside the session's
// read of the account, not after it. What a session then refused read
// them for nothing, and nothing of them is answered.
func signedInReading(b beside, serve func(*Handler, context.Context, httpapi.Request, chatsession.Session, chat.Usage, *read) httpapi.Response) func(*Handler, context.Context, httpapi.Request) httpapi.Response {
	return func(h *Handler, ctx context.Context, req httpapi.Request) httpapi.Response {
		s, err := h.cookie(req)
		var u chat.Usage
		r := &read{}
		if err == nil {
			var wg sync.WaitGroup
			if b.subscription {
				wg.Go(func() { r.sub, r.subErr = h.Subscriptions.Subscription(ctx, s.Account) })
			}
			if b.conversation {
				wg.Go(func() { r.turns, r.turnsErr = h.Conversations.Recent(ctx, s.Account, h.ShowChars) })
			}
			u, err = h.account(ctx, s)
			wg.Wait()
		}
		if errors.Is(err, chatsession.ErrNoSession) {
			resp := httpapi.JSON(http.StatusUnauthorized, map[string]any{"error": "please sign in: your session is missing or has expired", "signin": true})
			if chatsession.CookieValue(req) != "" {
				resp.Cookies = []string{chatsession.ClearCookie()}
			}
			return resp
		}
		if err != nil {
			return h.fail(ctx, err)
		}
		return serve(h, ctx, req, s, u, r)
	}
}

// cookie reads and checks the request's chatsession.Session: its
// signature and its age, nothing stored.
func (h *Handler) cookie(req httpapi.Request) (chatsession.Session, error) {
	value := chatsession.CookieValue(req)
	if value == "" {
		return chatsession.Session{}, chatsession.ErrNoSession
	}
	return chatsession.Verify(h.CookieKey, value, h.Now())
}

// account reads the account of the session s, its counts, and checks that
// s is still one of its sessions.
func (h *Handler) account(ctx context.Context, s chatsession.Session) (chat.Usage, error) {
	u, err := h.Accounts.Usage(ctx, s.Account)
	switch {
	case errors.Is(err, chat.ErrNoAccount):
		return chat.Usage{}, chatsession.ErrNoSession
	case err != nil:
		return chat.Usage{}, unavailable(err)
	case !u.SignedOutAt.IsZero() && !s.Issued.After(u.SignedOutAt):
		return chat.Usage{}, chatsession.ErrNoSession
	case s.Issued.Before(u.Created.Truncate(time.Millisecond)):
		// Issued to an account of the same name that was erased: the
		// account made since is another person's to sign in to.
		return chat.Usage{}, chatsession.ErrNoSession
	}
	return u, nil
}

// unavailable is a store or dependency failure: the person is asked to
// try again, the cause is logged.
func unavailable(err error) error {
	return oracle.Wrap(oracle.CodeUnavailable, err, "the chat is unavailable just now: please try again in a moment")
}

// fail answers err with its status and message (httpapi.Error).
func (h *Handler) fail(ctx context.Context, err error) httpapi.Response {
	return httpapi.Error(ctx, h.Log, err)
}

// randomID is a fresh random name: 16 bytes, hex.
func (h *Handler) randomID() (string, error) {
	b := make([]byte, 16)
	if _, err := io.ReadFull(h.Random, b); err != nil {
		return "", fmt.Errorf("random id: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// originOf is the origin of a URL: scheme://host[:port].
func originOf(base string) (string, error) {
	u, err := url.Parse(base)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return "", fmt.Errorf("not an absolute URL: %q", base)
	}
	return u.Scheme + "://" + u.Host, nil
}
