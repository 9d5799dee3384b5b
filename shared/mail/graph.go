package mail

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/mail"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"42sisters.ai/oracle/shared/ascii"
	"42sisters.ai/oracle/shared/secret"
	"42sisters.ai/oracle/shared/tracing"
)

// Defaults of a GraphConfig.
const (
	DefaultGraphAPIBase   = "https://graph.microsoft.com/v1.0"
	DefaultGraphLoginBase = "https://login.microsoftonline.com"
	// GraphScope is the scope of an application's client-credentials
	// token: the permissions granted to the app registration (Mail.Send).
	GraphScope = "https://graph.microsoft.com/.default"
)

// graphTimeout bounds a request when GraphConfig.HTTP is nil: a Lambda's
// context may carry no deadline, and a send must not hang the invocation.
const graphTimeout = 10 * time.Second

// tokenEarlyExpiry is how long before its expiry a token is replaced, so
// that a token never runs out between being taken and Graph reading it,
// whatever the skew between our clock and Microsoft's.
const tokenEarlyExpiry = 5 * time.Minute

// maxErrorBody bounds how much of an error answer is read for its code.
const maxErrorBody = 64 << 10

// GraphConfig configures a Graph transport.
type GraphConfig struct {
	TenantID     string // the Entra ID (Azure AD) tenant of the app registration
	ClientID     string // the app registration's application (client) id
	ClientSecret string
	// Sender is the mailbox the mail is sent as (users/{Sender}/sendMail):
	// a bare address, which the app must be allowed to send as.
	Sender string
	// APIBase is Graph's root; DefaultGraphAPIBase when empty.
	APIBase string
	// LoginBase is the identity platform's root, before the tenant;
	// DefaultGraphLoginBase when empty.
	LoginBase string
	// HTTP carries both the token and the sendMail requests; when nil, a
	// client with a 10 s timeout.
	HTTP *http.Client
	// Now stamps the Date header and reads Retry-After dates; time.Now when
	// nil. Token expiry follows the real clock, as package oauth2 does.
	Now func() time.Time
	// Credentials is the app's secret (see ParseGraphCredentials) that
	// TenantID, ClientID and ClientSecret were read from, when it can be
	// read again: a token request the identity platform refuses reads it
	// again (at most once a minute per container, see package secret) and,
	// when it changed, asks once more with the new credentials. Nil means
	// the fields above, never read again.
	Credentials *secret.Value
}

// Graph sends through Microsoft Graph's sendMail, authenticated as an
// application with the OAuth2 client-credentials grant. It caches its token
// (one Graph per Lambda container) and is safe for concurrent use.
type Graph struct {
	sendURL string
	// shownURL is sendURL with the sender left out: it names the request
	// in transport failures, which never hold an address.
	shownURL string
	// apiBase is Graph's root, for reading mailboxes (graphread.go).
	apiBase string
	http    *http.Client
	now     func() time.Time
	// loginBase builds the token URL of credentials read again.
	loginBase string
	// secret is the app's credentials as a secret, and used the value
	// creds was built from; secret is nil when they cannot be read again.
	secret *secret.Value
	used   string
	// creds is guarded by lock, as tok is: a refused token request
	// replaces it with credentials read again.
	creds *clientcredentials.Config

	// lock guards tok; a channel so that a send whose context ends stops
	// waiting for another's token fetch.
	lock chan struct{}
	tok  *oauth2.Token
}

// NewGraph checks c and returns a Graph transport. Its errors name the
// field at fault, never its value.
func NewGraph(c GraphConfig) (*Graph, error) {
	for _, f := range []struct{ name, value string }{
		{"TenantID", c.TenantID}, {"ClientID", c.ClientID}, {"ClientSecret", c.ClientSecret}, {"Sender", c.Sender},
	} {
		if strings.TrimSpace(f.value) == "" {
			return nil, fmt.Errorf("graph mail: %s is required", f.name)
		}
	}
	if a, err := mail.ParseAddress(c.Sender); err != nil || a.Address != c.Sender {
		return nil, errors.New("graph mail: Sender must be a bare email address")
	}
	apiBase, err := baseURL("APIBase", c.APIBase, DefaultGraphAPIBase)
	if err != nil {
		return nil, err
	}
	loginBase, err := baseURL("LoginBase", c.LoginBase, DefaultGraphLoginBase)
	if err != nil {
		return nil, err
	}
	g := &Graph{
		sendURL:   apiBase + "/users/" + url.PathEscape(c.Sender) + "/sendMail",
		shownURL:  apiBase + "/users/<sender>/sendMail",
		apiBase:   apiBase,
		http:      c.HTTP,
		now:       c.Now,
		loginBase: loginBase,
		secret:    c.Credentials,
		used:      c.Credentials.Get(),
		creds:     clientCredentials(loginBase, c.TenantID, c.ClientID, c.ClientSecret),
		lock:      make(chan struct{}, 1),
	}
	if g.http == nil {
		g.http = &http.Client{Timeout: graphTimeout}
	}
	// Each request to Graph (the token's too) is a span of the trace.
	hc := *g.http
	hc.Transport = tracing.Transport("graph", hc.Transport)
	g.http = &hc
	if g.now == nil {
		g.now = time.Now
	}
	return g, nil
}

// clientCredentials is the client-credentials grant of an app.
func clientCredentials(loginBase, tenantID, clientID, clientSecret string) *clientcredentials.Config {
	return &clientcredentials.Config{
		ClientID:     clientID,
		ClientSecret: clientSecret,
		TokenURL:     loginBase + "/" + url.PathEscape(tenantID) + "/oauth2/v2.0/token",
		Scopes:       []string{GraphScope},
		// The identity platform takes the secret in the form. Naming
		// the style spares oauth2's probe, which after a refusal asks
		// a second time and would double every refused request.
		AuthStyle: oauth2.AuthStyleInParams,
	}
}

// baseURL checks an absolute http(s) URL and returns it without a trailing
// slash, or def when v is empty.
func baseURL(field, v, def string) (string, error) {
	if v == "" {
		return def, nil
	}
	u, err := url.Parse(v)
	if err != nil || !u.IsAbs() || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("graph mail: %s must be an absolute http(s) URL without query", field)
	}
	return strings.TrimSuffix(v, "/"), nil
}

// graphCredentials is the Secrets Manager secret of the app registration.
type graphCredentials struct {
	TenantID     string `json:"tenant_id"`
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret"`
}

// ParseGraphCredentials reads the app registration's Secrets Manager
// secret, {"tenant_id":"…","client_id":"…","client_secret":"…"}; other
// fields are ignored. Its errors name the missing field and never quote the
// secret.
func ParseGraphCredentials(secretJSON string) (tenantID, clientID, clientSecret string, err error) {
	var c graphCredentials
	// The JSON decoder's errors can quote the text around a fault, which
	// here is the secret: they are not kept.
	if json.Unmarshal([]byte(secretJSON), &c) != nil {
		return "", "", "", errors.New("graph credentials: the secret is not a JSON object of strings")
	}
	for _, f := range []struct{ name, value string }{
		{"tenant_id", c.TenantID}, {"client_id", c.ClientID}, {"client_secret", c.ClientSecret},
	} {
		if strings.TrimSpace(f.value) == "" {
			return "", "", "", fmt.Errorf("graph credentials: the secret has no %s", f.name)
		}
	}
	return c.TenantID, c.ClientID, c.ClientSecret, nil
}

// Send sends m as the configured Sender and returns "graph-" and the
// client-request-id of the request, since Graph answers without a message
// id; Microsoft's support traces a message by that id.
//
// The message is the MIME message SES would send (see SES.Send), posted
// base64-encoded as text/plain: Graph's "send mail in MIME format", which
// keeps the bytes the tests read back the bytes built here. A 401 drops
// the cached token and sends once more with a new one, since a token can be
// revoked before it expires; a second 401 blocks.
//
// Every error is an *Error classified for the retry schedule; none holds
// an address or the text of Graph's answer.
func (g *Graph) Send(ctx context.Context, m Outgoing) (string, error) {
	raw, _, _, err := compose(m, g.now())
	if err != nil {
		return "", err
	}
	body := []byte(base64.StdEncoding.EncodeToString(raw))
	// Both attempts carry the same id: they are one send in Microsoft's logs.
	id := uuid.NewString()
	var stale *oauth2.Token
	for attempt := 1; ; attempt++ {
		tok, err := g.token(ctx, stale)
		if err != nil {
			return "", err
		}
		resp, err := g.post(ctx, tok, id, body)
		if err != nil {
			return "", err
		}
		if resp.StatusCode == http.StatusUnauthorized && attempt == 1 {
			discard(resp)
			stale = tok
			continue
		}
		if resp.StatusCode >= 200 && resp.StatusCode < 300 {
			// Graph documents 202; any success means the message went,
			// and calling it a failure would send it twice.
			discard(resp)
			return "graph-" + id, nil
		}
		return "", g.classify(resp)
	}
}

// post sends one sendMail request.
func (g *Graph) post(ctx context.Context, tok *oauth2.Token, requestID string, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.sendURL, bytes.NewReader(body))
	if err != nil {
		return nil, transient("Graph", g.hideSender(err))
	}
	req.Header.Set("Content-Type", "text/plain")
	req.Header.Set("client-request-id", requestID)
	tok.SetAuthHeader(req)
	resp, err := g.http.Do(req)
	if err != nil {
		return nil, transient("Graph", g.hideSender(err))
	}
	return resp, nil
}

// hideSender takes the sender's address out of a transport failure, which
// names the URL it failed on, keeping what it wraps for errors.Is.
func (g *Graph) hideSender(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return &url.Error{Op: ue.Op, URL: g.shownURL, Err: ue.Err}
	}
	return err
}

// discard reads what is left of a small answer, so that its connection
// can serve the next request, and closes it.
func discard(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
	_ = resp.Body.Close()
}

// token returns a token valid for at least tokenEarlyExpiry more, fetching
// one when the cached token is nil, near its expiry, or stale: the token
// Graph just refused. Should another send have replaced the stale token
// meanwhile, that replacement is used.
//
// The fetch runs under the caller's context, so it ends with the send; the
// configured client makes it, through oauth2.HTTPClient. Holding the lock
// across the fetch makes concurrent sends wait for one fetch rather than
// each making their own.
func (g *Graph) token(ctx context.Context, stale *oauth2.Token) (*oauth2.Token, error) {
	select {
	case g.lock <- struct{}{}:
	default:
		// Waiting only now, so that a send with an ended context still
		// takes a free lock and fails at one place, deterministically.
		select {
		case g.lock <- struct{}{}:
		case <-ctx.Done():
			return nil, transient("Graph", fmt.Errorf("wait for the Graph token: %w", ctx.Err()))
		}
	}
	defer func() { <-g.lock }()
	if stale != nil && g.tok == stale {
		g.tok = nil
	}
	tok, err := g.fetch(ctx)
	if err != nil && err.Class == Blocked && g.renew(ctx) {
		tok, err = g.fetch(ctx)
	}
	if err != nil {
		return nil, err
	}
	g.tok = tok
	return tok, nil
}

// fetch returns the cached token or fetches one; the caller holds the lock.
func (g *Graph) fetch(ctx context.Context) (*oauth2.Token, *Error) {
	fetch := fetchToken{ctx: context.WithValue(ctx, oauth2.HTTPClient, g.http), creds: g.creds}
	tok, err := oauth2.ReuseTokenSourceWithExpiry(g.tok, fetch, tokenEarlyExpiry).Token()
	if err != nil {
		return nil, classifyToken(err, g.now())
	}
	return tok, nil
}

// renew reads the app's credentials again after the identity platform
// refused them and reports whether there are new ones to ask with; the
// caller holds the lock. New credentials that cannot be parsed are not
// taken.
func (g *Graph) renew(ctx context.Context) bool {
	fresh, ok := g.secret.Renew(ctx, g.used)
	if !ok {
		return false
	}
	tenantID, clientID, clientSecret, err := ParseGraphCredentials(fresh)
	if err != nil {
		return false
	}
	g.used, g.creds, g.tok = fresh, clientCredentials(g.loginBase, tenantID, clientID, clientSecret), nil
	return true
}

// CheckToken fetches a token with the app's credentials (or finds the
// cached one still good): the health job's proof that Graph would let the
// mailer send. A refusal is classified as a send's would be: Blocked.
func (g *Graph) CheckToken(ctx context.Context) error {
	_, err := g.token(ctx, nil)
	return err
}

// fetchToken fetches a new token under one send's context. A token source
// made by clientcredentials.Config.TokenSource keeps the context it was
// made with, which would outlive the sends that use it.
type fetchToken struct {
	ctx   context.Context
	creds *clientcredentials.Config
}

func (f fetchToken) Token() (*oauth2.Token, error) { return f.creds.Token(f.ctx) }

// classify turns a sendMail failure into an *Error and closes its body.
//
//   - 400: the message is refused (Graph's code says why, for example
//     ErrorInvalidRecipients), permanent;
//   - 401 (after a new token), 403 (Mail.Send not granted, or the app not
//     allowed this mailbox) and 404 (the sender's mailbox does not exist):
//     no message can go until the operator acts, blocked;
//   - 408, 429 and 5xx: transient, after Retry-After when given;
//   - another 4xx refuses the message, permanent.
func (g *Graph) classify(resp *http.Response) *Error {
	defer discard(resp)
	e := &Error{
		Transport:  "Graph",
		Status:     resp.StatusCode,
		RequestID:  identifier(resp.Header.Get("request-id")),
		RetryAfter: retryAfter(resp.Header.Get("Retry-After"), g.now()),
	}
	var answer struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if json.NewDecoder(io.LimitReader(resp.Body, maxErrorBody)).Decode(&answer) == nil {
		e.Code = identifier(answer.Error.Code)
	}
	switch resp.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound:
		e.Class = Blocked
	default:
		e.Class = classOfStatus(resp.StatusCode)
	}
	return e
}

// classifyToken turns a failed token fetch into an *Error. The identity
// platform refusing the app (400 or 401: invalid_client for a wrong or
// expired secret, unauthorized_client for an unknown app, invalid_request
// for an unknown tenant) blocks every send until the operator fixes the
// credentials; its 408, 429 and 5xx and a failure to reach it pass.
func classifyToken(err error, now time.Time) *Error {
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) || re.Response == nil {
		// Not an answer: the oauth2 package's own texts, or the transport
		// failure, which names only the token URL.
		return transient("Graph", err)
	}
	e := &Error{
		Transport:  "Graph",
		Code:       identifier(re.ErrorCode),
		Status:     re.Response.StatusCode,
		RequestID:  identifier(re.Response.Header.Get("x-ms-request-id")),
		RetryAfter: retryAfter(re.Response.Header.Get("Retry-After"), now),
	}
	switch s := e.Status; {
	case s == http.StatusRequestTimeout || s == http.StatusTooManyRequests || s >= 500:
		e.Class = Transient
	default:
		// Any other refusal, even one sent with a 2xx, is about the
		// credentials, not the message.
		e.Class = Blocked
	}
	return e
}

// identifierChars are what a server's error code or request id may be to
// be shown: they go into error texts, which must not carry whatever else a
// server might put there.
// (1 to 128 of them).
var identifierChars = ascii.NewSet("A-Za-z0-9_.-")

// identifier returns s if it looks like a code or an id, else "".
func identifier(s string) string {
	if identifierChars.Run(s, 1, 128) {
		return s
	}
	return ""
}
