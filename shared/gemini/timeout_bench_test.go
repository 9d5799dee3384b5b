package gemini_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"42sisters.ai/oracle/infra/fakes/fakegemini"
	"42sisters.ai/oracle/shared/gemini"
	"42sisters.ai/oracle/shared/oracle"
)

// BenchmarkHangingCallTimeout measures how long past GEMINI_CALL_TIMEOUT a
// call to a model that never answers returns (VC-1 allows 500 ms). A test
// asserting it would fail on a busy machine; make bench's table judges it.
func BenchmarkHangingCallTimeout(b *testing.B) {
	const callTimeout = 200 * time.Millisecond
	srv := httptest.NewServer(fakegemini.New(fakegemini.Options{}))
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/_control", "application/json", strings.NewReader(`{"hang":true,"calls":10000}`))
	if err != nil {
		b.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("control: %s", resp.Status)
	}
	client, err := gemini.New(context.Background(), gemini.Options{APIKey: testKey, BaseURL: srv.URL, Timeout: 5 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	c := &gemini.Caller{
		Primary: client,
		Policy:  gemini.Policy{Attempts: 1, CallTimeout: callTimeout, MinCall: -1},
		Rand:    func() float64 { return 0.5 },
		Sleep:   func(ctx context.Context, _ time.Duration) error { return ctx.Err() },
		Now:     time.Now,
		Log:     slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	var worst time.Duration
	for b.Loop() {
		start := time.Now()
		if _, err := c.Call(context.Background(), request(oracle.TierQuick), validator(oracle.TierQuick)); err == nil {
			b.Fatal("a hanging model answered")
		}
		worst = max(worst, time.Since(start)-callTimeout)
	}
	b.ReportMetric(float64(worst.Microseconds())/1000, "overshoot-max-ms")
}
