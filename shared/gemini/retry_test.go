package gemini_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"42sisters.ai/oracle/shared/gemini"
	"42sisters.ai/oracle/shared/obs"
)

// VC-2: fail, fail, succeed: three calls, each backoff a full-jitter share
// of the capped exponential, the success returned, and the log lines the
// spec names.
func TestRetryThenSucceed(t *testing.T) {
	h := newHarness(0.25, 0.9)
	s := &stub{model: "gemini-2.5-flash", clock: h.clock, steps: []step{
		failAfter(gemini.ServerError, 200*time.Millisecond),
		failAfter(gemini.Timeout, 45*time.Second),
		ok("gemini-2.5-flash-001", 300*time.Millisecond),
	}}
	res, err := h.caller(s, nil, gemini.Policy{}).Call(context.Background(), gemini.Request{User: "u"}, validate)
	if err != nil {
		t.Fatalf("call: %v", err)
	}
	if s.calls() != 3 || res.Attempts != 3 || res.Reply.Text != validText || res.Model != "gemini-2.5-flash-001" ||
		res.Fallback || res.Strict || res.Latency != 300*time.Millisecond {
		t.Errorf("calls %d, result %+v", s.calls(), res)
	}
	want := []time.Duration{250 * time.Millisecond, 1800 * time.Millisecond} // 0.25 × 1 s, 0.9 × 2 s
	if got := h.slept(); !slices.Equal(got, want) {
		t.Errorf("backoffs %v, want %v", got, want)
	}
	for _, d := range h.slept() {
		if d < 0 || d > 8*time.Second {
			t.Errorf("backoff %s outside [0, 8s]", d)
		}
	}
	lines := h.logs.attemptLines()
	if got, want := messages(lines), []string{"[gemini] attempt 1 failed", "[gemini] attempt 2 failed", "[gemini] attempt 3 succeeded"}; !slices.Equal(got, want) {
		t.Fatalf("attempt lines %q, want %q", got, want)
	}
	for i, kind := range []string{"server_error", "timeout", ""} {
		l := lines[i]
		if l.attrs["model"].String() != "gemini-2.5-flash" || (kind != "" && l.attrs["kind"].String() != kind) {
			t.Errorf("line %q attrs %v", l.msg, l.attrs)
		}
		if _, ok := l.attrs["code"]; ok {
			t.Errorf("line %q has a code: %v", l.msg, l.attrs)
		}
	}
	if got := lines[1].attrs["latency_ms"].Int64(); got != 45000 {
		t.Errorf("attempt 2 latency_ms %d, want 45000", got)
	}
	if got := lines[2].attrs["latency_ms"].Int64(); got != 300 {
		t.Errorf("attempt 3 latency_ms %d, want 300", got)
	}
}

func TestBackoffIsFullJitterOfTheCappedExponential(t *testing.T) {
	cases := []struct {
		name       string
		policy     gemini.Policy
		rands      []float64
		want       []time.Duration
		maxBackoff time.Duration
	}{
		{"defaults", gemini.Policy{}, []float64{0.5, 0.5}, []time.Duration{500 * time.Millisecond, time.Second}, 8 * time.Second},
		{"jitter collapses to zero", gemini.Policy{}, []float64{0, 0}, []time.Duration{}, 8 * time.Second},
		{"near one", gemini.Policy{}, []float64{0.999, 0.999}, []time.Duration{999 * time.Millisecond, 1998 * time.Millisecond}, 8 * time.Second},
		{"cap binds on the second", gemini.Policy{BackoffBase: 3 * time.Second, BackoffCap: 4 * time.Second}, []float64{0.75, 0.5}, []time.Duration{2250 * time.Millisecond, 2 * time.Second}, 4 * time.Second},
		{"cap binds on the first", gemini.Policy{BackoffBase: 10 * time.Second}, []float64{0.5, 0.5}, []time.Duration{4 * time.Second, 4 * time.Second}, 8 * time.Second},
		{"out of range randomness is zero", gemini.Policy{}, []float64{1.5, -1}, []time.Duration{}, 8 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(tc.rands...)
			s := &stub{clock: h.clock, steps: []step{fail(gemini.ConnectionError), fail(gemini.ServerError)}}
			if _, err := h.caller(s, nil, tc.policy).Call(context.Background(), gemini.Request{User: "u"}, validate); err != nil {
				t.Fatal(err)
			}
			got := h.slept()
			if !slices.Equal(got, tc.want) {
				t.Errorf("backoffs %v, want %v", got, tc.want)
			}
			for _, d := range got {
				if d < 0 || d > tc.maxBackoff {
					t.Errorf("backoff %s outside [0, %s]", d, tc.maxBackoff)
				}
			}
		})
	}
}

// The default randomness stays within each interval's ceiling.
func TestDefaultRandAndSleep(t *testing.T) {
	s := &stub{steps: []step{fail(gemini.ServerError), fail(gemini.ServerError)}}
	c := &gemini.Caller{Primary: s, Policy: gemini.Policy{BackoffBase: time.Millisecond, BackoffCap: 2 * time.Millisecond, MinCall: -1}}
	start := time.Now()
	res, err := c.Call(context.Background(), gemini.Request{User: "u"}, validate)
	if err != nil || res.Attempts != 3 {
		t.Fatalf("got %+v, %v", res, err)
	}
	if elapsed := time.Since(start); elapsed > time.Second {
		t.Errorf("two backoffs of at most 1 ms and 2 ms took %s", elapsed)
	}
}

// VC-3: a refused key or request fails at once: one call, no backoff, no
// fallback, the spec's code in the log.
func TestNonRetryableFailFast(t *testing.T) {
	cases := []struct {
		kind gemini.Kind
		code string
	}{
		{gemini.AuthFailure, "GEMINI_AUTH_FAILURE"},
		{gemini.BadRequest, "GEMINI_BAD_REQUEST"},
		{gemini.Canceled, ""},
	}
	for _, tc := range cases {
		t.Run(tc.kind.String(), func(t *testing.T) {
			h := newHarness()
			primary := &stub{model: "p", clock: h.clock, steps: []step{fail(tc.kind)}}
			fallback := &stub{model: "f", clock: h.clock}
			_, err := h.caller(primary, fallback, gemini.Policy{}).Call(context.Background(), gemini.Request{User: "u"}, validate)
			if primary.calls() != 1 || fallback.calls() != 0 {
				t.Errorf("calls %d + %d, want 1 + 0", primary.calls(), fallback.calls())
			}
			if len(h.slept()) != 0 || h.randCalls() != 0 {
				t.Errorf("backoffs %v, rand drawn %d times; want none", h.slept(), h.randCalls())
			}
			if gemini.KindOf(err) != tc.kind || gemini.Countable(err) || callError(t, err).Attempts != 1 {
				t.Errorf("got %v (kind %v, countable %v)", err, gemini.KindOf(err), gemini.Countable(err))
			}
			lines := h.logs.attemptLines()
			if len(lines) != 1 || lines[0].msg != "[gemini] attempt 1 failed" {
				t.Fatalf("attempt lines %q", messages(lines))
			}
			code, has := lines[0].attrs["code"]
			if tc.code == "" && has || tc.code != "" && (code.String() != tc.code || lines[0].level != slog.LevelError) {
				t.Errorf("line attrs %v at %s, want code %q", lines[0].attrs, lines[0].level, tc.code)
			}
		})
	}
}

// Invariant 2: never a fourth call, whatever the errors, the policy and the
// fallback.
func TestNeverAFourthAttempt(t *testing.T) {
	outcomes := []step{
		fail(gemini.RateLimited), rateLimited(time.Second), fail(gemini.Timeout), fail(gemini.ServerError),
		fail(gemini.ConnectionError), fail(gemini.ContentFailure), text("```json\n{}\n```"),
	}
	policies := []gemini.Policy{{}, {Attempts: 10}, {Attempts: 4, MinCall: -1, Reserve: -1}}
	n := len(outcomes)
	for _, p := range policies {
		for _, withFallback := range []bool{false, true} {
			for i := range n * n * n * n {
				seq := []step{outcomes[i%n], outcomes[i/n%n], outcomes[i/n/n%n], outcomes[i/n/n/n%n]}
				h := newHarness()
				primary := &stub{model: "p", clock: h.clock, steps: seq}
				var fallback gemini.Generator
				fb := &stub{model: "f", clock: h.clock, steps: seq[1:]}
				if withFallback {
					fallback = fb
				}
				_, err := h.caller(primary, fallback, p).Call(context.Background(), gemini.Request{User: "u"}, validate)
				calls := primary.calls() + fb.calls()
				if calls > gemini.MaxAttempts {
					t.Fatalf("policy %+v, fallback %v, sequence %d: %d calls", p, withFallback, i, calls)
				}
				if err != nil && callError(t, err).Attempts != calls {
					t.Fatalf("sequence %d: error counts %d attempts, %d calls made", i, callError(t, err).Attempts, calls)
				}
			}
		}
	}
}

func TestRetryAfterIsHonoured(t *testing.T) {
	h := newHarness()
	s := &stub{clock: h.clock, steps: []step{rateLimited(7 * time.Second)}}
	res, err := h.caller(s, nil, gemini.Policy{}).Call(context.Background(), gemini.Request{User: "u"}, validate)
	if err != nil || res.Attempts != 2 {
		t.Fatalf("got %+v, %v", res, err)
	}
	if got := h.slept(); !slices.Equal(got, []time.Duration{7 * time.Second}) {
		t.Errorf("slept %v, want exactly Google's 7s", got)
	}
	if h.randCalls() != 0 {
		t.Errorf("rand drawn %d times for a delay Google set", h.randCalls())
	}

	// Without a delay from Google, the jittered backoff.
	h = newHarness(0.5)
	s = &stub{clock: h.clock, steps: []step{rateLimited(0)}}
	if _, err := h.caller(s, nil, gemini.Policy{}).Call(context.Background(), gemini.Request{User: "u"}, validate); err != nil {
		t.Fatal(err)
	}
	if got := h.slept(); !slices.Equal(got, []time.Duration{500 * time.Millisecond}) {
		t.Errorf("slept %v, want 500ms", got)
	}
}

// A delay that does not fit the budget ends the Call with the RateLimited
// error, whose RetryAfter lets the caller park the job.
func TestRetryAfterBeyondTheBudgetStops(t *testing.T) {
	h := newHarness()
	ctx, cancel := context.WithDeadline(context.Background(), h.clock.Now().Add(20*time.Second)) // budget 15 s
	defer cancel()
	s := &stub{clock: h.clock, steps: []step{rateLimited(30 * time.Second)}}
	_, err := h.caller(s, nil, gemini.Policy{}).Call(ctx, gemini.Request{User: "u"}, validate)
	var e *gemini.Error
	if !errors.As(err, &e) || e.Kind != gemini.RateLimited || e.RetryAfter != 30*time.Second {
		t.Fatalf("got %v, want the RateLimited error with its 30s delay", err)
	}
	if s.calls() != 1 || len(h.slept()) != 0 || !gemini.Countable(err) {
		t.Errorf("calls %d, slept %v, countable %v; want 1, none, true", s.calls(), h.slept(), gemini.Countable(err))
	}
	if gaveUp := h.logs.find("[gemini] gave up"); len(gaveUp) != 1 || gaveUp[0].attrs["reason"].String() != "retry_after_exceeds_budget" {
		t.Errorf("gave up lines %+v", gaveUp)
	}
}

func TestBudgetIsLoggedWithBothClocks(t *testing.T) {
	h := newHarness()
	now := h.clock.Now()
	deadline := now.Add(20 * time.Second)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	if _, err := h.caller(&stub{}, nil, gemini.Policy{}).Call(ctx, gemini.Request{User: "u"}, nil); err != nil {
		t.Fatal(err)
	}
	// Without a deadline: 3 × 45 s and backoffs of at most 1 s and 2 s.
	if _, err := h.caller(&stub{}, nil, gemini.Policy{}).Call(context.Background(), gemini.Request{User: "u"}, nil); err != nil {
		t.Fatal(err)
	}
	lines := h.logs.find("[gemini] budget")
	if len(lines) != 2 {
		t.Fatalf("%d budget lines, want one per Call", len(lines))
	}
	a := lines[0].attrs
	if !a["deadline"].Time().Equal(deadline) || !a["now"].Time().Equal(now) || a["budget_ms"].Int64() != 15000 {
		t.Errorf("budget line %v, want deadline %s, now %s, budget_ms 15000", a, deadline, now)
	}
	a = lines[1].attrs
	if a["deadline"].String() != "none" || !a["now"].Time().Equal(now) || a["budget_ms"].Int64() != 138000 {
		t.Errorf("budget line without a deadline %v, want budget_ms 138000", a)
	}
}

// The budget bounds each attempt's timeout and stops the attempts near the
// deadline.
func TestBudgetStopsNearTheDeadline(t *testing.T) {
	h := newHarness(0.5)
	ctx, cancel := context.WithDeadline(context.Background(), h.clock.Now().Add(12*time.Second)) // budget 7 s
	defer cancel()
	s := &stub{clock: h.clock, steps: []step{failAfter(gemini.ServerError, 4*time.Second), failAfter(gemini.Timeout, 2500*time.Millisecond)}}
	_, err := h.caller(s, nil, gemini.Policy{}).Call(ctx, gemini.Request{User: "u"}, validate)
	if s.calls() != 2 || gemini.KindOf(err) != gemini.Timeout || !gemini.Countable(err) {
		t.Fatalf("calls %d, error %v; want 2 calls ending in a Timeout", s.calls(), err)
	}
	// 4 s, then 0.5 × 1 s, leaves 2.5 s for the second attempt.
	if got := h.slept(); !slices.Equal(got, []time.Duration{500 * time.Millisecond}) {
		t.Errorf("slept %v, want 500ms", got)
	}
	for i, want := range []time.Duration{7 * time.Second, 2500 * time.Millisecond} {
		if got := s.budgets[i]; got > want || got < want-time.Second {
			t.Errorf("attempt %d had %s before its deadline, want %s", i+1, got, want)
		}
	}

	// A backoff that would leave less than MinCall is not started.
	h = newHarness(0.9)
	ctx, cancel = context.WithDeadline(context.Background(), h.clock.Now().Add(10*time.Second)) // budget 5 s
	defer cancel()
	s = &stub{clock: h.clock, steps: []step{failAfter(gemini.ServerError, 2500*time.Millisecond)}}
	_, err = h.caller(s, nil, gemini.Policy{}).Call(ctx, gemini.Request{User: "u"}, validate)
	if s.calls() != 1 || len(h.slept()) != 0 || gemini.KindOf(err) != gemini.ServerError {
		t.Errorf("calls %d, slept %v, error %v; want 1 call, no backoff, the ServerError", s.calls(), h.slept(), err)
	}
}

func TestNoBudgetNoCall(t *testing.T) {
	h := newHarness()
	ctx, cancel := context.WithDeadline(context.Background(), h.clock.Now().Add(6*time.Second)) // budget 1 s < MinCall
	defer cancel()
	s := &stub{clock: h.clock}
	_, err := h.caller(s, nil, gemini.Policy{}).Call(ctx, gemini.Request{User: "u"}, validate)
	if s.calls() != 0 || !errors.Is(err, gemini.ErrNoBudget) || gemini.Countable(err) || callError(t, err).Attempts != 0 || gemini.KindOf(err) != 0 {
		t.Errorf("calls %d, error %v; want none and ErrNoBudget, not countable", s.calls(), err)
	}

	// Negative Reserve and MinCall mean none: 1 s is enough.
	if _, err := h.caller(s, nil, gemini.Policy{Reserve: -1, MinCall: -1}).Call(ctx, gemini.Request{User: "u"}, validate); err != nil || s.calls() != 1 {
		t.Errorf("without reserve and minimum: %v after %d calls", err, s.calls())
	}
	if got := s.budgets[0]; got > 6*time.Second || got < 5*time.Second {
		t.Errorf("the attempt had %s before its deadline, want about 6s", got)
	}
}

// GAP-02E: a content failure gets exactly one more attempt, at once and
// strict.
func TestContentFailureGetsOneStrictRetry(t *testing.T) {
	for _, first := range []step{text("```json\n{\"ok\":true}\n```"), text(`{"ok":tr`), fail(gemini.ContentFailure)} {
		h := newHarness()
		s := &stub{model: "p", clock: h.clock, steps: []step{first}}
		res, err := h.caller(s, &stub{model: "f"}, gemini.Policy{}).Call(context.Background(), gemini.Request{User: "u"}, validate)
		if err != nil || res.Attempts != 2 || !res.Strict || res.Fallback {
			t.Fatalf("got %+v, %v", res, err)
		}
		if s.requests[0].Strict || !s.requests[1].Strict || len(h.slept()) != 0 {
			t.Errorf("strict %v, %v; slept %v: want false, true, no backoff", s.requests[0].Strict, s.requests[1].Strict, h.slept())
		}
		if lines := h.logs.attemptLines(); lines[0].attrs["kind"].String() != "content_failure" {
			t.Errorf("attempt 1 logged %v", lines[0].attrs)
		}
	}
}

func TestTwoContentFailuresEndTheCall(t *testing.T) {
	h := newHarness()
	s := &stub{clock: h.clock, steps: []step{text("not json"), text("still not json")}}
	_, err := h.caller(s, nil, gemini.Policy{}).Call(context.Background(), gemini.Request{User: "u"}, validate)
	ce := callError(t, err)
	if s.calls() != 2 || ce.Attempts != 2 || !ce.Strict {
		t.Errorf("calls %d, error %+v", s.calls(), ce)
	}
	if !errors.Is(err, gemini.ErrInvalidReply) || !errors.Is(err, errTestInvalid) || gemini.KindOf(err) != gemini.ContentFailure || gemini.Countable(err) {
		t.Errorf("error %v: want ErrInvalidReply wrapping validate's error, kind content_failure, not countable", err)
	}
	if strings.Contains(err.Error(), "not json") {
		t.Errorf("the error quotes the reply: %v", err)
	}

	// ErrInvalidReply marks a last failure that validate refused, not a
	// content failure of the client's (a blocked prompt, an empty answer).
	s = &stub{clock: h.clock, steps: []step{fail(gemini.ContentFailure), text("x")}}
	_, err = h.caller(s, nil, gemini.Policy{}).Call(context.Background(), gemini.Request{User: "u"}, validate)
	if s.calls() != 2 || !errors.Is(err, gemini.ErrInvalidReply) || gemini.Countable(err) {
		t.Errorf("calls %d, error %v", s.calls(), err)
	}
	s = &stub{clock: h.clock, steps: []step{text("x"), fail(gemini.ContentFailure)}}
	_, err = h.caller(s, nil, gemini.Policy{}).Call(context.Background(), gemini.Request{User: "u"}, validate)
	if s.calls() != 2 || errors.Is(err, gemini.ErrInvalidReply) || gemini.KindOf(err) != gemini.ContentFailure || gemini.Countable(err) {
		t.Errorf("calls %d, error %v", s.calls(), err)
	}
}

// The strict instruction stays once used; the attempts ceiling still holds.
func TestStrictStaysAcrossATransientFailure(t *testing.T) {
	h := newHarness(0.5)
	s := &stub{clock: h.clock, steps: []step{text("x"), fail(gemini.ServerError), text("y")}}
	_, err := h.caller(s, nil, gemini.Policy{}).Call(context.Background(), gemini.Request{User: "u"}, validate)
	if s.calls() != 3 || !errors.Is(err, gemini.ErrInvalidReply) {
		t.Fatalf("calls %d, error %v", s.calls(), err)
	}
	if got := []bool{s.requests[0].Strict, s.requests[1].Strict, s.requests[2].Strict}; !slices.Equal(got, []bool{false, true, true}) {
		t.Errorf("strict %v", got)
	}
	// One backoff, after attempt 2: 0.5 × 2 s.
	if got := h.slept(); !slices.Equal(got, []time.Duration{time.Second}) {
		t.Errorf("slept %v, want [1s]", got)
	}

	// Content failure on the last attempt: no fourth, and no strict retry
	// was made.
	s = &stub{clock: h.clock, steps: []step{fail(gemini.ServerError), fail(gemini.Timeout), text("x")}}
	_, err = h.caller(s, nil, gemini.Policy{}).Call(context.Background(), gemini.Request{User: "u"}, validate)
	if s.calls() != 3 || !errors.Is(err, gemini.ErrInvalidReply) || gemini.Countable(err) || callError(t, err).Strict {
		t.Errorf("calls %d, error %v", s.calls(), err)
	}
}

// Policy.Attempts lowers the ceiling; it never raises it.
func TestAttemptsPolicy(t *testing.T) {
	for attempts, want := range map[int]int{-1: 3, 0: 3, 1: 1, 2: 2, 3: 3, 4: 3, 100: 3} {
		h := newHarness()
		s := &stub{clock: h.clock, steps: slices.Repeat([]step{fail(gemini.ServerError)}, 5)}
		_, err := h.caller(s, nil, gemini.Policy{Attempts: attempts}).Call(context.Background(), gemini.Request{User: "u"}, validate)
		if s.calls() != want || callError(t, err).Attempts != want || len(h.slept()) != want-1 {
			t.Errorf("Attempts %d: %d calls, %d backoffs, error %v; want %d calls", attempts, s.calls(), len(h.slept()), err, want)
		}
		if gaveUp := h.logs.find("[gemini] gave up"); len(gaveUp) != 1 || gaveUp[0].attrs["reason"].String() != "attempts_exhausted" || !gaveUp[0].attrs["countable"].Bool() {
			t.Errorf("Attempts %d: gave up lines %+v", attempts, gaveUp)
		}
	}
}

func TestFallbackAfterAnOutage(t *testing.T) {
	for _, first := range []step{fail(gemini.ServerError), fail(gemini.Timeout), fail(gemini.ConnectionError), rateLimited(30 * time.Second)} {
		t.Run(gemini.KindOf(first.err).String(), func(t *testing.T) {
			h := newHarness(0.5)
			primary := &stub{model: "gemini-2.5-flash", clock: h.clock, steps: []step{first}}
			fallback := &stub{model: "gemini-2.5-flash-lite", clock: h.clock, steps: []step{{reply: gemini.Reply{Text: validText}}}}
			res, err := h.caller(primary, fallback, gemini.Policy{}).Call(context.Background(), gemini.Request{User: "u"}, validate)
			if err != nil {
				t.Fatal(err)
			}
			if primary.calls() != 1 || fallback.calls() != 1 || res.Attempts != 2 || !res.Fallback || res.Model != "gemini-2.5-flash-lite" {
				t.Errorf("calls %d + %d, result %+v", primary.calls(), fallback.calls(), res)
			}
			// The jittered backoff, not Google's delay for the primary.
			if got := h.slept(); !slices.Equal(got, []time.Duration{500 * time.Millisecond}) {
				t.Errorf("slept %v, want [500ms]", got)
			}
			if lines := h.logs.attemptLines(); lines[1].attrs["model"].String() != "gemini-2.5-flash-lite" {
				t.Errorf("attempt 2 logged %v", lines[1].attrs)
			}
		})
	}

	// Once on the fallback, the Call stays there, and honours its delays.
	h := newHarness()
	primary := &stub{model: "p", clock: h.clock, steps: []step{fail(gemini.ServerError)}}
	fallback := &stub{model: "f", clock: h.clock, steps: []step{rateLimited(3 * time.Second)}}
	res, err := h.caller(primary, fallback, gemini.Policy{}).Call(context.Background(), gemini.Request{User: "u"}, validate)
	if err != nil || primary.calls() != 1 || fallback.calls() != 2 || res.Model != "f-001" || !res.Fallback {
		t.Fatalf("calls %d + %d, result %+v, %v", primary.calls(), fallback.calls(), res, err)
	}
	if got := h.slept(); len(got) != 2 || got[1] != 3*time.Second {
		t.Errorf("slept %v, want the jitter then 3s", got)
	}

	// A content failure is retried strictly on the same model.
	h = newHarness()
	primary = &stub{model: "p", clock: h.clock, steps: []step{text("x")}}
	fallback = &stub{model: "f", clock: h.clock}
	res, err = h.caller(primary, fallback, gemini.Policy{}).Call(context.Background(), gemini.Request{User: "u"}, validate)
	if err != nil || primary.calls() != 2 || fallback.calls() != 0 || res.Fallback || res.Model != "p-001" {
		t.Errorf("calls %d + %d, result %+v, %v", primary.calls(), fallback.calls(), res, err)
	}
}

func TestCancelStops(t *testing.T) {
	// Canceled during a backoff.
	h := newHarness()
	ctx, cancel := context.WithCancel(context.Background())
	s := &stub{clock: h.clock, steps: []step{fail(gemini.ServerError)}}
	c := h.caller(s, nil, gemini.Policy{})
	c.Sleep = func(context.Context, time.Duration) error {
		cancel()
		return context.Canceled
	}
	_, err := c.Call(ctx, gemini.Request{User: "u"}, validate)
	if s.calls() != 1 || gemini.KindOf(err) != gemini.Canceled || !errors.Is(err, context.Canceled) || gemini.Countable(err) {
		t.Errorf("calls %d, error %v; want 1 and a Canceled, not countable", s.calls(), err)
	}

	// Canceled before the call.
	s = &stub{clock: h.clock}
	_, err = h.caller(s, nil, gemini.Policy{}).Call(ctx, gemini.Request{User: "u"}, validate)
	if s.calls() != 0 || gemini.KindOf(err) != gemini.Canceled || gemini.Countable(err) {
		t.Errorf("calls %d, error %v; want none and a Canceled", s.calls(), err)
	}
}

// A Generator other than the *Client may return any error: context errors
// keep their meaning, anything else is a ServerError that is retried and
// whose text is not repeated.
func TestForeignErrors(t *testing.T) {
	h := newHarness()
	s := &stub{clock: h.clock, steps: []step{{err: errors.New("boom PROMPT-TEXT")}, {err: fmt.Errorf("wrapped: %w", context.DeadlineExceeded)}, {err: errors.New("boom again")}}}
	_, err := h.caller(s, nil, gemini.Policy{}).Call(context.Background(), gemini.Request{User: "u"}, validate)
	if s.calls() != 3 || gemini.KindOf(err) != gemini.ServerError || !gemini.Countable(err) {
		t.Fatalf("calls %d, error %v", s.calls(), err)
	}
	if kinds := []string{h.logs.attemptLines()[0].attrs["kind"].String(), h.logs.attemptLines()[1].attrs["kind"].String()}; !slices.Equal(kinds, []string{"server_error", "timeout"}) {
		t.Errorf("kinds %v", kinds)
	}
	if strings.Contains(err.Error(), "boom") || strings.Contains(h.logs.dump(), "boom") {
		t.Errorf("the foreign error's text leaked: %v", err)
	}
}

func TestCountable(t *testing.T) {
	cases := []struct {
		err  error
		want bool
	}{
		{&gemini.CallError{Attempts: 3, Err: &gemini.Error{Kind: gemini.RateLimited}}, true},
		{&gemini.CallError{Attempts: 3, Err: &gemini.Error{Kind: gemini.Timeout}}, true},
		{&gemini.CallError{Attempts: 3, Err: &gemini.Error{Kind: gemini.ServerError}}, true},
		{&gemini.CallError{Attempts: 3, Err: &gemini.Error{Kind: gemini.ConnectionError}}, true},
		{&gemini.CallError{Attempts: 1, Err: &gemini.Error{Kind: gemini.BadRequest}}, false},
		{&gemini.CallError{Attempts: 1, Err: &gemini.Error{Kind: gemini.AuthFailure}}, false},
		{&gemini.CallError{Attempts: 2, Err: &gemini.Error{Kind: gemini.ContentFailure}}, false},
		{&gemini.CallError{Attempts: 1, Err: &gemini.Error{Kind: gemini.Canceled}}, false},
		{&gemini.CallError{Err: gemini.ErrNoBudget}, false},
		{fmt.Errorf("generate: %w", &gemini.CallError{Attempts: 3, Err: &gemini.Error{Kind: gemini.ServerError}}), true},
		{&gemini.Error{Kind: gemini.Timeout}, true},
		{errors.New("other"), false},
		{nil, false},
	}
	for _, tc := range cases {
		if got := gemini.Countable(tc.err); got != tc.want {
			t.Errorf("Countable(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

func TestCallErrorMessage(t *testing.T) {
	cases := []struct {
		err  *gemini.CallError
		want string
	}{
		{&gemini.CallError{Err: gemini.ErrNoBudget}, "gemini: no attempt made: gemini: not enough time left for a model call"},
		{&gemini.CallError{Attempts: 1, Model: "m", Err: &gemini.Error{Kind: gemini.AuthFailure, HTTPStatus: 401, Status: "UNAUTHENTICATED"}},
			"gemini: no valid reply after 1 attempt (last on m): gemini: auth_failure (HTTP 401 UNAUTHENTICATED)"},
		{&gemini.CallError{Attempts: 2, Model: "m", Strict: true, Err: &gemini.Error{Kind: gemini.ContentFailure}},
			"gemini: no valid reply after 2 attempts (last on m, strict): gemini: content_failure"},
	}
	for _, tc := range cases {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("message %q, want %q", got, tc.want)
		}
	}
}

func TestNoPrimary(t *testing.T) {
	if _, err := (&gemini.Caller{}).Call(context.Background(), gemini.Request{User: "u"}, nil); err == nil {
		t.Error("a Caller without a primary made a call")
	}
}

// instant answers at once, recording nothing.
type instant struct{}

func (instant) Generate(context.Context, gemini.Request) (gemini.Reply, error) {
	return gemini.Reply{Text: validText, Model: "m", FinishReason: "STOP"}, nil
}

// BenchmarkCallOverhead is what a Call adds to one instant, valid answer:
// the budget, the attempt's timeout context, validation and the two log
// lines (discarded).
func BenchmarkCallOverhead(b *testing.B) {
	b.Run("no deadline", func(b *testing.B) {
		c := &gemini.Caller{Primary: instant{}}
		ctx, r := context.Background(), gemini.Request{User: "u"}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.Call(ctx, r, validate); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("deadline", func(b *testing.B) {
		c := &gemini.Caller{Primary: instant{}}
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		r := gemini.Request{User: "u"}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.Call(ctx, r, validate); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("direct", func(b *testing.B) { // the Generate call alone, for comparison
		ctx, r := context.Background(), gemini.Request{User: "u"}
		var g gemini.Generator = instant{}
		b.ReportAllocs()
		for b.Loop() {
			reply, err := g.Generate(ctx, r)
			if err != nil || validate(reply.Text) != nil {
				b.Fatal(err)
			}
		}
	})
}

// Each attempt the model answered or failed is one metric line: its
// latency, and ModelFailures when it failed; an attempt the caller
// canceled says nothing of the model.
func TestEachAttemptIsMeasured(t *testing.T) {
	h := newHarness(0.25, 0.9)
	s := &stub{model: "gemini-2.5-flash", clock: h.clock, steps: []step{
		failAfter(gemini.ServerError, 200*time.Millisecond),
		text("not json"),
		ok("gemini-2.5-flash-001", 300*time.Millisecond),
	}}
	var out bytes.Buffer
	c := h.caller(s, nil, gemini.Policy{})
	c.Metrics = obs.NewMetrics(&out, "Oracle/test", h.clock.Now)
	if _, err := c.Call(context.Background(), gemini.Request{User: "u"}, validate); err != nil {
		t.Fatalf("call: %v", err)
	}
	want := []string{`"ModelLatency":200,"ModelFailures":1}`, `"ModelLatency":0,"ModelFailures":1}`, `"ModelLatency":300}`}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != len(want) {
		t.Fatalf("%d metric lines, want %d:\n%s", len(lines), len(want), out.String())
	}
	for i, w := range want {
		if !strings.HasSuffix(lines[i], w) {
			t.Errorf("attempt %d: %s, want it to end %s", i+1, lines[i], w)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	out.Reset()
	c = h.caller(cancelling{cancel}, nil, gemini.Policy{})
	c.Metrics = obs.NewMetrics(&out, "Oracle/test", h.clock.Now)
	if _, err := c.Call(ctx, gemini.Request{User: "u"}, validate); gemini.KindOf(err) != gemini.Canceled {
		t.Fatalf("the call ended %v, want canceled", err)
	}
	if out.Len() != 0 {
		t.Errorf("a canceled call was measured: %s", out.String())
	}
}

// cancelling is a Generator whose caller gives up while it answers.
type cancelling struct{ cancel func() }

func (cancelling) Model() string { return "m" }

func (g cancelling) Generate(ctx context.Context, _ gemini.Request) (gemini.Reply, error) {
	g.cancel()
	return gemini.Reply{}, ctx.Err()
}
