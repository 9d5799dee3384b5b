package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"42sisters.ai/oracle/infra/fakes/fakestripe"
	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/httpapi"
	"42sisters.ai/oracle/shared/obs"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/stripex"
)

type fixture struct {
	h      *Handler
	stripe *fakestripe.Server
	alerts *testkit.Alerts
	logs   *bytes.Buffer
}

func newFixture(t *testing.T, key string) *fixture {
	t.Helper()
	fs := fakestripe.New(fakestripe.Options{})
	srv := httptest.NewServer(fs)
	t.Cleanup(srv.Close)
	f := &fixture{stripe: fs, alerts: &testkit.Alerts{}, logs: &bytes.Buffer{}}
	f.h = &Handler{
		Stripe:  stripex.New(key, stripex.Options{BaseURL: srv.URL}),
		BaseURL: "https://42sisters.ai",
		CORS:    httpapi.CORS{Origins: []string{"https://42sisters.ai"}, Methods: "POST, OPTIONS"},
		Alerts:  f.alerts,
		Log:     obs.NewLogger(f.logs, "DEBUG"),
	}
	return f
}

func post(body string, headers ...string) httpapi.Request {
	r := httpapi.Request{Headers: map[string]string{"content-type": "application/json"}, Body: body}
	r.RequestContext.HTTP.Method = http.MethodPost
	for i := 0; i+1 < len(headers); i += 2 {
		r.Headers[headers[i]] = headers[i+1]
	}
	return r
}

func (f *fixture) call(t *testing.T, r httpapi.Request) httpapi.Response {
	t.Helper()
	resp, err := f.h.Handle(context.Background(), r)
	if err != nil {
		t.Fatalf("handler error: %v", err)
	}
	return resp
}

// session returns the Checkout Session behind a {"url": ...} answer.
func (f *fixture) session(t *testing.T, resp httpapi.Response) (id string, amount int64, currency string, meta map[string]string, success string) {
	t.Helper()
	var out struct{ URL string }
	if err := json.Unmarshal([]byte(resp.Body), &out); err != nil || out.URL == "" {
		t.Fatalf("answer %d %s", resp.StatusCode, resp.Body)
	}
	id = out.URL[strings.LastIndex(out.URL, "/")+1:]
	s, ok := f.stripe.Session(id)
	if !ok {
		t.Fatalf("no session %s at Stripe", id)
	}
	return s.ID, s.AmountTotal, string(s.Currency), s.Metadata, s.SuccessURL
}

func TestPricesComeOnlyFromTheTierTable(t *testing.T) {
	// VC-1: each tier is charged its fixed CAD cents; price fields smuggled
	// into the request change nothing.
	f := newFixture(t, "sk_test_checkout")
	want := map[string]int64{"quick": 100, "full": 500, "strategy": 2500}
	smuggled := `,"amount":1,"amount_total":1,"price":1,"unit_amount":1,"currency":"usd","line_items":[{"price_data":{"unit_amount":1}}],"metadata":{"tier":"quick"}`
	for tier, cents := range want {
		for _, extra := range []string{"", smuggled} {
			resp := f.call(t, post(`{"tier":"`+tier+`","query":"Should I open a bakery?"`+extra+`}`))
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("%s: %d %s", tier, resp.StatusCode, resp.Body)
			}
			_, amount, currency, meta, success := f.session(t, resp)
			if amount != cents || currency != "cad" || meta["tier"] != tier {
				t.Errorf("%s%s: charged %d %s tier %q", tier, map[bool]string{true: " (smuggled)"}[extra != ""], amount, currency, meta["tier"])
			}
			if success != "https://42sisters.ai/oracle/result?session_id={CHECKOUT_SESSION_ID}" {
				t.Errorf("success_url %q", success)
			}
		}
	}
}

func TestQueryTravelsInChunks(t *testing.T) {
	f := newFixture(t, "sk_test_checkout")
	for _, q := range []string{"a", strings.Repeat("é", 489) + "🚀" + strings.Repeat("b", 600), strings.Repeat("x", oracle.MaxQueryUnits)} {
		body, _ := json.Marshal(map[string]string{"tier": "full", "query": q, "referral_code": "FRIEND_1"})
		resp := f.call(t, post(string(body)))
		_, _, _, meta, _ := f.session(t, resp)
		got, reason := stripex.ReassembleQuery(meta)
		if reason != oracle.DropNone || got != q {
			t.Fatalf("query of %d bytes did not survive Stripe metadata", len(q))
		}
		if meta["referral_code"] != "FRIEND_1" {
			t.Fatalf("referral code %q", meta["referral_code"])
		}
	}
}

func TestBadInputNeverReachesStripe(t *testing.T) {
	// FM-1 and the bad-input rules: a clear 4xx and no call to Stripe.
	long := strings.Repeat("x", oracle.MaxQueryUnits+1)
	cases := []struct {
		name   string
		req    httpapi.Request
		status int
		msg    string
	}{
		{"unknown tier", post(`{"tier":"premium","query":"q"}`), 400, "unknown tier"},
		{"tier in capitals", post(`{"tier":"QUICK","query":"q"}`), 400, "unknown tier"},
		{"missing tier", post(`{"query":"q"}`), 400, "tier is required"},
		{"tier not a string", post(`{"tier":5,"query":"q"}`), 400, "JSON object"},
		{"empty query", post(`{"tier":"quick","query":""}`), 400, "query is empty"},
		{"blank query", post(`{"tier":"quick","query":"  \n "}`), 400, "query is empty"},
		{"query of invisible characters", post(`{"tier":"quick","query":"\u200b\u200d\ufeff \u2060\u3164"}`), 400, "query is empty"},
		{"missing query", post(`{"tier":"quick"}`), 400, "query is required"},
		{"malformed JSON", post(`{"tier":"quick",`), 400, "JSON object"},
		{"not an object", post(`"quick"`), 400, "JSON object"},
		{"two objects", post(`{"tier":"quick","query":"q"}{}`), 400, "single JSON object"},
		{"empty body", post(``), 400, "JSON object"},
		{"bad referral code", post(`{"tier":"quick","query":"q","referral_code":"<script>"}`), 400, "referral_code"},
		{"query beyond Stripe metadata", post(`{"tier":"quick","query":"` + long + `"}`), 413, "too long"},
		{"huge body", post(`{"tier":"quick","query":"` + strings.Repeat("x", MaxBody) + `"}`), 413, "larger than"},
		{"foreign origin", post(`{"tier":"quick","query":"q"}`, "origin", "https://evil.example"), 403, "origin not allowed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, "sk_test_checkout")
			resp := f.call(t, c.req)
			if resp.StatusCode != c.status || !strings.Contains(resp.Body, c.msg) {
				t.Fatalf("got %d %s, want %d containing %q", resp.StatusCode, resp.Body, c.status, c.msg)
			}
			if calls := f.stripe.Calls(); len(calls) != 0 {
				t.Fatalf("Stripe was called %d times", len(calls))
			}
		})
	}
}

// The order form counts UTF-16 units up to oracle.MaxQueryUnits; every
// query it lets through is taken, however its two-unit characters fall on
// the metadata's chunk boundaries.
func TestEveryQueryTheFormAllowsIsTaken(t *testing.T) {
	f := newFixture(t, "sk_test_checkout")
	q := strings.Repeat("🚀"+strings.Repeat("a", 487), 46) + strings.Repeat("a", 46)
	if oracle.QueryUnits(q) != oracle.MaxQueryUnits {
		t.Fatalf("%d units", oracle.QueryUnits(q))
	}
	body, _ := json.Marshal(map[string]string{"tier": "quick", "query": q})
	if resp := f.call(t, post(string(body))); resp.StatusCode != 200 {
		t.Fatalf("got %d %s", resp.StatusCode, resp.Body)
	}
}

func TestBase64BodyAndCORS(t *testing.T) {
	f := newFixture(t, "sk_test_checkout")
	r := post("", "origin", "https://42sisters.ai")
	r.Body, r.IsBase64Encoded = base64.StdEncoding.EncodeToString([]byte(`{"tier":"quick","query":"Crème?"}`)), true
	resp := f.call(t, r)
	if resp.StatusCode != 200 || resp.Headers["Access-Control-Allow-Origin"] != "https://42sisters.ai" {
		t.Fatalf("got %d %v %s", resp.StatusCode, resp.Headers, resp.Body)
	}
	pre := post("", "origin", "https://42sisters.ai")
	pre.RequestContext.HTTP.Method = http.MethodOptions
	if resp := f.call(t, pre); resp.StatusCode != 204 || resp.Headers["Access-Control-Allow-Methods"] != "POST, OPTIONS" {
		t.Fatalf("preflight %d %v", resp.StatusCode, resp.Headers)
	}
}

func TestRejectedStripeKeyAnswers503AndAlerts(t *testing.T) {
	f := newFixture(t, "sk_live_rejected_by_the_fake")
	resp := f.call(t, post(`{"tier":"quick","query":"q"}`))
	if resp.StatusCode != http.StatusServiceUnavailable || strings.Contains(resp.Body, "sk_") || strings.Contains(resp.Body, "API Key") {
		t.Fatalf("got %d %s", resp.StatusCode, resp.Body)
	}
	if got := f.alerts.Raised(); len(got) != 1 || got[0].Severity != alert.Critical || got[0].Kind != alert.StripeAuth {
		t.Fatalf("alerts %+v", got)
	}
}

func TestLogsHoldNoQuery(t *testing.T) {
	f := newFixture(t, "sk_test_checkout")
	f.call(t, post(`{"tier":"quick","query":"my very private idea"}`))
	f.call(t, post(`{"tier":"nope","query":"my very private idea"}`))
	if strings.Contains(f.logs.String(), "private idea") {
		t.Fatalf("a query reached the logs: %s", f.logs.String())
	}
}
