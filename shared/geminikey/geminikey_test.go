package geminikey_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	fakegemini "42sisters.ai/oracle/infra/fakes/fakegemini"
	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/geminikey"
	"42sisters.ai/oracle/shared/secret"
)

const testKey = "AIzaSy-secret-test-key-0123456789"

// fake serves the fake Gemini over HTTP.
func fake(t *testing.T) (*fakegemini.Server, string) {
	t.Helper()
	f := fakegemini.New(fakegemini.Options{})
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv.URL
}

func checker(t *testing.T, o geminikey.Options) *geminikey.Checker {
	t.Helper()
	c, err := geminikey.New(o)
	if err != nil {
		t.Fatalf("new checker: %v", err)
	}
	return c
}

// The fake Gemini accepts the test key and refuses InvalidKey as Google
// refuses an unknown key (400 API_KEY_INVALID); a model it does not know
// is no refusal of the key. No check is a generateContent call.
func TestCheckKeyAgainstTheFake(t *testing.T) {
	cases := []struct {
		name    string
		key     string
		model   string
		ok      bool
		refused bool
		status  int
	}{
		{name: "accepted", key: testKey, ok: true},
		{name: "accepted, another model", key: testKey, model: "gemini-2.5-pro", ok: true},
		{name: "unknown key", key: fakegemini.InvalidKey, refused: true, status: http.StatusBadRequest},
		{name: "unknown model", key: testKey, model: "no such model!", status: http.StatusNotFound},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, url := fake(t)
			err := checker(t, geminikey.Options{Key: secret.Static(tc.key), Model: tc.model, BaseURL: url}).CheckKey(context.Background())
			if tc.ok {
				if err != nil {
					t.Fatalf("CheckKey = %v, want nil", err)
				}
			} else {
				var e *geminikey.Error
				if !asError(err, &e) || e.Refused != tc.refused || e.HTTPStatus != tc.status || geminikey.Refused(err) != tc.refused {
					t.Fatalf("CheckKey = %v, want refused=%v with HTTP %d", err, tc.refused, tc.status)
				}
				wantNoSecret(t, err, tc.key)
			}
			if n := len(f.Calls()); n != 0 {
				t.Errorf("the check made %d generateContent calls", n)
			}
		})
	}
}

// Google's other answers: 401 and 403 refuse the key, a 400 that blames
// something else does not, nor does an outage, a description without a
// name, or no answer within the timeout. The request is a GET of the
// model's description with the key in its header, never in the URL.
func TestCheckKeyAnswers(t *testing.T) {
	cases := []struct {
		name    string
		status  int
		body    string
		hang    bool
		ok      bool
		refused bool
	}{
		{name: "described", status: 200, body: `{"name":"models/gemini-2.5-flash"}`, ok: true},
		{name: "401", status: 401, body: `{"error":{"code":401,"status":"UNAUTHENTICATED","message":"no"}}`, refused: true},
		{name: "403", status: 403, body: `{"error":{"code":403,"status":"PERMISSION_DENIED","message":"no"}}`, refused: true},
		{name: "400 expired key", status: 400, body: `{"error":{"code":400,"status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_EXPIRED"}]}}`, refused: true},
		{name: "400 for another reason", status: 400, body: `{"error":{"code":400,"status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"LOCATION_UNSUPPORTED"}]}}`},
		{name: "429", status: 429, body: `{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","message":"slow down"}}`},
		{name: "503", status: 503, body: `{"error":{"code":503,"status":"UNAVAILABLE","message":"overloaded"}}`},
		{name: "503 not from Google", status: 503, body: `<html>bad gateway</html>`},
		{name: "200 without a name", status: 200, body: `{}`},
		{name: "hang", hang: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var method, path, query, key string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				method, path, query, key = r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("x-goog-api-key")
				mu.Unlock()
				if tc.hang {
					<-r.Context().Done()
					return
				}
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.body))
			}))
			defer srv.Close()
			c := checker(t, geminikey.Options{Key: secret.Static(testKey), BaseURL: srv.URL + "/", Timeout: 100 * time.Millisecond})
			err := c.CheckKey(context.Background())
			if (err == nil) != tc.ok || geminikey.Refused(err) != tc.refused {
				t.Errorf("CheckKey = %v, want ok=%v refused=%v", err, tc.ok, tc.refused)
			}
			if err != nil {
				wantNoSecret(t, err, testKey)
			}
			mu.Lock()
			defer mu.Unlock()
			if method != http.MethodGet || path != "/v1beta/models/"+geminikey.DefaultModel || query != "" || key != testKey {
				t.Errorf("sent %s %s?%s with key %q", method, path, query, key)
			}
		})
	}
}

// A refused key is read again from its secret in moto's Secrets Manager,
// at most once a minute, and the new key checked at once; a key that did
// not change is reported refused after one request.
func TestARefusedKeyIsReadAgain(t *testing.T) {
	const oldKey, newKey = "AIzaSy-old-key-0123456789", "AIzaSy-new-key-0123456789"
	cases := []struct {
		name    string
		rotate  bool
		after   time.Duration
		refused bool
	}{
		{"rotated: the new key is checked", true, time.Minute, false},
		{"not rotated", false, time.Minute, true},
		{"rotated, but read less than a minute ago", true, 59 * time.Second, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, url := fake(t)
			f.AcceptOnly(newKey)
			clock := testkit.NewClock(time.Now())
			key := testkit.RotatingSecret(t, "GEMINI_API_KEY", oldKey, clock)
			c := checker(t, geminikey.Options{Key: key.Value, BaseURL: url})
			if err := c.CheckKey(context.Background()); !geminikey.Refused(err) {
				t.Fatalf("CheckKey with the revoked key = %v, want it refused", err)
			}
			if tc.rotate {
				key.Rotate(newKey)
			}
			clock.Add(tc.after)
			err := c.CheckKey(context.Background())
			if geminikey.Refused(err) != tc.refused || (!tc.refused && err != nil) {
				t.Fatalf("CheckKey = %v, want refused=%v", err, tc.refused)
			}
		})
	}
}

func TestNewRefusesBadOptions(t *testing.T) {
	for name, o := range map[string]geminikey.Options{
		"no key":           {Key: secret.Static("")},
		"nil key":          {},
		"negative timeout": {Key: secret.Static(testKey), Timeout: -time.Second},
		"relative URL":     {Key: secret.Static(testKey), BaseURL: "localhost:3002"},
		"other scheme":     {Key: secret.Static(testKey), BaseURL: "ftp://example.com"},
	} {
		if _, err := geminikey.New(o); err == nil {
			t.Errorf("%s: New accepted %+v", name, o)
		}
	}
}

func asError(err error, target **geminikey.Error) bool {
	e, ok := err.(*geminikey.Error)
	*target = e
	return ok
}

func wantNoSecret(t *testing.T, err error, key string) {
	t.Helper()
	if key != "" && strings.Contains(err.Error(), key) {
		t.Errorf("the error %q shows the key", err)
	}
}
