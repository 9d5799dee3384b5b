package stack_test

import (
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"slices"
	"testing"
	"time"

	"42sisters.ai/oracle/infra/local/stack"
)

// healthChecks are the checks every run of the health job reports.
var healthChecks = []string{
	"audit_bucket", "email", "ledger_table", "model_circuit", "model_key", "orders", "orders_table",
	"queue_generate", "queue_generate_dead_letters", "queue_mail", "queue_mail_dead_letters",
	"queue_mail_events", "queue_mail_events_dead_letters", "stripe", "stripe_reconcile", "verdict_integrity",
}

// GET /api/health through the front door, routed from the template to the
// verdict function: 503 before the health job has run, then, after one
// run of the real health function, 200 with every check and its status.
func TestHealthEndpointAfterARun(t *testing.T) {
	o := options(t)
	o.ScheduleOff = true
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	s, err := stack.Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })

	code, body := healthAnswer(ctx, t, s)
	if code != http.StatusServiceUnavailable || body.Status != "critical" || body.Error == "" || body.Checks != nil {
		t.Fatalf("before any run: %d %+v, want 503 critical with an error", code, body)
	}
	if out, err := s.Fire(ctx, "HealthFunction"); err != nil {
		t.Fatalf("the health run: %v (%s)", err, out)
	}
	code, body = healthAnswer(ctx, t, s)
	if code != http.StatusOK || body.Status != "ok" && body.Status != "warn" || body.Stale || body.At.IsZero() {
		t.Fatalf("after a run: %d %+v, want 200 ok or warn", code, body)
	}
	if got := slices.Sorted(maps.Keys(body.Checks)); !slices.Equal(got, healthChecks) {
		t.Errorf("checks %v, want %v", got, healthChecks)
	}
	for name, st := range body.Checks {
		if st != "ok" && st != "warn" {
			t.Errorf("check %s is %q", name, st)
		}
	}
}

// healthReply is /api/health's answer.
type healthReply struct {
	Status string            `json:"status"`
	At     time.Time         `json:"at"`
	Checks map[string]string `json:"checks"`
	Stale  bool              `json:"stale"`
	Error  string            `json:"error"`
}

// healthAnswer GETs /api/health and checks it is never cached.
func healthAnswer(ctx context.Context, t *testing.T, s *stack.Stack) (int, healthReply) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.APIURL+"/api/health", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control %q, want no-store", cc)
	}
	var r healthReply
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("body %q: %v", b, err)
	}
	return resp.StatusCode, r
}
