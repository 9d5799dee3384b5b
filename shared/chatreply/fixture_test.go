package chatreply_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	fakegemini "42sisters.ai/oracle/infra/fakes/fakegemini"
	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/chatreply"
	"42sisters.ai/oracle/shared/circuit"
	"42sisters.ai/oracle/shared/gemini"
	"42sisters.ai/oracle/shared/prompt"
	"42sisters.ai/oracle/shared/sosfilter"
)

// env is a Replier against the fake Gemini over HTTP, through the real
// client and Caller, with the real content filter; the circuit and the
// alerts are recorded, and every log line (the Replier's and the
// Caller's) is kept.
type env struct {
	fake    *fakegemini.Server
	url     string
	replier *chatreply.Replier
	caller  *gemini.Caller
	alerts  *alerts
	circuit *breaker
	logs    *syncBuffer
}

func newEnv(t testing.TB) *env {
	t.Helper()
	e := &env{fake: fakegemini.New(fakegemini.Options{}), alerts: &alerts{}, circuit: &breaker{}, logs: &syncBuffer{}}
	srv := httptest.NewServer(e.fake)
	t.Cleanup(srv.Close)
	e.url = srv.URL
	client, err := gemini.New(context.Background(), gemini.Options{APIKey: "test-key", BaseURL: srv.URL, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	filter, err := sosfilter.New()
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewJSONHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e.caller = &gemini.Caller{Primary: client, Policy: chatreply.CallerPolicy(5 * time.Second),
		Rand: func() float64 { return 0 }, Log: log}
	e.replier = &chatreply.Replier{Model: e.caller, Circuit: e.circuit, Filter: filter, Alerts: e.alerts, Log: log}
	return e
}

// control sets the fake's scenario.
func (e *env) control(t testing.TB, scenario string) {
	t.Helper()
	resp, err := http.Post(e.url+"/_control", "application/json", strings.NewReader(scenario))
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("control %s: %v %v", scenario, resp, err)
	}
	resp.Body.Close()
}

// reply is one exchange with a 20 s deadline.
func (e *env) reply(t testing.TB, req chatreply.Request) (chatreply.Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return e.replier.Reply(ctx, req)
}

// passes lists the chat passes the fake received, in order.
func (e *env) passes() []prompt.ChatPass {
	var out []prompt.ChatPass
	for _, c := range e.fake.Calls() {
		out = append(out, prompt.ChatPass(c.Pass))
	}
	return out
}

type alerts struct {
	mu  sync.Mutex
	got []alert.Alert
}

func (a *alerts) Raise(_ context.Context, al alert.Alert) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.got = append(a.got, al)
}

func (a *alerts) of(kind alert.Kind) []alert.Alert {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []alert.Alert
	for _, al := range a.got {
		if al.Kind == kind {
			out = append(out, al)
		}
	}
	return out
}

// breaker is a circuit that is open when told, and counts what it hears.
type breaker struct {
	mu                  sync.Mutex
	open                bool
	allowed, ok, failed int
	trip                bool // the next Failed trips it
	lastLatency         time.Duration
}

func (b *breaker) Allow(context.Context) (circuit.Permit, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.open {
		return circuit.Permit{}, &circuit.OpenError{Name: "gemini", Reason: circuit.ReasonFailures, Until: time.Now().Add(time.Minute)}
	}
	b.allowed++
	return circuit.Permit{}, nil
}

func (b *breaker) Succeeded(_ context.Context, _ circuit.Permit, latency time.Duration) (circuit.Transition, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ok++
	b.lastLatency = latency
	return circuit.Transition{}, nil
}

func (b *breaker) Failed(context.Context, circuit.Permit) (circuit.Transition, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.failed++
	if b.trip {
		return circuit.Transition{From: circuit.Closed, To: circuit.Open, Reason: circuit.ReasonFailures}, nil
	}
	return circuit.Transition{}, nil
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
