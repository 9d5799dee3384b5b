package fakegraph_test

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"42sisters.ai/oracle/infra/fakes/fakegraph"
)

const (
	sender    = "oracle@42sisters.ai"
	recipient = "Jane.Doe+x@example.com"
	message   = "From: 42 Sisters AI <" + sender + ">\r\nTo: " + recipient + "\r\nSubject: =?UTF-8?Q?caf=C3=A9?=\r\n" +
		"Date: Sat, 21 Nov 2026 14:23:07 +0000\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=UTF-8\r\n\r\nGREEN.\r\n"
)

type fixture struct {
	fake *fakegraph.Server
	url  string
}

func newFixture(t *testing.T, o fakegraph.Options) *fixture {
	t.Helper()
	fake := fakegraph.New(o)
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	return &fixture{fake: fake, url: srv.URL}
}

func (f *fixture) do(t *testing.T, req *http.Request) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

func (f *fixture) request(t *testing.T, method, path, contentType, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, f.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	return req
}

// grantForm is a valid client-credentials request with changes.
func grantForm(change func(url.Values)) string {
	v := url.Values{
		"grant_type": {"client_credentials"}, "client_id": {fakegraph.DefaultClientID},
		"client_secret": {fakegraph.DefaultClientSecret}, "scope": {fakegraph.Scope},
	}
	if change != nil {
		change(v)
	}
	return v.Encode()
}

type tokenAnswer struct {
	TokenType    string `json:"token_type"`
	ExpiresIn    int64  `json:"expires_in"`
	ExtExpiresIn int64  `json:"ext_expires_in"`
	AccessToken  string `json:"access_token"`
	Error        string `json:"error"`
	Description  string `json:"error_description"`
}

func (f *fixture) tokenRequest(t *testing.T, tenant, form string) (*http.Response, tokenAnswer) {
	t.Helper()
	resp, b := f.do(t, f.request(t, http.MethodPost, "/"+tenant+"/oauth2/v2.0/token", "application/x-www-form-urlencoded", form))
	var a tokenAnswer
	if err := json.Unmarshal(b, &a); err != nil {
		t.Fatalf("token answer %d is not JSON: %s", resp.StatusCode, b)
	}
	if strings.Contains(string(b), fakegraph.DefaultClientSecret) {
		t.Errorf("the answer quotes the secret: %s", b)
	}
	return resp, a
}

func (f *fixture) token(t *testing.T) string {
	t.Helper()
	resp, a := f.tokenRequest(t, fakegraph.DefaultTenant, grantForm(nil))
	if resp.StatusCode != http.StatusOK || a.AccessToken == "" {
		t.Fatalf("token: %d %+v", resp.StatusCode, a)
	}
	return a.AccessToken
}

type graphAnswer struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// send posts body to sendMail; token "" sends no Authorization.
func (f *fixture) send(t *testing.T, token, contentType, body string) (*http.Response, graphAnswer) {
	t.Helper()
	req := f.request(t, http.MethodPost, "/v1.0/users/"+url.PathEscape(sender)+"/sendMail", contentType, body)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("client-request-id", "0f0e0d0c-0000-4000-8000-000000000001")
	resp, b := f.do(t, req)
	var a graphAnswer
	if resp.StatusCode != http.StatusAccepted {
		if err := json.Unmarshal(b, &a); err != nil {
			t.Fatalf("error answer %d is not JSON: %s", resp.StatusCode, b)
		}
	} else if len(b) != 0 {
		t.Errorf("202 with a body: %s", b)
	}
	if resp.Header.Get("request-id") == "" {
		t.Errorf("answer %d without a request-id", resp.StatusCode)
	}
	return resp, a
}

func encoded(raw string) string { return base64.StdEncoding.EncodeToString([]byte(raw)) }

func (f *fixture) control(t *testing.T, body string) (int, string) {
	t.Helper()
	resp, b := f.do(t, f.request(t, http.MethodPost, "/_control", "application/json", body))
	return resp.StatusCode, string(b)
}

func TestTokenGrant(t *testing.T) {
	f := newFixture(t, fakegraph.Options{TokenTTL: 1500 * time.Millisecond})
	resp, a := f.tokenRequest(t, fakegraph.DefaultTenant, grantForm(nil))
	// Rounded up: 1 s would be sent as 1, 0.5 s as 1, never as 0, which
	// clients read as "never expires".
	if resp.StatusCode != http.StatusOK || a.TokenType != "Bearer" || a.ExpiresIn != 2 || a.ExtExpiresIn != 2 || a.AccessToken == "" {
		t.Fatalf("got %d %+v", resp.StatusCode, a)
	}
	if resp.Header.Get("x-ms-request-id") == "" || resp.Header.Get("Cache-Control") == "" {
		t.Errorf("headers %v", resp.Header)
	}

	// The credentials in Basic authentication, as RFC 6749 allows.
	req := f.request(t, http.MethodPost, "/"+fakegraph.DefaultTenant+"/oauth2/v2.0/token", "application/x-www-form-urlencoded",
		grantForm(func(v url.Values) { v.Del("client_id"); v.Del("client_secret") }))
	req.SetBasicAuth(url.QueryEscape(fakegraph.DefaultClientID), url.QueryEscape(fakegraph.DefaultClientSecret))
	if resp, b := f.do(t, req); resp.StatusCode != http.StatusOK {
		t.Errorf("Basic authentication: %d %s", resp.StatusCode, b)
	}
	if n := f.fake.CountCalls(fakegraph.KindToken); n != 2 {
		t.Errorf("%d token calls, want 2", n)
	}
}

func TestTokenRefusals(t *testing.T) {
	f := newFixture(t, fakegraph.Options{})
	cases := []struct {
		name, tenant string
		change       func(url.Values)
		status       int
		code         string
	}{
		{"unknown tenant", "contoso.example", nil, 400, "invalid_request"},
		{"no grant type", fakegraph.DefaultTenant, func(v url.Values) { v.Del("grant_type") }, 400, "invalid_request"},
		{"password grant", fakegraph.DefaultTenant, func(v url.Values) { v.Set("grant_type", "password") }, 400, "unsupported_grant_type"},
		{"no client id", fakegraph.DefaultTenant, func(v url.Values) { v.Del("client_id") }, 400, "invalid_request"},
		{"unknown client", fakegraph.DefaultTenant, func(v url.Values) { v.Set("client_id", "someone-else") }, 400, "unauthorized_client"},
		{"no secret", fakegraph.DefaultTenant, func(v url.Values) { v.Del("client_secret") }, 401, "invalid_client"},
		{"wrong secret", fakegraph.DefaultTenant, func(v url.Values) { v.Set("client_secret", "guess") }, 401, "invalid_client"},
		{"no scope", fakegraph.DefaultTenant, func(v url.Values) { v.Del("scope") }, 400, "invalid_scope"},
		{"delegated scope", fakegraph.DefaultTenant, func(v url.Values) { v.Set("scope", "Mail.Send") }, 400, "invalid_scope"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, a := f.tokenRequest(t, c.tenant, grantForm(c.change))
			if resp.StatusCode != c.status || a.Error != c.code || a.AccessToken != "" {
				t.Errorf("got %d %q, want %d %q", resp.StatusCode, a.Error, c.status, c.code)
			}
			if !strings.HasPrefix(a.Description, "AADSTS") || resp.Header.Get("x-ms-request-id") == "" {
				t.Errorf("not shaped as Entra ID's: %+v, headers %v", a, resp.Header)
			}
		})
	}
}

func TestSendMailAuthentication(t *testing.T) {
	f := newFixture(t, fakegraph.Options{})
	for name, token := range map[string]string{"no token": "", "unknown token": "fake-graph.0123"} {
		resp, a := f.send(t, token, "text/plain", encoded(message))
		if resp.StatusCode != http.StatusUnauthorized || a.Error.Code != "InvalidAuthenticationToken" {
			t.Errorf("%s: %d %+v", name, resp.StatusCode, a)
		}
	}
	token := f.token(t)
	if resp, a := f.send(t, token, "text/plain", encoded(message)); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("valid token: %d %+v", resp.StatusCode, a)
	}
	if _, err := f.fake.Control(fakegraph.Control{ExpireTokens: true}); err != nil {
		t.Fatal(err)
	}
	if resp, a := f.send(t, token, "text/plain", encoded(message)); resp.StatusCode != http.StatusUnauthorized || a.Error.Code != "InvalidAuthenticationToken" {
		t.Errorf("expired token: %d %+v", resp.StatusCode, a)
	}
	if resp, _ := f.send(t, f.token(t), "text/plain", encoded(message)); resp.StatusCode != http.StatusAccepted {
		t.Errorf("a new token after expiry: %d", resp.StatusCode)
	}
	if n := len(f.fake.Received()); n != 2 {
		t.Errorf("%d messages received, want 2", n)
	}
}

func TestSendMailRefusals(t *testing.T) {
	f := newFixture(t, fakegraph.Options{})
	token := f.token(t)
	cases := []struct {
		name, contentType, body string
		status                  int
		code                    string
	}{
		{"JSON content type", "application/json", encoded(message), 400, "UnableToDeserializePostBody"},
		{"no content type", "", encoded(message), 400, "UnableToDeserializePostBody"},
		{"not base64", "text/plain", message, 400, "ErrorMimeContentInvalidBase64String"},
		{"empty", "text/plain", "", 400, "ErrorMimeContentInvalidBase64String"},
		{"not MIME", "text/plain", encoded("no header here\r\n"), 400, "ErrorMimeContentInvalid"},
		{"no recipient", "text/plain", encoded("From: " + sender + "\r\nSubject: s\r\n\r\nbody\r\n"), 400, "ErrorInvalidRecipients"},
		{"over 4 MB", "text/plain", strings.Repeat("QUJD", 1<<20+1), 413, "ErrorMessageSizeExceeded"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, a := f.send(t, token, c.contentType, c.body)
			if resp.StatusCode != c.status || a.Error.Code != c.code {
				t.Errorf("got %d %+v, want %d %s", resp.StatusCode, a, c.status, c.code)
			}
		})
	}
	// Base64 broken over lines, as MIME tools write it, is accepted.
	folded := encoded(message)
	folded = folded[:40] + "\r\n" + folded[40:]
	if resp, a := f.send(t, token, "text/plain; charset=us-ascii", folded); resp.StatusCode != http.StatusAccepted {
		t.Errorf("folded base64: %d %+v", resp.StatusCode, a)
	}
	if n := len(f.fake.Received()); n != 1 {
		t.Errorf("%d messages received, want only the valid one", n)
	}
}

func TestControlQueuesAnswersInOrder(t *testing.T) {
	f := newFixture(t, fakegraph.Options{})
	token := f.token(t)
	status, body := f.control(t, `{"send":[{"status":401},{"status":429,"retry_after_s":120},{"status":503},`+
		`{"status":400,"code":"ErrorInvalidRecipients"},{"status":403},{"status":404}],"token":[{"status":400,"error":"invalid_client"}]}`)
	if status != http.StatusOK || !strings.Contains(body, `"send_queued":6`) || !strings.Contains(body, `"token_queued":1`) {
		t.Fatalf("control: %d %s", status, body)
	}
	want := []struct {
		status     int
		code       string
		retryAfter string
	}{
		{401, "InvalidAuthenticationToken", ""}, {429, "ApplicationThrottled", "120"}, {503, "ServiceUnavailable", ""},
		{400, "ErrorInvalidRecipients", ""}, {403, "ErrorAccessDenied", ""}, {404, "ErrorInvalidUser", ""}, {202, "", ""},
	}
	for i, w := range want {
		resp, a := f.send(t, token, "text/plain", encoded(message))
		if resp.StatusCode != w.status || a.Error.Code != w.code || resp.Header.Get("Retry-After") != w.retryAfter {
			t.Errorf("send %d: %d %q Retry-After %q, want %d %q %q", i+1, resp.StatusCode, a.Error.Code, resp.Header.Get("Retry-After"), w.status, w.code, w.retryAfter)
		}
		// As Exchange's do, the messages quote the addresses they concern,
		// which a client must not pass on.
		switch w.code {
		case "ErrorInvalidRecipients":
			if !strings.Contains(a.Error.Message, recipient) {
				t.Errorf("ErrorInvalidRecipients does not quote the recipient: %q", a.Error.Message)
			}
		case "ErrorInvalidUser":
			if !strings.Contains(a.Error.Message, sender) {
				t.Errorf("ErrorInvalidUser does not quote the sender: %q", a.Error.Message)
			}
		}
	}
	resp, a := f.tokenRequest(t, fakegraph.DefaultTenant, grantForm(nil))
	if resp.StatusCode != 400 || a.Error != "invalid_client" {
		t.Errorf("queued token answer: %d %+v", resp.StatusCode, a)
	}
	f.token(t) // the queue is empty again
	calls := f.fake.Calls()
	forced := 0
	for _, c := range calls {
		if c.Forced {
			forced++
		}
	}
	if forced != 7 {
		t.Errorf("%d forced answers recorded, want 7", forced)
	}
}

func TestControlSendAlwaysUntilReset(t *testing.T) {
	f := newFixture(t, fakegraph.Options{})
	token := f.token(t)
	date := time.Date(2026, 11, 21, 14, 30, 0, 0, time.UTC).Format(http.TimeFormat)
	if status, body := f.control(t, `{"send":[{"status":500}],"send_always":{"status":503,"retry_after_date":"`+date+`"}}`); status != http.StatusOK {
		t.Fatalf("control: %d %s", status, body)
	}
	// The queue first, then the standing answer.
	for i, want := range []int{500, 503, 503} {
		if resp, _ := f.send(t, token, "text/plain", encoded(message)); resp.StatusCode != want {
			t.Errorf("send %d: %d, want %d", i+1, resp.StatusCode, want)
		} else if want == 503 && resp.Header.Get("Retry-After") != date {
			t.Errorf("send %d: Retry-After %q, want %q", i+1, resp.Header.Get("Retry-After"), date)
		}
	}
	if status, body := f.control(t, `{"reset":true}`); status != http.StatusOK || !strings.Contains(body, `"send_always":null`) {
		t.Fatalf("reset: %d %s", status, body)
	}
	if resp, _ := f.send(t, token, "text/plain", encoded(message)); resp.StatusCode != http.StatusAccepted {
		t.Errorf("after reset: %d", resp.StatusCode)
	}
}

func TestControlValidation(t *testing.T) {
	f := newFixture(t, fakegraph.Options{})
	many := strings.Repeat(`{"status":503},`, 100) + `{"status":503}`
	cases := map[string]string{
		"not JSON":                         `{"send":`,
		"unknown field":                    `{"sned":[{"status":503}]}`,
		"unknown answer field":             `{"send":[{"status":503,"delay":5}]}`,
		"data after the object":            `{} {}`,
		"success status":                   `{"send":[{"status":202}]}`,
		"status Graph does not answer":     `{"send":[{"status":418}]}`,
		"token status 403":                 `{"token":[{"status":403}]}`,
		"code with spaces":                 `{"send":[{"status":400,"code":"Error Invalid"}]}`,
		"OAuth code in capitals":           `{"token":[{"status":400,"error":"INVALID_CLIENT"}]}`,
		"retry delay on a 400":             `{"send":[{"status":400,"retry_after_s":5}]}`,
		"retry delay over an hour":         `{"send":[{"status":429,"retry_after_s":3601}]}`,
		"negative retry delay":             `{"token":[{"status":503,"retry_after_s":-1}]}`,
		"seconds and date":                 `{"send":[{"status":429,"retry_after_s":5,"retry_after_date":"Sat, 21 Nov 2026 14:30:00 GMT"}]}`,
		"date not an HTTP date":            `{"send":[{"status":429,"retry_after_date":"2026-11-21T14:30:00Z"}]}`,
		"send_always success":              `{"send_always":{"status":200}}`,
		"more than 100 answers":            `{"send":[` + many + `]}`,
		"a valid part with an invalid one": `{"send":[{"status":503}],"token":[{"status":200}]}`,
	}
	for name, body := range cases {
		t.Run(name, func(t *testing.T) {
			status, answer := f.control(t, body)
			if status != http.StatusBadRequest || !strings.Contains(answer, "Invalid control") {
				t.Errorf("got %d %s, want 400", status, answer)
			}
		})
	}
	// Nothing of a refused control was applied.
	if status, body := f.control(t, `{}`); status != http.StatusOK || body != `{"send_queued":0,"token_queued":0,"send_always":null}` {
		t.Errorf("state after refusals: %d %s", status, body)
	}
	// The bound is on what waits: 100 at once, then no more.
	if status, body := f.control(t, `{"send":[`+strings.Repeat(`{"status":503},`, 99)+`{"status":503}]}`); status != http.StatusOK {
		t.Fatalf("100 answers: %d %s", status, body)
	}
	if status, _ := f.control(t, `{"send":[{"status":503}]}`); status != http.StatusBadRequest {
		t.Errorf("a 101st answer: %d, want 400", status)
	}
	if status, body := f.control(t, `{"reset":true,"send":[{"status":503}]}`); status != http.StatusOK || !strings.Contains(body, `"send_queued":1`) {
		t.Errorf("reset then queue: %d %s", status, body)
	}
}

func TestMailbox(t *testing.T) {
	f := newFixture(t, fakegraph.Options{})
	html := "From: " + sender + "\r\nTo: " + recipient + "\r\nCc: bob@example.com\r\nReply-To: help@42sisters.ai\r\nSubject: verdict\r\n" +
		"Date: Sat, 21 Nov 2026 14:23:07 +0000\r\nMIME-Version: 1.0\r\nContent-Type: multipart/alternative; boundary=b\r\n\r\n" +
		"--b\r\nContent-Type: text/plain; charset=UTF-8\r\n\r\nGREEN.\r\n--b\r\nContent-Type: text/html; charset=UTF-8\r\n\r\n<p>GREEN.</p>\r\n--b--\r\n"
	token := f.token(t)
	for _, raw := range []string{message, html} {
		if resp, a := f.send(t, token, "text/plain", encoded(raw)); resp.StatusCode != http.StatusAccepted {
			t.Fatalf("send: %d %+v", resp.StatusCode, a)
		}
	}

	got := f.fake.Received()
	if len(got) != 2 {
		t.Fatalf("%d messages, want 2", len(got))
	}
	first, second := got[0], got[1]
	if first.ID != "graph-0f0e0d0c-0000-4000-8000-000000000001" || first.Subject != "café" || first.Text != "GREEN.\n" ||
		first.From != "42 Sisters AI <"+sender+">" || len(first.To) != 1 || first.To[0] != recipient || first.Raw != message ||
		!first.At.Equal(time.Date(2026, 11, 21, 14, 23, 7, 0, time.UTC)) {
		t.Errorf("first message: %+v", first)
	}
	if second.Text != "GREEN." || second.HTML != "<p>GREEN.</p>" || second.ReplyTo != "help@42sisters.ai" ||
		strings.Join(second.To, ",") != recipient+",bob@example.com" {
		t.Errorf("second message: %+v", second)
	}

	resp, b := f.do(t, f.request(t, http.MethodGet, "/_mailbox", "", ""))
	var listed []fakegraph.Message
	if err := json.Unmarshal(b, &listed); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /_mailbox: %d %s", resp.StatusCode, b)
	}
	if len(listed) != 2 || listed[1].Mailbox != sender || listed[1].HTML != second.HTML || listed[0].Raw != message || listed[0].ID != first.ID {
		t.Errorf("listed %+v", listed)
	}

	if resp, _ := f.do(t, f.request(t, http.MethodDelete, "/_mailbox", "", "")); resp.StatusCode != http.StatusNoContent {
		t.Errorf("DELETE /_mailbox: %d", resp.StatusCode)
	}
	if _, b := f.do(t, f.request(t, http.MethodGet, "/_mailbox", "", "")); string(b) != "[]" {
		t.Errorf("after DELETE: %s", b)
	}
}

func TestCallsHoldNoSecrets(t *testing.T) {
	f := newFixture(t, fakegraph.Options{})
	token := f.token(t)
	f.tokenRequest(t, fakegraph.DefaultTenant, grantForm(func(v url.Values) { v.Set("client_secret", "guess-"+fakegraph.DefaultClientSecret) }))
	f.send(t, token, "text/plain", encoded(message))
	if _, err := f.fake.Control(fakegraph.Control{Send: []fakegraph.SendAnswer{{Status: 429, RetryAfterS: 9}}}); err != nil {
		t.Fatal(err)
	}
	f.send(t, token, "text/plain", encoded(message))

	resp, b := f.do(t, f.request(t, http.MethodGet, "/_calls", "", ""))
	var calls []fakegraph.Call
	if err := json.Unmarshal(b, &calls); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /_calls: %d %s", resp.StatusCode, b)
	}
	want := []struct {
		kind, code, retryAfter string
		status                 int
	}{
		{fakegraph.KindToken, "", "", 200}, {fakegraph.KindToken, "invalid_client", "", 401},
		{fakegraph.KindSend, "", "", 202}, {fakegraph.KindSend, "ApplicationThrottled", "9", 429},
	}
	if len(calls) != len(want) {
		t.Fatalf("%d calls, want %d: %s", len(calls), len(want), b)
	}
	for i, w := range want {
		c := calls[i]
		if c.Kind != w.kind || c.Status != w.status || c.Code != w.code || c.RetryAfter != w.retryAfter || c.RequestID == "" || c.Time.IsZero() {
			t.Errorf("call %d: %+v, want %+v", i+1, c, w)
		}
	}
	for _, secret := range []string{fakegraph.DefaultClientSecret, token, "@", "Jane", "GREEN"} {
		if strings.Contains(string(b), secret) {
			t.Errorf("/_calls holds %q: %s", secret, b)
		}
	}

	if resp, _ := f.do(t, f.request(t, http.MethodDelete, "/_calls", "", "")); resp.StatusCode != http.StatusNoContent || len(f.fake.Calls()) != 0 {
		t.Errorf("DELETE /_calls: %d, %d calls left", resp.StatusCode, len(f.fake.Calls()))
	}
}

func TestUnknownRoutesAreGraphNotFound(t *testing.T) {
	f := newFixture(t, fakegraph.Options{})
	for _, path := range []string{"/", "/v1.0/me/sendMail", "/v1.0/users/" + sender + "/messages", "/common/oauth2/v2.0/authorize"} {
		resp, b := f.do(t, f.request(t, http.MethodGet, path, "", ""))
		var a graphAnswer
		if resp.StatusCode != http.StatusNotFound || json.Unmarshal(b, &a) != nil || a.Error.Code == "" {
			t.Errorf("GET %s: %d %s", path, resp.StatusCode, b)
		}
	}
	if n := len(f.fake.Calls()); n != 0 {
		t.Errorf("%d calls recorded for unknown routes", n)
	}
}
