package mail_test

import (
	"context"
	"errors"
	"mime"
	"net/http"
	"net/http/httptest"
	netmail "net/mail"
	"strings"
	"sync"
	"testing"
	"time"

	"42sisters.ai/oracle/infra/fakes/fakegraph"
	"42sisters.ai/oracle/infra/motoserver"
	"42sisters.ai/oracle/shared/mail"
)

const (
	graphSender = "oracle@42sisters.ai"
	// graphVictim is the recipient no error may name; the fake's errors
	// quote it, as Exchange's do.
	graphVictim = "Jane.Doe+x@example.com"
)

var graphNow = time.Date(2026, 11, 21, 14, 23, 7, 0, time.UTC)

// graphFixture is a Graph transport talking to a fake Graph over HTTP.
type graphFixture struct {
	fake  *fakegraph.Server
	url   string
	graph *mail.Graph
}

// newGraphFixture starts a fake with o and a transport configured for it,
// then changed by configure when not nil.
func newGraphFixture(t *testing.T, o fakegraph.Options, configure func(*mail.GraphConfig)) *graphFixture {
	t.Helper()
	fake := fakegraph.New(o)
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	c := mail.GraphConfig{
		TenantID: fakegraph.DefaultTenant, ClientID: fakegraph.DefaultClientID, ClientSecret: fakegraph.DefaultClientSecret,
		Sender: graphSender, APIBase: srv.URL + "/v1.0", LoginBase: srv.URL, HTTP: srv.Client(),
		Now: func() time.Time { return graphNow },
	}
	if configure != nil {
		configure(&c)
	}
	g, err := mail.NewGraph(c)
	if err != nil {
		t.Fatal(err)
	}
	return &graphFixture{fake: fake, url: srv.URL, graph: g}
}

func (fx *graphFixture) control(t *testing.T, c fakegraph.Control) {
	t.Helper()
	if _, err := fx.fake.Control(c); err != nil {
		t.Fatal(err)
	}
}

// calls counts the token and sendMail requests the fake answered.
func (fx *graphFixture) calls() (token, send int) {
	return fx.fake.CountCalls(fakegraph.KindToken), fx.fake.CountCalls(fakegraph.KindSend)
}

func graphMessage() mail.Outgoing {
	return mail.Outgoing{From: "42 Sisters AI <" + graphSender + ">", To: graphVictim, Subject: "Your verdict", Text: "GREEN."}
}

// closedURL is a URL nothing listens at.
func closedURL(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	return srv.URL
}

// wantNoLeak fails when err's text holds an address or the fake's words.
func wantNoLeak(t *testing.T, err error) {
	t.Helper()
	s := strings.ToLower(err.Error())
	for _, leak := range []string{"jane.doe", graphSender, "aadsts", "not resolved", "requested user", "secret", "told to refuse"} {
		if strings.Contains(s, leak) {
			t.Errorf("the error holds %q: %v", leak, err)
		}
	}
}

func TestGraphErrorClassification(t *testing.T) {
	retryDate := graphNow.Add(90 * time.Second).Format(http.TimeFormat)
	cases := []struct {
		name      string
		control   fakegraph.Control
		configure func(c *mail.GraphConfig, t *testing.T)
		warm      bool // send once first, so that the token is cached
		ctx       func() (context.Context, context.CancelFunc)
		mutate    func(*mail.Outgoing)

		class      mail.Class // 0: the message is accepted
		status     int
		code       string
		retryAfter time.Duration
		is         error // what errors.Is must find
		token      int   // token requests answered, after the warm-up
		send       int   // sendMail requests answered, after the warm-up
	}{
		{name: "202 accepted", token: 1, send: 1},
		{name: "400 invalid recipients", control: fakegraph.Control{Send: []fakegraph.SendAnswer{{Status: 400, Code: "ErrorInvalidRecipients"}}},
			class: mail.Permanent, status: 400, code: "ErrorInvalidRecipients", token: 1, send: 1},
		{name: "400 bad request", control: fakegraph.Control{Send: []fakegraph.SendAnswer{{Status: 400}}},
			class: mail.Permanent, status: 400, code: "BadRequest", token: 1, send: 1},
		{name: "413 message too large", control: fakegraph.Control{Send: []fakegraph.SendAnswer{{Status: 413}}},
			class: mail.Permanent, status: 413, code: "ErrorMessageSizeExceeded", token: 1, send: 1},
		{name: "401 after a new token", control: fakegraph.Control{Send: []fakegraph.SendAnswer{{Status: 401}, {Status: 401}}},
			class: mail.Blocked, status: 401, code: "InvalidAuthenticationToken", token: 2, send: 2},
		{name: "403 access denied", control: fakegraph.Control{Send: []fakegraph.SendAnswer{{Status: 403}}},
			class: mail.Blocked, status: 403, code: "ErrorAccessDenied", token: 1, send: 1},
		{name: "404 no sender mailbox", control: fakegraph.Control{Send: []fakegraph.SendAnswer{{Status: 404}}},
			class: mail.Blocked, status: 404, code: "ErrorInvalidUser", token: 1, send: 1},
		{name: "408 timeout", control: fakegraph.Control{Send: []fakegraph.SendAnswer{{Status: 408}}},
			class: mail.Transient, status: 408, code: "RequestTimeout", token: 1, send: 1},
		{name: "429 Retry-After in seconds", control: fakegraph.Control{Send: []fakegraph.SendAnswer{{Status: 429, RetryAfterS: 120}}},
			class: mail.Transient, status: 429, code: "ApplicationThrottled", retryAfter: 120 * time.Second, token: 1, send: 1},
		{name: "429 Retry-After as a date", control: fakegraph.Control{Send: []fakegraph.SendAnswer{{Status: 429, RetryAfterDate: retryDate}}},
			class: mail.Transient, status: 429, code: "ApplicationThrottled", retryAfter: 90 * time.Second, token: 1, send: 1},
		{name: "500", control: fakegraph.Control{Send: []fakegraph.SendAnswer{{Status: 500}}},
			class: mail.Transient, status: 500, code: "ErrorInternalServerError", token: 1, send: 1},
		{name: "502", control: fakegraph.Control{Send: []fakegraph.SendAnswer{{Status: 502}}},
			class: mail.Transient, status: 502, code: "UnknownError", token: 1, send: 1},
		{name: "503 with Retry-After", control: fakegraph.Control{SendAlways: &fakegraph.SendAnswer{Status: 503, RetryAfterS: 30}},
			class: mail.Transient, status: 503, code: "ServiceUnavailable", retryAfter: 30 * time.Second, token: 1, send: 1},
		{name: "504", control: fakegraph.Control{Send: []fakegraph.SendAnswer{{Status: 504}}},
			class: mail.Transient, status: 504, code: "GatewayTimeout", token: 1, send: 1},
		{name: "token refused: invalid_client", control: fakegraph.Control{Token: []fakegraph.TokenAnswer{{Status: 401, Error: "invalid_client"}}},
			class: mail.Blocked, status: 401, code: "invalid_client", token: 1},
		{name: "token refused: unauthorized_client", control: fakegraph.Control{Token: []fakegraph.TokenAnswer{{Status: 400, Error: "unauthorized_client"}}},
			class: mail.Blocked, status: 400, code: "unauthorized_client", token: 1},
		{name: "token refused: wrong secret", configure: func(c *mail.GraphConfig, _ *testing.T) { c.ClientSecret = "not-the-secret" },
			class: mail.Blocked, status: 401, code: "invalid_client", token: 1},
		{name: "token refused: unknown app", configure: func(c *mail.GraphConfig, _ *testing.T) { c.ClientID = "11111111-1111-4111-8111-111111111111" },
			class: mail.Blocked, status: 400, code: "unauthorized_client", token: 1},
		{name: "token refused: unknown tenant", configure: func(c *mail.GraphConfig, _ *testing.T) { c.TenantID = "contoso.example" },
			class: mail.Blocked, status: 400, code: "invalid_request", token: 1},
		{name: "token endpoint 429", control: fakegraph.Control{Token: []fakegraph.TokenAnswer{{Status: 429, RetryAfterS: 60}}},
			class: mail.Transient, status: 429, code: "temporarily_unavailable", retryAfter: time.Minute, token: 1},
		{name: "token endpoint 500", control: fakegraph.Control{Token: []fakegraph.TokenAnswer{{Status: 500}}},
			class: mail.Transient, status: 500, code: "server_error", token: 1},
		{name: "token endpoint 503", control: fakegraph.Control{Token: []fakegraph.TokenAnswer{{Status: 503}}},
			class: mail.Transient, status: 503, code: "temporarily_unavailable", token: 1},
		{name: "token endpoint unreachable", configure: func(c *mail.GraphConfig, t *testing.T) { c.LoginBase = closedURL(t) },
			class: mail.Transient},
		{name: "Graph unreachable", configure: func(c *mail.GraphConfig, t *testing.T) { c.APIBase = closedURL(t) + "/v1.0" },
			class: mail.Transient, token: 1},
		{name: "deadline passed before the token", ctx: expired, class: mail.Transient, is: context.DeadlineExceeded},
		{name: "deadline passed before sendMail", warm: true, ctx: expired, class: mail.Transient, is: context.DeadlineExceeded},
		{name: "cancelled", warm: true, ctx: func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx, cancel
		}, class: mail.Transient, is: context.Canceled},
		{name: "malformed message", mutate: func(m *mail.Outgoing) { m.To = graphVictim + "\r\nBcc: Jane.Doe@example.com" },
			class: mail.Permanent},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fx := newGraphFixture(t, fakegraph.Options{}, func(gc *mail.GraphConfig) {
				if c.configure != nil {
					c.configure(gc, t)
				}
			})
			if c.warm {
				if _, err := fx.graph.Send(context.Background(), graphMessage()); err != nil {
					t.Fatal(err)
				}
				fx.fake.ClearCalls()
			}
			fx.control(t, c.control)
			ctx, cancel := context.WithCancel(context.Background())
			if c.ctx != nil {
				ctx, cancel = c.ctx()
			}
			defer cancel()
			m := graphMessage()
			if c.mutate != nil {
				c.mutate(&m)
			}

			id, err := fx.graph.Send(ctx, m)
			if token, send := fx.calls(); token != c.token || send != c.send {
				t.Errorf("%d token and %d sendMail requests, want %d and %d", token, send, c.token, c.send)
			}
			if c.class == 0 {
				if err != nil || !strings.HasPrefix(id, "graph-") {
					t.Fatalf("Send = %q, %v; want a graph- id", id, err)
				}
				return
			}
			var e *mail.Error
			if !errors.As(err, &e) {
				t.Fatalf("want a *mail.Error, got %v", err)
			}
			if id != "" {
				t.Errorf("id %q with an error", id)
			}
			if e.Class != c.class || e.Status != c.status || e.Code != c.code || e.RetryAfter != c.retryAfter {
				t.Errorf("got %s, status %d, code %q, retry after %s; want %s, %d, %q, %s",
					e.Class, e.Status, e.Code, e.RetryAfter, c.class, c.status, c.code, c.retryAfter)
			}
			if mail.ClassOf(err) != c.class || mail.RetryAfter(err) != c.retryAfter {
				t.Errorf("ClassOf %s, RetryAfter %s", mail.ClassOf(err), mail.RetryAfter(err))
			}
			if c.status != 0 && (e.Transport != "Graph" || e.RequestID == "") {
				t.Errorf("transport %q, request id %q: want Graph and the fake's id", e.Transport, e.RequestID)
			}
			if c.is != nil && !errors.Is(err, c.is) {
				t.Errorf("errors.Is(%v, %v) is false", err, c.is)
			}
			wantNoLeak(t, err)
		})
	}
}

func expired() (context.Context, context.CancelFunc) {
	return context.WithDeadline(context.Background(), time.Unix(0, 0))
}

// TestGraphTokenRefreshOn401 is VER-06: a token Graph refuses is replaced
// once and the message resent.
func TestGraphTokenRefreshOn401(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T, fx *graphFixture)
		kinds []string // the requests answered, in order
		codes []int
	}{
		{
			name: "Graph refuses the token once",
			setup: func(t *testing.T, fx *graphFixture) {
				fx.control(t, fakegraph.Control{Send: []fakegraph.SendAnswer{{Status: 401}}})
			},
			kinds: []string{fakegraph.KindToken, fakegraph.KindSend, fakegraph.KindToken, fakegraph.KindSend},
			codes: []int{200, 401, 200, 202},
		},
		{
			name: "the cached token was revoked",
			setup: func(t *testing.T, fx *graphFixture) {
				if _, err := fx.graph.Send(context.Background(), graphMessage()); err != nil {
					t.Fatal(err)
				}
				fx.control(t, fakegraph.Control{ExpireTokens: true})
			},
			kinds: []string{fakegraph.KindToken, fakegraph.KindSend, fakegraph.KindSend, fakegraph.KindToken, fakegraph.KindSend},
			codes: []int{200, 202, 401, 200, 202},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fx := newGraphFixture(t, fakegraph.Options{}, nil)
			c.setup(t, fx)
			id, err := fx.graph.Send(context.Background(), graphMessage())
			if err != nil {
				t.Fatal(err)
			}
			calls := fx.fake.Calls()
			if len(calls) != len(c.kinds) {
				t.Fatalf("%d requests (%+v), want %d", len(calls), calls, len(c.kinds))
			}
			for i, call := range calls {
				if call.Kind != c.kinds[i] || call.Status != c.codes[i] {
					t.Errorf("request %d: %s answered %d, want %s answered %d", i+1, call.Kind, call.Status, c.kinds[i], c.codes[i])
				}
			}
			// Both attempts carry the id Send returned.
			last := calls[len(calls)-1]
			if retry := calls[len(calls)-3]; retry.ClientRequestID != last.ClientRequestID || "graph-"+last.ClientRequestID != id {
				t.Errorf("client-request-ids %q and %q, id %q", retry.ClientRequestID, last.ClientRequestID, id)
			}
			if got := received(t, fx, id); len(got.To) != 1 || got.To[0] != graphVictim {
				t.Errorf("recipients %q", got.To)
			}
		})
	}
}

func TestGraphTokenIsCachedAndRefreshedBeforeExpiry(t *testing.T) {
	cases := []struct {
		name   string
		ttl    time.Duration
		tokens int
	}{
		{"an hour's token serves both sends", time.Hour, 1},
		// A token within the 5-minute margin of its expiry is not used.
		{"a minute's token is replaced at once", time.Minute, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fx := newGraphFixture(t, fakegraph.Options{TokenTTL: c.ttl}, nil)
			for range 2 {
				if _, err := fx.graph.Send(context.Background(), graphMessage()); err != nil {
					t.Fatal(err)
				}
			}
			if token, send := fx.calls(); token != c.tokens || send != 2 {
				t.Errorf("%d token and %d sendMail requests, want %d and 2", token, send, c.tokens)
			}
		})
	}
}

func TestGraphConcurrentSendsShareOneToken(t *testing.T) {
	fx := newGraphFixture(t, fakegraph.Options{}, nil)
	const n = 8
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			_, err := fx.graph.Send(context.Background(), graphMessage())
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if token, send := fx.calls(); token != 1 || send != n {
		t.Errorf("%d token and %d sendMail requests, want 1 and %d", token, send, n)
	}
}

// countingTransport counts the requests of a client.
type countingTransport struct {
	mu    sync.Mutex
	paths []string
	base  http.RoundTripper
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.paths = append(c.paths, r.URL.Path)
	c.mu.Unlock()
	return c.base.RoundTrip(r)
}

func TestGraphUsesTheConfiguredClient(t *testing.T) {
	// The token request goes through GraphConfig.HTTP too, not oauth2's
	// default client: its timeout and transport apply to both.
	ct := &countingTransport{}
	fx := newGraphFixture(t, fakegraph.Options{}, func(c *mail.GraphConfig) {
		ct.base = c.HTTP.Transport
		c.HTTP = &http.Client{Transport: ct}
	})
	if _, err := fx.graph.Send(context.Background(), graphMessage()); err != nil {
		t.Fatal(err)
	}
	want := []string{"/" + fakegraph.DefaultTenant + "/oauth2/v2.0/token", "/v1.0/users/" + graphSender + "/sendMail"}
	if strings.Join(ct.paths, " ") != strings.Join(want, " ") {
		t.Errorf("the client made %q, want %q", ct.paths, want)
	}
}

// TestGraphRefusedRefreshIsBlocked is FM-03 (GAP-03): when the identity
// platform refuses the new token a 401 asked for, the send is blocked with
// the OAuth code, and sends resume once the credentials are accepted again.
func TestGraphRefusedRefreshIsBlocked(t *testing.T) {
	cases := []struct {
		status int
		code   string
	}{
		{401, "invalid_client"},
		{400, "unauthorized_client"},
	}
	for _, c := range cases {
		t.Run(c.code, func(t *testing.T) {
			fx := newGraphFixture(t, fakegraph.Options{}, nil)
			if _, err := fx.graph.Send(context.Background(), graphMessage()); err != nil {
				t.Fatal(err)
			}
			fx.fake.ClearCalls()
			fx.control(t, fakegraph.Control{ExpireTokens: true, Token: []fakegraph.TokenAnswer{{Status: c.status, Error: c.code}}})

			_, err := fx.graph.Send(context.Background(), graphMessage())
			var e *mail.Error
			if !errors.As(err, &e) || e.Class != mail.Blocked || e.Code != c.code || e.Status != c.status || e.Transport != "Graph" {
				t.Fatalf("want blocked %d %s from Graph, got %#v", c.status, c.code, err)
			}
			wantNoLeak(t, err)
			if token, send := fx.calls(); token != 1 || send != 1 {
				t.Errorf("%d token and %d sendMail requests, want 1 and 1", token, send)
			}

			if _, err := fx.graph.Send(context.Background(), graphMessage()); err != nil {
				t.Fatalf("the send after the credentials are accepted again: %v", err)
			}
		})
	}
}

func TestGraphRetryAfterIsHonoured(t *testing.T) {
	fx := newGraphFixture(t, fakegraph.Options{}, nil)
	fx.control(t, fakegraph.Control{Send: []fakegraph.SendAnswer{{Status: 429, RetryAfterS: 120}}})
	_, err := fx.graph.Send(context.Background(), graphMessage())
	if mail.ClassOf(err) != mail.Transient || mail.RetryAfter(err) != 120*time.Second {
		t.Fatalf("got %s after %s (%v), want transient after 2m0s", mail.ClassOf(err), mail.RetryAfter(err), err)
	}
	if !strings.Contains(err.Error(), "retry after 2m0s") {
		t.Errorf("the error does not say when to retry: %v", err)
	}
}

func TestGraphSendsTheMIMEMessage(t *testing.T) {
	cases := map[string]mail.Outgoing{
		"plain text": {From: graphSender, To: graphVictim, Subject: "Votre verdict — «vert»", Text: "Ligne une\nLigne deux = é\n"},
		"with HTML and reply-to": {From: "42 Sisters AI <" + graphSender + ">", To: graphVictim, ReplyTo: "support@42sisters.ai",
			Subject: "Your verdict", Text: "GREEN: go.\n", HTML: "<p>GREEN: <b>go</b> — café</p>\n"},
	}
	for name, m := range cases {
		t.Run(name, func(t *testing.T) {
			fx := newGraphFixture(t, fakegraph.Options{}, nil)
			id, err := fx.graph.Send(context.Background(), m)
			if err != nil {
				t.Fatal(err)
			}
			got := received(t, fx, id)
			if got.Subject != m.Subject || got.Text != m.Text || got.HTML != m.HTML {
				t.Errorf("changed on the way: subject %q, text %q, html %q", got.Subject, got.Text, got.HTML)
			}
			if len(got.To) != 1 || got.To[0] != graphVictim || got.From != m.From || !got.At.Equal(graphNow) {
				t.Errorf("to %q, from %q, date %v", got.To, got.From, got.At)
			}
			if want := replyTo(m.ReplyTo); got.ReplyTo != want {
				t.Errorf("reply-to %q, want %q", got.ReplyTo, want)
			}
			want, _, _, err := mail.Compose(m, graphNow)
			if err != nil {
				t.Fatal(err)
			}
			// A multipart message has a random boundary, the one part of
			// compose's output that differs from call to call.
			if raw := sameBoundary(t, got.Raw, string(want)); raw != string(want) {
				t.Errorf("the MIME message changed on the way:\n%q\nwant\n%q", raw, want)
			}
		})
	}
}

func replyTo(s string) string {
	if s == "" {
		return ""
	}
	a, err := netmail.ParseAddress(s)
	if err != nil {
		return s
	}
	return a.Address
}

// sameBoundary returns raw with its multipart boundary replaced by want's.
func sameBoundary(t *testing.T, raw, want string) string {
	t.Helper()
	b, wb := boundary(t, raw), boundary(t, want)
	if b == "" || wb == "" {
		return raw
	}
	return strings.ReplaceAll(raw, b, wb)
}

func boundary(t *testing.T, raw string) string {
	t.Helper()
	msg, err := netmail.ReadMessage(strings.NewReader(raw))
	if err != nil {
		t.Fatalf("read the message: %v", err)
	}
	_, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil {
		t.Fatalf("read the Content-Type: %v", err)
	}
	return params["boundary"]
}

// received is the message the fake accepted under id.
func received(t *testing.T, fx *graphFixture, id string) motoserver.Sent {
	t.Helper()
	for _, s := range fx.fake.Received() {
		if s.ID == id {
			wire(t, s.Raw)
			return s
		}
	}
	t.Fatalf("message %s is not in the fake's mailbox", id)
	return motoserver.Sent{}
}

func TestNewGraphChecksItsConfig(t *testing.T) {
	const secret = "s3cr3t-value"
	ok := mail.GraphConfig{TenantID: "t", ClientID: "c", ClientSecret: secret, Sender: graphSender}
	cases := []struct {
		name   string
		mutate func(*mail.GraphConfig)
		field  string // what the error must name; "" when the config is valid
	}{
		{"valid", func(*mail.GraphConfig) {}, ""},
		{"valid bases", func(c *mail.GraphConfig) {
			c.APIBase, c.LoginBase = "http://127.0.0.1:9/v1.0/", "https://login.example"
		}, ""},
		{"no tenant", func(c *mail.GraphConfig) { c.TenantID = " " }, "TenantID"},
		{"no client id", func(c *mail.GraphConfig) { c.ClientID = "" }, "ClientID"},
		{"no secret", func(c *mail.GraphConfig) { c.ClientSecret = "" }, "ClientSecret"},
		{"no sender", func(c *mail.GraphConfig) { c.Sender = "" }, "Sender"},
		{"sender with a name", func(c *mail.GraphConfig) { c.Sender = "Oracle <" + graphSender + ">" }, "Sender"},
		{"relative API base", func(c *mail.GraphConfig) { c.APIBase = "/v1.0" }, "APIBase"},
		{"API base without host", func(c *mail.GraphConfig) { c.APIBase = "https:///v1.0" }, "APIBase"},
		{"login base not http", func(c *mail.GraphConfig) { c.LoginBase = "ftp://login.example" }, "LoginBase"},
		{"login base with a query", func(c *mail.GraphConfig) { c.LoginBase = "https://login.example/?x=" + secret }, "LoginBase"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := ok
			c.mutate(&cfg)
			g, err := mail.NewGraph(cfg)
			if c.field == "" {
				if err != nil || g == nil {
					t.Fatalf("NewGraph = %v, %v", g, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.field) {
				t.Fatalf("error %v, want one naming %s", err, c.field)
			}
			if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), graphSender) {
				t.Errorf("the error quotes the config: %v", err)
			}
		})
	}
}

func TestParseGraphCredentials(t *testing.T) {
	const secret = "Xy7~s3cr3t.value"
	cases := []struct {
		name, json string
		missing    string // the field the error must name; "" when valid
	}{
		{"valid", `{"tenant_id":"t","client_id":"c","client_secret":"` + secret + `","note":"rotated"}`, ""},
		{"no tenant", `{"client_id":"c","client_secret":"` + secret + `"}`, "tenant_id"},
		{"no client id", `{"tenant_id":"t","client_id":" ","client_secret":"` + secret + `"}`, "client_id"},
		{"no secret", `{"tenant_id":"t","client_id":"c"}`, "client_secret"},
		{"not JSON", `tenant_id=t client_secret=` + secret, "JSON"},
		{"a number for the secret", `{"tenant_id":"t","client_id":"c","client_secret":7}`, "JSON"},
		{"truncated", `{"tenant_id":"t","client_id":"c","client_secret":"` + secret, "JSON"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tenant, client, sec, err := mail.ParseGraphCredentials(c.json)
			if c.missing == "" {
				if err != nil || tenant != "t" || client != "c" || sec != secret {
					t.Fatalf("got %q %q %q, %v", tenant, client, sec, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.missing) {
				t.Fatalf("error %v, want one naming %s", err, c.missing)
			}
			if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "Xy7") {
				t.Errorf("the error quotes the secret: %v", err)
			}
		})
	}
}
