package gemini_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/gemini"
)

// step is one scripted answer of a stub: a reply, or an error, after a
// latency on the clock.
type step struct {
	reply   gemini.Reply
	err     error
	latency time.Duration
}

// stub is a scripted Generator. Calls beyond its script answer validReply.
type stub struct {
	model string
	clock *testkit.Clock
	steps []step

	mu       sync.Mutex
	requests []gemini.Request
	budgets  []time.Duration // time left before each call's deadline, on the real clock
}

func (s *stub) Model() string { return s.model }

func (s *stub) Generate(ctx context.Context, r gemini.Request) (gemini.Reply, error) {
	s.mu.Lock()
	s.requests = append(s.requests, r)
	budget := time.Duration(-1)
	if d, ok := ctx.Deadline(); ok {
		budget = time.Until(d)
	}
	s.budgets = append(s.budgets, budget)
	i := len(s.requests) - 1
	s.mu.Unlock()
	st := step{reply: gemini.Reply{Text: validText, Model: s.model + "-001", FinishReason: "STOP"}}
	if i < len(s.steps) {
		st = s.steps[i]
	}
	if s.clock != nil {
		s.clock.Add(st.latency)
	}
	return st.reply, st.err
}

func (s *stub) calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

const validText = `{"ok":true}`

// validate accepts validText only.
func validate(text string) error {
	if text != validText {
		return errTestInvalid
	}
	return nil
}

var errTestInvalid = errors.New("the reply is not {\"ok\":true}")

// fail is a step failing with an *Error of kind k.
func fail(k gemini.Kind) step { return step{err: &gemini.Error{Kind: k}} }

// failAfter is fail with a latency.
func failAfter(k gemini.Kind, latency time.Duration) step {
	return step{err: &gemini.Error{Kind: k}, latency: latency}
}

// rateLimited is a 429 step with Google's retry delay.
func rateLimited(retryAfter time.Duration) step {
	return step{err: &gemini.Error{Kind: gemini.RateLimited, HTTPStatus: 429, Status: "RESOURCE_EXHAUSTED", RetryAfter: retryAfter}}
}

// text is a step answering text, which validate refuses unless it is
// validText.
func text(s string) step {
	return step{reply: gemini.Reply{Text: s, Model: "m", FinishReason: "STOP"}}
}

// ok is a successful step after a latency.
func ok(model string, latency time.Duration) step {
	return step{reply: gemini.Reply{Text: validText, Model: model, FinishReason: "STOP"}, latency: latency}
}

// harness wires a Caller to a clock, scripted randomness, recorded sleeps
// and recorded logs.
type harness struct {
	clock *testkit.Clock
	logs  *recorder

	mu     sync.Mutex
	rands  []float64 // served in order; 0.5 when exhausted
	nRand  int
	sleeps []time.Duration
}

func newHarness(rands ...float64) *harness {
	return &harness{clock: testkit.NewClock(time.Now()), logs: &recorder{}, rands: rands}
}

func (h *harness) caller(primary, fallback gemini.Generator, p gemini.Policy) *gemini.Caller {
	c := &gemini.Caller{
		Primary: primary,
		Policy:  p,
		Rand: func() float64 {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.nRand++
			if len(h.rands) == 0 {
				return 0.5
			}
			x := h.rands[0]
			h.rands = h.rands[1:]
			return x
		},
		Sleep: func(ctx context.Context, d time.Duration) error {
			h.mu.Lock()
			h.sleeps = append(h.sleeps, d)
			h.mu.Unlock()
			h.clock.Add(d)
			return ctx.Err()
		},
		Now: h.clock.Now,
		Log: slog.New(h.logs),
	}
	if fallback != nil {
		c.Fallback = fallback
	}
	return c
}

func (h *harness) slept() []time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]time.Duration(nil), h.sleeps...)
}

func (h *harness) randCalls() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.nRand
}

// record is one log line.
type record struct {
	level slog.Level
	msg   string
	attrs map[string]slog.Value
}

// recorder is a slog.Handler that keeps every record, at every level.
type recorder struct {
	mu      sync.Mutex
	records []record
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }

func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	attrs := map[string]slog.Value{}
	rec.Attrs(func(a slog.Attr) bool {
		attrs[a.Key] = a.Value
		return true
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	r.records = append(r.records, record{level: rec.Level, msg: rec.Message, attrs: attrs})
	return nil
}

func (r *recorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *recorder) WithGroup(string) slog.Handler      { return r }

// attemptLines returns the "[gemini] attempt N ..." lines.
func (r *recorder) attemptLines() []record {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []record
	for _, rec := range r.records {
		if strings.HasPrefix(rec.msg, "[gemini] attempt ") {
			out = append(out, rec)
		}
	}
	return out
}

// find returns the lines with message msg.
func (r *recorder) find(msg string) []record {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []record
	for _, rec := range r.records {
		if rec.msg == msg {
			out = append(out, rec)
		}
	}
	return out
}

// dump prints every line, attributes included, for leak checks.
func (r *recorder) dump() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for _, rec := range r.records {
		fmt.Fprintf(&b, "%s %s", rec.level, rec.msg)
		for k, v := range rec.attrs {
			fmt.Fprintf(&b, " %s=%v", k, v)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// messages lists the attempt lines' messages.
func messages(recs []record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.msg
	}
	return out
}

// callError returns err as a *CallError, failing the test if it is not one.
func callError(t *testing.T, err error) *gemini.CallError {
	t.Helper()
	var ce *gemini.CallError
	if !errors.As(err, &ce) {
		t.Fatalf("error %T %v is not a *gemini.CallError", err, err)
	}
	return ce
}
