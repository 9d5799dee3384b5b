package gemini_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	fakegemini "42sisters.ai/oracle/infra/fakes/fakegemini"
	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/gemini"
	"42sisters.ai/oracle/shared/oracle"
)

// The Caller over the real Client and the fake Gemini over HTTP. The clock
// is real; backoffs are recorded, not slept.

// validator is the generator's validate for a tier.
func validator(tier oracle.Tier) func(string) error {
	return func(text string) error {
		_, err := oracle.ParseAnalysis(tier, []byte(text))
		return err
	}
}

// fakeCaller is a Caller of a client of f, with recorded backoffs and logs.
func fakeCaller(t *testing.T, f *fixture, h *harness, p gemini.Policy, o gemini.Options) *gemini.Caller {
	t.Helper()
	c := h.caller(f.client(t, o), nil, p)
	c.Now = nil // the real clock
	c.Sleep = func(ctx context.Context, d time.Duration) error {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.sleeps = append(h.sleeps, d)
		return ctx.Err()
	}
	return c
}

// VC-1: a hanging model times out at the configured per-call timeout, on
// every attempt.
func TestHangingModelTimesOutAtTheCallTimeout(t *testing.T) {
	// Long enough that a loaded machine still sends each request before its
	// attempt gives up; how soon after the timeout a call returns is
	// measured by BenchmarkHangingCallTimeout, not asserted here.
	const callTimeout = 250 * time.Millisecond
	f := newFixture(t, fakegemini.Options{})
	f.control(t, `{"hang":true,"calls":3}`)
	h := newHarness()
	c := fakeCaller(t, f, h, gemini.Policy{CallTimeout: callTimeout, MinCall: -1}, gemini.Options{})
	_, err := c.Call(context.Background(), request(oracle.TierFull), validator(oracle.TierFull))

	var e *gemini.Error
	if !errors.As(err, &e) || e.Kind != gemini.Timeout || !errors.Is(err, context.DeadlineExceeded) || !gemini.Countable(err) {
		t.Fatalf("got %v, want a countable Timeout wrapping context.DeadlineExceeded", err)
	}
	if callError(t, err).Attempts != 3 || len(h.slept()) != 2 {
		t.Errorf("attempts %d, backoffs %v; want 3 and 2", callError(t, err).Attempts, h.slept())
	}
	lines := h.logs.attemptLines()
	if len(lines) != 3 {
		t.Fatalf("attempt lines %q", messages(lines))
	}
	for _, l := range lines {
		// No attempt gives up before its timeout.
		if ms := l.attrs["latency_ms"].Int64(); ms < callTimeout.Milliseconds() {
			t.Errorf("%s after %d ms, before the %s timeout", l.msg, ms, callTimeout)
		}
		if l.attrs["kind"].String() != "timeout" {
			t.Errorf("%s: %v", l.msg, l.attrs)
		}
	}
	// The fake records a request when its handler runs, which on a busy
	// machine can be after the client has given up on it: wait for all three.
	var calls []fakegemini.Call
	testkit.Eventually(10*time.Second, 10*time.Millisecond, func() bool { calls = f.fake.Calls(); return len(calls) >= 3 })
	if len(calls) != 3 {
		t.Fatalf("the fake received %d requests, want 3", len(calls))
	}
	for _, call := range calls {
		if call.Status != 0 {
			t.Errorf("a hung request was answered %d", call.Status)
		}
	}
}

// VC-2 over HTTP: 503, 503, then the verdict.
func TestRetryThroughTheFake(t *testing.T) {
	f := newFixture(t, fakegemini.Options{})
	h := newHarness(0.3, 0.6)
	c := fakeCaller(t, f, h, gemini.Policy{}, gemini.Options{})
	f.control(t, `{"status":503,"calls":2}`)
	res, err := c.Call(context.Background(), request(oracle.TierStrategy), validator(oracle.TierStrategy))
	if err != nil {
		t.Fatalf("call: %v", err)
	}
	if res.Attempts != 3 || res.Model != gemini.DefaultModel || res.Strict || res.Fallback {
		t.Errorf("result %+v", res)
	}
	parse(t, oracle.TierStrategy, res.Reply.Text)
	if got, want := h.slept(), []time.Duration{300 * time.Millisecond, 1200 * time.Millisecond}; !slices.Equal(got, want) {
		t.Errorf("backoffs %v, want %v", got, want)
	}
	if got, want := messages(h.logs.attemptLines()), []string{"[gemini] attempt 1 failed", "[gemini] attempt 2 failed", "[gemini] attempt 3 succeeded"}; !slices.Equal(got, want) {
		t.Errorf("attempt lines %q, want %q", got, want)
	}
	if n := len(f.fake.Calls()); n != 3 {
		t.Errorf("the fake received %d requests, want 3", n)
	}
}

// VC-3 over HTTP: 401 and 400 fail at once, logged with their codes.
func TestRefusalsThroughTheFake(t *testing.T) {
	cases := []struct {
		name, scenario, key string
		kind                gemini.Kind
		code                string
	}{
		{"401", `{"status":401}`, "", gemini.AuthFailure, "GEMINI_AUTH_FAILURE"},
		{"403", `{"status":403}`, "", gemini.AuthFailure, "GEMINI_AUTH_FAILURE"},
		{"unknown key", "", fakegemini.InvalidKey, gemini.AuthFailure, "GEMINI_AUTH_FAILURE"},
		{"400", `{"status":400}`, "", gemini.BadRequest, "GEMINI_BAD_REQUEST"},
		{"404", `{"status":404}`, "", gemini.BadRequest, "GEMINI_BAD_REQUEST"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, fakegemini.Options{})
			if tc.scenario != "" {
				f.control(t, tc.scenario)
			}
			h := newHarness()
			c := fakeCaller(t, f, h, gemini.Policy{}, gemini.Options{APIKey: tc.key})
			c.Sleep = nil // a real backoff would show in the elapsed time
			start := time.Now()
			_, err := c.Call(context.Background(), request(oracle.TierQuick), validator(oracle.TierQuick))
			if elapsed := time.Since(start); elapsed >= 200*time.Millisecond {
				t.Errorf("failing took %s, want < 200ms", elapsed)
			}
			if gemini.KindOf(err) != tc.kind || gemini.Countable(err) {
				t.Errorf("got %v (kind %v)", err, gemini.KindOf(err))
			}
			if n := len(f.fake.Calls()); n != 1 {
				t.Errorf("the fake received %d requests, want 1", n)
			}
			lines := h.logs.attemptLines()
			if len(lines) != 1 || lines[0].attrs["code"].String() != tc.code {
				t.Errorf("attempt lines %q, attrs %v; want one with code %s", messages(lines), lines[0].attrs, tc.code)
			}
		})
	}
}

func TestRateLimitThroughTheFake(t *testing.T) {
	f := newFixture(t, fakegemini.Options{})
	h := newHarness()
	c := fakeCaller(t, f, h, gemini.Policy{}, gemini.Options{})
	f.control(t, `{"status":429}`) // Google's 7 s
	res, err := c.Call(context.Background(), request(oracle.TierQuick), validator(oracle.TierQuick))
	if err != nil || res.Attempts != 2 {
		t.Fatalf("got %+v, %v", res, err)
	}
	if got := h.slept(); !slices.Equal(got, []time.Duration{7 * time.Second}) {
		t.Errorf("slept %v, want Google's 7s", got)
	}

	// 30 s does not fit a 15 s budget: one call, the RateLimited error.
	f.fake.ClearCalls()
	h = newHarness()
	c = fakeCaller(t, f, h, gemini.Policy{}, gemini.Options{})
	f.control(t, `{"status":429,"retry_after_s":30}`)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err = c.Call(ctx, request(oracle.TierQuick), validator(oracle.TierQuick))
	var e *gemini.Error
	if !errors.As(err, &e) || e.Kind != gemini.RateLimited || e.RetryAfter != 30*time.Second || e.HTTPStatus != 429 {
		t.Fatalf("got %v, want the 429 with its 30s delay", err)
	}
	if len(h.slept()) != 0 || len(f.fake.Calls()) != 1 {
		t.Errorf("slept %v after %d requests; want no wait after 1", h.slept(), len(f.fake.Calls()))
	}
}

// GAP-02E over HTTP: a fenced, cut-off or blocked answer is retried once
// with the strict instruction, which the fake sees.
func TestStrictRetryThroughTheFake(t *testing.T) {
	for _, scenario := range []string{`{"fenced":true}`, `{"malformed":true}`, `{"blocked":true}`} {
		t.Run(scenario, func(t *testing.T) {
			f := newFixture(t, fakegemini.Options{})
			f.control(t, scenario)
			h := newHarness()
			c := fakeCaller(t, f, h, gemini.Policy{}, gemini.Options{})
			res, err := c.Call(context.Background(), request(oracle.TierFull), validator(oracle.TierFull))
			if err != nil {
				t.Fatalf("call: %v", err)
			}
			if res.Attempts != 2 || !res.Strict || len(h.slept()) != 0 {
				t.Errorf("result %+v, slept %v", res, h.slept())
			}
			parse(t, oracle.TierFull, res.Reply.Text)
			calls := f.fake.Calls()
			if len(calls) != 2 {
				t.Fatalf("the fake received %d requests, want 2", len(calls))
			}
			if calls[0].SystemInstruction != testSystem {
				t.Errorf("first system instruction %q, want the plain one", calls[0].SystemInstruction)
			}
			if want := testSystem + "\n\n" + gemini.StrictInstruction; calls[1].SystemInstruction != want {
				t.Errorf("strict system instruction %q, want %q", calls[1].SystemInstruction, want)
			}
			if calls[1].UserText != testUser {
				t.Errorf("the strict retry changed the user text: %q", calls[1].UserText)
			}
		})
	}

	f := newFixture(t, fakegemini.Options{})
	f.control(t, `{"fenced":true,"calls":2}`)
	h := newHarness()
	c := fakeCaller(t, f, h, gemini.Policy{}, gemini.Options{})
	_, err := c.Call(context.Background(), request(oracle.TierFull), validator(oracle.TierFull))
	var oe *oracle.Error
	if !errors.Is(err, gemini.ErrInvalidReply) || !errors.As(err, &oe) || gemini.Countable(err) || len(f.fake.Calls()) != 2 {
		t.Errorf("got %v after %d requests; want ErrInvalidReply with ParseAnalysis's error, not countable, after 2", err, len(f.fake.Calls()))
	}
}

func TestFallbackThroughTheFake(t *testing.T) {
	f := newFixture(t, fakegemini.Options{})
	h := newHarness()
	c := fakeCaller(t, f, h, gemini.Policy{}, gemini.Options{})
	c.Fallback = f.client(t, gemini.Options{Model: "gemini-2.5-flash-lite"})
	f.control(t, `{"status":503}`)
	res, err := c.Call(context.Background(), request(oracle.TierQuick), validator(oracle.TierQuick))
	if err != nil {
		t.Fatal(err)
	}
	if res.Model != "gemini-2.5-flash-lite" || !res.Fallback || res.Attempts != 2 {
		t.Errorf("result %+v, want the fallback's answer on attempt 2", res)
	}
	var models []string
	for _, call := range f.fake.Calls() {
		models = append(models, call.Model)
	}
	if want := []string{"gemini-2.5-flash", "gemini-2.5-flash-lite"}; !slices.Equal(models, want) {
		t.Errorf("models called %v, want %v", models, want)
	}
}

// The logs hold neither the prompt, nor the reply, nor the key.
func TestCallerLogsNoSecrets(t *testing.T) {
	f := newFixture(t, fakegemini.Options{})
	var buf bytes.Buffer
	h := newHarness()
	c := fakeCaller(t, f, h, gemini.Policy{}, gemini.Options{})
	c.Log = slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	f.control(t, `{"status":503}`)
	if _, err := c.Call(context.Background(), request(oracle.TierFull), validator(oracle.TierFull)); err != nil {
		t.Fatal(err)
	}
	f.control(t, `{"fenced":true,"calls":2}`)
	_, err := c.Call(context.Background(), request(oracle.TierFull), validator(oracle.TierFull))
	if err == nil {
		t.Fatal("two fenced answers were accepted")
	}
	f.control(t, `{"status":400}`)
	_, err = c.Call(context.Background(), request(oracle.TierFull), validator(oracle.TierFull))
	if err == nil {
		t.Fatal("a 400 was accepted")
	}
	logs := buf.String()
	if !strings.Contains(logs, "[gemini] attempt 1 failed") || !strings.Contains(logs, "GEMINI_BAD_REQUEST") {
		t.Fatalf("logs lack the attempt lines:\n%s", logs)
	}
	wantNoSecrets(t, logs, "")
	wantNoSecrets(t, err.Error(), "")
	for _, replyText := range []string{"```", `"summary"`, `"verdict"`, "Curvature"} {
		if strings.Contains(logs, replyText) {
			t.Errorf("the logs quote the reply (%s):\n%s", replyText, logs)
		}
	}
}

// Generate with Strict appends the instruction, also to an empty system
// instruction.
func TestStrictRequest(t *testing.T) {
	f := newFixture(t, fakegemini.Options{})
	c := f.client(t, gemini.Options{})
	r := request(oracle.TierQuick)
	r.Strict = true
	if _, err := c.Generate(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	r.System = ""
	if _, err := c.Generate(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	calls := f.fake.Calls()
	if got, want := calls[0].SystemInstruction, testSystem+"\n\n"+gemini.StrictInstruction; got != want {
		t.Errorf("system instruction %q, want %q", got, want)
	}
	if got := calls[1].SystemInstruction; got != gemini.StrictInstruction {
		t.Errorf("system instruction %q, want the strict instruction alone", got)
	}
}

func TestCheckKey(t *testing.T) {
	f := newFixture(t, fakegemini.Options{})
	if err := f.client(t, gemini.Options{}).CheckKey(context.Background()); err != nil {
		t.Errorf("the test key: %v", err)
	}
	err := f.client(t, gemini.Options{APIKey: fakegemini.InvalidKey}).CheckKey(context.Background())
	var e *gemini.Error
	if !errors.As(err, &e) || e.Kind != gemini.AuthFailure || e.HTTPStatus != http.StatusBadRequest {
		t.Errorf("the invalid key: %v, want an AuthFailure (HTTP 400)", err)
	}
	wantNoSecrets(t, err.Error(), fakegemini.InvalidKey)
	if n := len(f.fake.Calls()); n != 0 {
		t.Errorf("checking the key recorded %d generateContent calls", n)
	}
}

// Other failures of the key check keep their kinds.
func TestCheckKeyFailures(t *testing.T) {
	cases := []struct {
		name   string
		status int
		body   string
		hang   bool
		kind   gemini.Kind
	}{
		{name: "401", status: 401, body: `{"error":{"code":401,"status":"UNAUTHENTICATED","message":"no"}}`, kind: gemini.AuthFailure},
		{name: "403", status: 403, body: `{"error":{"code":403,"status":"PERMISSION_DENIED","message":"no"}}`, kind: gemini.AuthFailure},
		{name: "unknown model", status: 404, body: `{"error":{"code":404,"status":"NOT_FOUND","message":"models/x is not found"}}`, kind: gemini.BadRequest},
		{name: "429", status: 429, body: `{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","message":"slow down"}}`, kind: gemini.RateLimited},
		{name: "503", status: 503, body: `{"error":{"code":503,"status":"UNAVAILABLE","message":"overloaded"}}`, kind: gemini.ServerError},
		{name: "200 without a name", status: 200, body: `{}`, kind: gemini.ServerError},
		{name: "hang", hang: true, kind: gemini.Timeout},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var method, path string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				method, path = r.Method, r.URL.Path
				mu.Unlock()
				if tc.hang {
					<-r.Context().Done()
					return
				}
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.body))
			}))
			defer srv.Close()
			c, err := gemini.New(context.Background(), gemini.Options{APIKey: testKey, BaseURL: srv.URL, Timeout: 100 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			err = c.CheckKey(context.Background())
			if gemini.KindOf(err) != tc.kind {
				t.Errorf("got %v (kind %v), want %v", err, gemini.KindOf(err), tc.kind)
			}
			wantNoSecrets(t, err.Error(), "")
			mu.Lock()
			defer mu.Unlock()
			if method != http.MethodGet || path != "/v1beta/models/"+gemini.DefaultModel {
				t.Errorf("sent %s %s", method, path)
			}
		})
	}
}

// A prompt the model blocks again on the stricter retry is a refusal
// twice: the caller holds the order instead of asking again later. Once
// blocked and then answered, or blocked once then malformed, it is not.
func TestRefusalsAreCounted(t *testing.T) {
	for _, tc := range []struct {
		scenarios []string
		refusals  int
		ok        bool
	}{
		{[]string{`{"blocked":true,"calls":2}`}, 2, false},
		{[]string{`{"blocked":true,"calls":1}`}, 0, true},
		{[]string{`{"fenced":true,"calls":2}`}, 0, false},
	} {
		t.Run(tc.scenarios[0], func(t *testing.T) {
			f := newFixture(t, fakegemini.Options{})
			f.control(t, tc.scenarios[0])
			c := fakeCaller(t, f, newHarness(), gemini.Policy{}, gemini.Options{})
			_, err := c.Call(context.Background(), request(oracle.TierQuick), validator(oracle.TierQuick))
			if (err == nil) != tc.ok || gemini.Refusals(err) != tc.refusals {
				t.Fatalf("err %v with %d refusals, want ok=%v and %d", err, gemini.Refusals(err), tc.ok, tc.refusals)
			}
			if tc.refusals > 0 && (!errors.Is(err, gemini.ErrRefused) || gemini.Countable(err)) {
				t.Fatalf("a refusal: %v, countable %v", err, gemini.Countable(err))
			}
		})
	}
}

// correctionError is a validation error that names the problem to the model.
type correctionError struct{ text string }

func (e correctionError) Error() string      { return "the reply contradicts itself" }
func (e correctionError) Correction() string { return e.text }

// A reply refused with a Correction is retried once, strictly, with the
// correction after the strict instruction; a retry after any other
// validation error carries none, and neither does the first attempt.
func TestCorrectionIsSentWithTheStricterRetry(t *testing.T) {
	const correction = "CORRECTION-5b1e: your overall verdict contradicts your dimensions."
	for _, tc := range []struct {
		name string
		verr error
		want string
	}{
		{"a correction", fmt.Errorf("check: %w", correctionError{correction}), testSystem + "\n\n" + gemini.StrictInstruction + "\n\n" + correction},
		{"another refusal", errors.New("not this one"), testSystem + "\n\n" + gemini.StrictInstruction},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, fakegemini.Options{})
			h := newHarness()
			c := fakeCaller(t, f, h, gemini.Policy{}, gemini.Options{})
			n := 0
			validate := func(string) error {
				n++
				if n == 1 {
					return tc.verr
				}
				return nil
			}
			res, err := c.Call(context.Background(), request(oracle.TierFull), validate)
			if err != nil || res.Attempts != 2 || !res.Strict {
				t.Fatalf("result %+v, %v; want the strict retry's reply", res, err)
			}
			calls := f.fake.Calls()
			if len(calls) != 2 || calls[0].SystemInstruction != testSystem {
				t.Fatalf("%d requests, the first with %q", len(calls), calls[0].SystemInstruction)
			}
			if calls[1].SystemInstruction != tc.want || calls[1].UserText != testUser {
				t.Errorf("retry's system instruction %q, user %q; want %q and the same user text", calls[1].SystemInstruction, calls[1].UserText, tc.want)
			}
		})
	}
	// A correction alone, without Strict or a system instruction.
	f := newFixture(t, fakegemini.Options{})
	r := request(oracle.TierQuick)
	r.System, r.Correction = "", correction
	if _, err := f.client(t, gemini.Options{}).Generate(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if got := f.fake.Calls()[0].SystemInstruction; got != correction {
		t.Errorf("system instruction %q, want the correction alone", got)
	}
}
