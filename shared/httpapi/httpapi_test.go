package httpapi_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"42sisters.ai/oracle/shared/httpapi"
	"42sisters.ai/oracle/shared/obs"
	"42sisters.ai/oracle/shared/oracle"
)

func TestBody(t *testing.T) {
	cases := []struct {
		name string
		req  httpapi.Request
		want string
		code oracle.Code
	}{
		{"plain", httpapi.Request{Body: "hello"}, "hello", ""},
		{"base64", httpapi.Request{Body: base64.StdEncoding.EncodeToString([]byte("héllo")), IsBase64Encoded: true}, "héllo", ""},
		{"bad base64", httpapi.Request{Body: "%%%", IsBase64Encoded: true}, "", oracle.CodeInvalid},
		{"too large", httpapi.Request{Body: strings.Repeat("x", 11)}, "", oracle.CodeTooLarge},
		{"too large once decoded", httpapi.Request{Body: base64.StdEncoding.EncodeToString([]byte(strings.Repeat("x", 11))), IsBase64Encoded: true}, "", oracle.CodeTooLarge},
		{"exactly the limit", httpapi.Request{Body: base64.StdEncoding.EncodeToString([]byte(strings.Repeat("x", 10))), IsBase64Encoded: true}, strings.Repeat("x", 10), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, err := httpapi.Body(c.req, 10)
			if c.code != "" {
				if oracle.ErrorCode(err) != c.code {
					t.Fatalf("got %v, want %s", err, c.code)
				}
				return
			}
			if err != nil || string(b) != c.want {
				t.Fatalf("got %q %v", b, err)
			}
		})
	}
}

func TestErrorStatusesAndMessages(t *testing.T) {
	var logs bytes.Buffer
	log := obs.NewLogger(&logs, "INFO")
	cases := []struct {
		err    error
		status int
		body   string
	}{
		{oracle.Errorf(oracle.CodeInvalid, "tier is required"), 400, `{"error":"tier is required"}`},
		{oracle.Errorf(oracle.CodePaymentRequired, "not paid"), 402, `{"error":"not paid"}`},
		{oracle.Errorf(oracle.CodeNotFound, "unknown session"), 404, `{"error":"unknown session"}`},
		{oracle.Errorf(oracle.CodeConflict, "busy"), 409, `{"error":"busy"}`},
		{oracle.Errorf(oracle.CodeTooLarge, "too long"), 413, `{"error":"too long"}`},
		{oracle.Errorf(oracle.CodeUnavailable, "try later"), 503, `{"error":"try later"}`},
		{context.DeadlineExceeded, 500, `{"error":"internal error"}`},
	}
	for _, c := range cases {
		r := httpapi.Error(context.Background(), log, c.err)
		if r.StatusCode != c.status || r.Body != c.body {
			t.Errorf("%v: got %d %s", c.err, r.StatusCode, r.Body)
		}
	}
}

func TestRecoverTurnsPanicsInto500(t *testing.T) {
	var logs bytes.Buffer
	h := httpapi.Recover(obs.NewLogger(&logs, "INFO"), func(context.Context, httpapi.Request) (httpapi.Response, error) {
		panic("boom")
	})
	r, err := h(context.Background(), httpapi.Request{})
	if err != nil || r.StatusCode != http.StatusInternalServerError || strings.Contains(r.Body, "boom") {
		t.Fatalf("got %d %q %v", r.StatusCode, r.Body, err)
	}
	if !strings.Contains(logs.String(), "panic in handler") {
		t.Fatal("panic not logged")
	}
}

func TestCORS(t *testing.T) {
	c := httpapi.CORS{Origins: []string{"https://42sisters.ai"}, Methods: "POST, OPTIONS"}
	req := func(origin string) httpapi.Request {
		return httpapi.Request{Headers: map[string]string{"origin": origin}}
	}
	if !c.Allowed(req("https://42sisters.ai")) || c.Allowed(req("https://evil.example")) || !c.Allowed(httpapi.Request{}) {
		t.Fatal("Allowed")
	}
	p := c.Preflight(req("https://42sisters.ai"))
	if p.StatusCode != 204 || p.Headers["Access-Control-Allow-Origin"] != "https://42sisters.ai" || p.Headers["Access-Control-Allow-Methods"] == "" {
		t.Fatalf("preflight %+v", p)
	}
	if p := c.Preflight(req("https://evil.example")); p.Headers["Access-Control-Allow-Origin"] != "" {
		t.Fatal("preflight allowed a foreign origin")
	}
}

// A body encoded once is answered as JSON answers the value itself.
func TestEncodedIsAnsweredAsItsValue(t *testing.T) {
	v := map[string]any{"received": true, "n": 2}
	got, want := httpapi.JSON(http.StatusOK, httpapi.MustEncode(v)), httpapi.JSON(http.StatusOK, v)
	if got.StatusCode != want.StatusCode || got.Body != want.Body || !reflect.DeepEqual(got.Headers, want.Headers) || want.Body != `{"n":2,"received":true}` {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}

// A value that cannot be encoded is answered 500 and logged with what it
// was and why; nothing of the value itself is logged.
func TestJSONLogsWhatItCouldNotEncode(t *testing.T) {
	var logs bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(obs.NewLogger(&logs, "INFO"))
	t.Cleanup(func() { slog.SetDefault(prev) })
	resp := httpapi.JSON(http.StatusOK, map[string]any{"verdict": json.RawMessage(`{"summary":"secret`)})
	if resp.StatusCode != http.StatusInternalServerError || resp.Body != `{"error":"internal error"}` {
		t.Fatalf("%d %s, want the plain 500", resp.StatusCode, resp.Body)
	}
	got := logs.String()
	for _, want := range []string{"response not encoded", `"status":200`, "map[string]interface {}", "json: error calling MarshalJSON"} {
		if !strings.Contains(got, want) {
			t.Fatalf("log %q, want it to say %q", got, want)
		}
	}
	if strings.Contains(got, "secret") {
		t.Fatalf("the value leaked into the log: %q", got)
	}
}
