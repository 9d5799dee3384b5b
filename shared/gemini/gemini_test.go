package gemini_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"google.golang.org/genai"

	fakegemini "42sisters.ai/oracle/infra/fakes/fakegemini"
	"42sisters.ai/oracle/shared/gemini"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/prompt"
)

func TestEachTierReplyParses(t *testing.T) {
	f := newFixture(t, fakegemini.Options{})
	c := f.client(t, gemini.Options{})
	for _, tier := range oracle.Tiers() {
		t.Run(string(tier), func(t *testing.T) {
			reply, err := c.Generate(context.Background(), request(tier))
			if err != nil {
				t.Fatalf("generate: %v", err)
			}
			if reply.Model != gemini.DefaultModel || reply.FinishReason != "STOP" {
				t.Errorf("model, finish reason = %q, %q; want %q, STOP", reply.Model, reply.FinishReason, gemini.DefaultModel)
			}
			parse(t, tier, reply.Text)
		})
	}
}

func TestRequestCarriesTheDeterminismSettings(t *testing.T) {
	f := newFixture(t, fakegemini.Options{})
	c := f.client(t, gemini.Options{Model: "gemini-2.5-pro"})
	req := request(oracle.TierStrategy)
	if _, err := c.Generate(context.Background(), req); err != nil {
		t.Fatalf("generate: %v", err)
	}
	calls := f.fake.Calls()
	if len(calls) != 1 {
		t.Fatalf("the fake received %d requests, want exactly 1", len(calls))
	}
	call, g := calls[0], calls[0].GenerationConfig
	if call.Model != "gemini-2.5-pro" || !call.APIKeyPresent || call.SystemInstruction != testSystem || call.UserText != testUser || call.Tier != oracle.TierStrategy {
		t.Errorf("call = %+v", call)
	}
	checks := []struct {
		name string
		ok   bool
	}{
		{"temperature 0", g.Temperature != nil && *g.Temperature == 0},
		{"topP 1", g.TopP != nil && *g.TopP == 1},
		{"topK 1", g.TopK != nil && *g.TopK == 1},
		{"candidateCount 1", g.CandidateCount != nil && *g.CandidateCount == 1},
		{"the seed", g.Seed != nil && *g.Seed == int64(testSeed)},
		{"JSON response", g.ResponseMIMEType == "application/json"},
		{"no JSON schema", g.ResponseJSONSchema == nil},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("request lacks %s: %+v", c.name, g)
		}
	}
	want, err := json.Marshal(req.Schema)
	if err != nil {
		t.Fatal(err)
	}
	if !sameJSON(t, g.ResponseSchema, want) {
		t.Errorf("response schema sent\n%s\nwant\n%s", g.ResponseSchema, want)
	}
}

func TestSamePromptSameAnswerAndAllVerdictsReachable(t *testing.T) {
	f := newFixture(t, fakegemini.Options{})
	c := f.client(t, gemini.Options{})
	ctx := context.Background()

	first, err := c.Generate(ctx, request(oracle.TierFull))
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.Generate(ctx, request(oracle.TierFull))
	if err != nil {
		t.Fatal(err)
	}
	if again.Text != first.Text {
		t.Errorf("the same prompt got two answers:\n%s\n%s", first.Text, again.Text)
	}

	seen := map[oracle.Verdict][]string{}
	for _, idea := range []string{
		"Open a bakery in my village.", "Start a dog walking service.", "Sell handmade candles online.",
		"Build an app for splitting rent.", "Open a bike repair shop.", "Teach guitar lessons on weekends.",
		"Launch a podcast about gardening.", "Run a food truck selling tacos.", "Start a tutoring business.",
		"Open a board game café.", "Make and sell hot sauce.", "Offer house cleaning in my town.",
	} {
		r := request(oracle.TierQuick)
		r.User = idea
		reply, err := c.Generate(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		a := parse(t, oracle.TierQuick, reply.Text)
		seen[a.Verdict] = append(seen[a.Verdict], idea)
	}
	if len(seen) != 4 {
		t.Errorf("verdicts reached: %v; want GREEN, AMBER, RED and NULL", seen)
	}
}

// errorCase is a failure the fake is made to produce and the error the
// client must turn it into.
type errorCase struct {
	name       string
	scenario   string        // posted to /_control first, if any
	key        string        // API key; empty means the test key
	timeout    time.Duration // the client's timeout; 0 means 5 s
	ctxTimeout time.Duration // the caller's deadline, if any
	httpClient *http.Client  // the client's HTTP client, if not the default
	kind       gemini.Kind
	httpStatus int
	retryAfter time.Duration
	apiError   bool // the genai.APIError is reachable with errors.As
}

var errorCases = []errorCase{
	{name: "429 with Google's default delay", scenario: `{"status":429}`, kind: gemini.RateLimited, httpStatus: 429, retryAfter: 7 * time.Second, apiError: true},
	{name: "429 with a 30 s delay", scenario: `{"status":429,"retry_after_s":30}`, kind: gemini.RateLimited, httpStatus: 429, retryAfter: 30 * time.Second, apiError: true},
	{name: "429 without a delay", scenario: `{"status":429,"retry_after_s":0}`, kind: gemini.RateLimited, httpStatus: 429, apiError: true},
	{name: "500", scenario: `{"status":500}`, kind: gemini.ServerError, httpStatus: 500, apiError: true},
	{name: "503", scenario: `{"status":503}`, kind: gemini.ServerError, httpStatus: 503, apiError: true},
	{name: "504", scenario: `{"status":504}`, kind: gemini.Timeout, httpStatus: 504, apiError: true},
	{name: "400", scenario: `{"status":400}`, kind: gemini.BadRequest, httpStatus: 400, apiError: true},
	{name: "404", scenario: `{"status":404}`, kind: gemini.BadRequest, httpStatus: 404, apiError: true},
	{name: "401", scenario: `{"status":401}`, kind: gemini.AuthFailure, httpStatus: 401, apiError: true},
	{name: "403", scenario: `{"status":403}`, kind: gemini.AuthFailure, httpStatus: 403, apiError: true},
	{name: "unknown key, 400 API_KEY_INVALID", key: fakegemini.InvalidKey, kind: gemini.AuthFailure, httpStatus: 400, apiError: true},
	{name: "hang", scenario: `{"hang":true}`, timeout: 100 * time.Millisecond, kind: gemini.Timeout},
	{name: "latency beyond the timeout", scenario: `{"latency_ms":600000}`, timeout: 100 * time.Millisecond, kind: gemini.Timeout},
	{name: "hang past the caller's deadline", scenario: `{"hang":true}`, ctxTimeout: 100 * time.Millisecond, kind: gemini.Timeout},
	{name: "hang past the HTTP client's timeout", scenario: `{"hang":true}`, httpClient: &http.Client{Timeout: 100 * time.Millisecond}, kind: gemini.Timeout},
	{name: "blocked prompt", scenario: `{"blocked":true}`, kind: gemini.ContentFailure},
}

func TestFailuresAreClassified(t *testing.T) {
	f := newFixture(t, fakegemini.Options{})
	for _, tc := range errorCases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.scenario != "" {
				f.control(t, tc.scenario)
			}
			c := f.client(t, gemini.Options{APIKey: tc.key, Timeout: tc.timeout, HTTPClient: tc.httpClient})
			ctx := context.Background()
			if tc.ctxTimeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.ctxTimeout)
				defer cancel()
			}
			start := time.Now()
			reply, err := c.Generate(ctx, request(oracle.TierFull))
			if err == nil {
				t.Fatalf("no error; reply %+v", reply)
			}
			if tc.kind == gemini.Timeout && time.Since(start) > 5*time.Second {
				t.Errorf("the timeout took %s", time.Since(start))
			}
			var e *gemini.Error
			if !errors.As(err, &e) {
				t.Fatalf("error %T %v is not a *gemini.Error", err, err)
			}
			if e.Kind != tc.kind || gemini.KindOf(err) != tc.kind || e.HTTPStatus != tc.httpStatus || e.RetryAfter != tc.retryAfter {
				t.Errorf("got kind %v, HTTP %d, retry after %s; want %v, %d, %s (%v)", e.Kind, e.HTTPStatus, e.RetryAfter, tc.kind, tc.httpStatus, tc.retryAfter, err)
			}
			if errors.As(err, new(genai.APIError)) != tc.apiError {
				t.Errorf("genai.APIError reachable = %v, want %v", !tc.apiError, tc.apiError)
			}
			wantNoSecrets(t, err.Error(), tc.key)
			if tc.kind == gemini.Timeout && tc.httpStatus == 0 && !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("a timeout that does not wrap context.DeadlineExceeded: %v", err)
			}
		})
	}
	// The calls hold the prompt by design, but never a key.
	if calls := f.rawCalls(t); strings.Contains(calls, testKey) || strings.Contains(calls, fakegemini.InvalidKey) {
		t.Error("GET /_calls shows an API key")
	}
}

// wantNoSecrets fails if s holds the API key (or extra), the system
// instruction or the user's text.
func wantNoSecrets(t *testing.T, s, extra string) {
	t.Helper()
	for _, secret := range []string{testKey, extra, "SYSTEM-INSTRUCTION-7f3a", "PROMPT-TEXT-91c2"} {
		if secret != "" && strings.Contains(s, secret) {
			t.Errorf("%q leaks %q", s, secret)
		}
	}
}

func TestCallerCancelIsCanceled(t *testing.T) {
	arrived := make(chan struct{})
	f := newFixture(t, fakegemini.Options{Sleep: func(ctx context.Context, _ time.Duration) error {
		close(arrived)
		<-ctx.Done()
		return ctx.Err()
	}})
	f.control(t, `{"latency_ms":1000}`)
	c := f.client(t, gemini.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.Generate(ctx, request(oracle.TierQuick))
		done <- err
	}()
	<-arrived
	cancel()
	err := <-done
	if gemini.KindOf(err) != gemini.Canceled || !errors.Is(err, context.Canceled) {
		t.Errorf("got %v (kind %v), want Canceled wrapping context.Canceled", err, gemini.KindOf(err))
	}
}

func TestContentScenariosComeBackAsText(t *testing.T) {
	f := newFixture(t, fakegemini.Options{})
	c := f.client(t, gemini.Options{})
	cases := []struct {
		name, scenario string
		tier           oracle.Tier
		check          func(t *testing.T, text string)
	}{
		{"malformed", `{"malformed":true}`, oracle.TierFull, func(t *testing.T, text string) {
			if json.Valid([]byte(text)) {
				t.Errorf("want text that is not JSON, got %s", text)
			}
		}},
		{"fenced", `{"fenced":true}`, oracle.TierFull, func(t *testing.T, text string) {
			inner, ok := strings.CutPrefix(text, "```json\n")
			inner, ok2 := strings.CutSuffix(inner, "\n```")
			if !ok || !ok2 {
				t.Fatalf("want a ```json fence, got %s", text)
			}
			parse(t, oracle.TierFull, inner)
		}},
		{"leak terms", `{"leak_terms":["TMM","ASTRA"]}`, oracle.TierFull, func(t *testing.T, text string) {
			a := parse(t, oracle.TierFull, text)
			if !strings.Contains(a.Summary, "TMM") || !strings.Contains(a.Breakdown["Curvature"].Analysis, "ASTRA") {
				t.Errorf("leak terms missing from %s", text)
			}
		}},
		{"inconsistent", `{"inconsistent":true,"verdict":"GREEN"}`, oracle.TierStrategy, func(t *testing.T, text string) {
			a := parse(t, oracle.TierStrategy, text)
			for dim, note := range a.Breakdown {
				if a.Verdict != oracle.VerdictGreen || note.Verdict != oracle.VerdictRed {
					t.Errorf("verdict %s with %s %s, want GREEN over all RED", a.Verdict, dim, note.Verdict)
				}
			}
		}},
	}
	for _, v := range []oracle.Verdict{oracle.VerdictGreen, oracle.VerdictAmber, oracle.VerdictRed, oracle.VerdictNull} {
		cases = append(cases, struct {
			name, scenario string
			tier           oracle.Tier
			check          func(t *testing.T, text string)
		}{"verdict " + string(v), fmt.Sprintf(`{"verdict":%q}`, v), oracle.TierQuick, func(t *testing.T, text string) {
			if a := parse(t, oracle.TierQuick, text); a.Verdict != v {
				t.Errorf("verdict %s, want %s", a.Verdict, v)
			}
		}})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f.control(t, tc.scenario)
			reply, err := c.Generate(context.Background(), request(tc.tier))
			if err != nil {
				t.Fatalf("generate: %v", err)
			}
			tc.check(t, reply.Text)
		})
	}
}

// TestUnusualAnswers covers answers the fake does not give: a server that
// answers 200 with junk, empty or stopped candidates, an error that quotes
// the prompt, and a dropped connection.
func TestUnusualAnswers(t *testing.T) {
	candidate := func(finish string, parts ...string) string {
		b, _ := json.Marshal(map[string]any{"candidates": []any{map[string]any{
			"content":      map[string]any{"role": "model", "parts": json.RawMessage("[" + strings.Join(parts, ",") + "]")},
			"finishReason": finish,
		}}})
		return string(b)
	}
	cases := []struct {
		name   string
		status int
		body   string // "" with status 0 drops the connection
		kind   gemini.Kind
		text   string // the reply's text when there is no error
		finish string
	}{
		{name: "200 with a body that is not JSON", status: 200, body: "<html>oops</html>", kind: gemini.ServerError},
		{name: "no candidate", status: 200, body: `{"modelVersion":"m"}`, kind: gemini.ContentFailure},
		{name: "candidate stopped for safety", status: 200, body: candidate("SAFETY"), kind: gemini.ContentFailure},
		{name: "recitation with text", status: 200, body: candidate("RECITATION", `{"text":"{}"}`), kind: gemini.ContentFailure},
		{name: "empty text", status: 200, body: candidate("STOP", `{"text":""}`), kind: gemini.ContentFailure},
		{name: "only a thought", status: 200, body: candidate("STOP", `{"text":"thinking","thought":true}`), kind: gemini.ContentFailure},
		{name: "thought then text", status: 200, body: candidate("STOP", `{"text":"thinking","thought":true}`, `{"text":"{\"verdict\":"}`, `{"text":"\"RED\"}"}`), text: `{"verdict":"RED"}`, finish: "STOP"},
		{name: "cut off at max tokens", status: 200, body: candidate("MAX_TOKENS", `{"text":"{\"verdict\":\"RE"}`), text: `{"verdict":"RE`, finish: "MAX_TOKENS"},
		{name: "502 in plain text", status: 502, body: "Bad Gateway", kind: gemini.ServerError},
		{name: "400 quoting the prompt", status: 400, body: "ECHO", kind: gemini.BadRequest},
		{name: "connection dropped", kind: gemini.ConnectionError},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tc.status == 0 {
					conn, _, err := http.NewResponseController(w).Hijack()
					if err == nil {
						conn.Close()
					}
					return
				}
				body := tc.body
				if body == "ECHO" {
					// Google's messages can quote the request.
					b, _ := json.Marshal(map[string]any{"error": map[string]any{
						"code": 400, "status": "INVALID_ARGUMENT", "message": fmt.Sprintf("bad request %s %s", r.Header.Get("x-goog-api-key"), testUser),
					}})
					body = string(b)
				}
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(body))
			}))
			defer srv.Close()
			c, err := gemini.New(context.Background(), gemini.Options{APIKey: testKey, BaseURL: srv.URL, Timeout: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			reply, err := c.Generate(context.Background(), request(oracle.TierQuick))
			if tc.kind == 0 {
				if err != nil || reply.Text != tc.text || reply.FinishReason != tc.finish {
					t.Errorf("got %+v, %v; want text %q, finish reason %s", reply, err, tc.text, tc.finish)
				}
				return
			}
			if gemini.KindOf(err) != tc.kind {
				t.Fatalf("got %v (kind %v), want kind %v", err, gemini.KindOf(err), tc.kind)
			}
			wantNoSecrets(t, err.Error(), "")
		})
	}
}

func TestConnectionRefused(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	c, err := gemini.New(context.Background(), gemini.Options{APIKey: testKey, BaseURL: url})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Generate(context.Background(), request(oracle.TierQuick))
	if gemini.KindOf(err) != gemini.ConnectionError || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("got %v (kind %v), want a ConnectionError saying the connection was refused", err, gemini.KindOf(err))
	}
	wantNoSecrets(t, err.Error(), "")
}

func TestEmptyUserTextIsNotSent(t *testing.T) {
	f := newFixture(t, fakegemini.Options{})
	c := f.client(t, gemini.Options{})
	r := request(oracle.TierQuick)
	r.User = " \n\t"
	if _, err := c.Generate(context.Background(), r); gemini.KindOf(err) != gemini.BadRequest {
		t.Errorf("got %v, want a BadRequest", err)
	}
	if n := len(f.fake.Calls()); n != 0 {
		t.Errorf("the fake received %d requests, want 0", n)
	}
}

func TestDefaults(t *testing.T) {
	var path, serverTimeout string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path, serverTimeout = r.URL.Path, r.Header.Get("x-server-timeout")
		_, _ = w.Write([]byte(`{"candidates":[{"content":{"parts":[{"text":"{}"}]},"finishReason":"STOP"}]}`))
	}))
	defer srv.Close()
	c, err := gemini.New(context.Background(), gemini.Options{APIKey: testKey, BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	reply, err := c.Generate(context.Background(), request(oracle.TierQuick))
	if err != nil {
		t.Fatal(err)
	}
	if want := "/v1beta/models/" + gemini.DefaultModel + ":generateContent"; path != want {
		t.Errorf("path %q, want %q", path, want)
	}
	if want := fmt.Sprint(int(gemini.DefaultTimeout.Seconds())); serverTimeout != want {
		t.Errorf("x-server-timeout %q, want %q (the default timeout)", serverTimeout, want)
	}
	if reply.Model != gemini.DefaultModel {
		t.Errorf("reply model %q without a modelVersion, want %q", reply.Model, gemini.DefaultModel)
	}
}

func TestNewRefusesBadOptions(t *testing.T) {
	cases := []struct {
		name string
		o    gemini.Options
	}{
		{"no key", gemini.Options{}},
		{"negative timeout", gemini.Options{APIKey: testKey, Timeout: -time.Second}},
		{"base URL without a scheme", gemini.Options{APIKey: testKey, BaseURL: "localhost:3002"}},
		{"base URL with another scheme", gemini.Options{APIKey: testKey, BaseURL: "ftp://localhost:3002"}},
		{"base URL without a host", gemini.Options{APIKey: testKey, BaseURL: "http://"}},
		{"base URL that does not parse", gemini.Options{APIKey: testKey, BaseURL: "http://[::1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := gemini.New(context.Background(), tc.o)
			if err == nil || c != nil {
				t.Fatalf("got %v, %v; want an error", c, err)
			}
			wantNoSecrets(t, err.Error(), "")
		})
	}
}

func TestKindNames(t *testing.T) {
	seen := map[string]bool{}
	for k := gemini.RateLimited; k <= gemini.Canceled; k++ {
		name := k.String()
		if name == "unknown" || seen[name] || strings.Trim(name, "abcdefghijklmnopqrstuvwxyz_") != "" {
			t.Errorf("kind %d has name %q, want a distinct snake_case token", k, name)
		}
		seen[name] = true
	}
	if gemini.Kind(0).String() != "unknown" || gemini.KindOf(errors.New("other")) != 0 || gemini.KindOf(nil) != 0 {
		t.Error("the zero kind, or the kind of a foreign error, is not unknown")
	}
}

// A Text request (a chat pass) asks for free text with the chat settings
// of shared/prompt, adds no JSON instruction when strict, and its reply
// carries the tokens Google counted; the verdict settings are untouched.
func TestTextRequestAsksForFreeText(t *testing.T) {
	f := newFixture(t, fakegemini.Options{})
	c := f.client(t, gemini.Options{})
	system := prompt.ChatSystem(prompt.PassMerge, false)
	reply, err := c.Generate(context.Background(), gemini.Request{System: system, User: "hello", Seed: 5, Text: true, Strict: true, MaxOutputTokens: 321})
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasPrefix(reply.Text, "{") || reply.Usage.PromptTokens == 0 || reply.Usage.OutputTokens == 0 {
		t.Errorf("reply %+v", reply)
	}
	calls := f.fake.Calls()
	if len(calls) != 1 {
		t.Fatalf("%d calls", len(calls))
	}
	g := calls[0].GenerationConfig
	checks := []struct {
		name string
		ok   bool
	}{
		{"text/plain", g.ResponseMIMEType == prompt.ChatResponseMIMEType},
		{"no schema", g.ResponseSchema == nil && g.ResponseJSONSchema == nil},
		{"the chat temperature", g.Temperature != nil && float32(*g.Temperature) == prompt.ChatTemperature},
		{"the chat topP", g.TopP != nil && float32(*g.TopP) == prompt.ChatTopP},
		{"no topK", g.TopK == nil},
		{"the seed", g.Seed != nil && *g.Seed == 5},
		{"the output bound", g.MaxOutputTokens != nil && *g.MaxOutputTokens == 321},
		{"no JSON instruction", calls[0].SystemInstruction == system},
		{"the merge pass", calls[0].Pass == string(prompt.PassMerge)},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("request lacks %s: %+v", c.name, calls[0])
		}
	}
}
