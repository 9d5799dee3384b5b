package stack_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"42sisters.ai/oracle/infra/local/stack"
	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/smoke"
)

// TestSmokeFunctionPassesOnTheLocalStack fires the smoke function as its
// schedule does: ten stages pass through the stack's real checkout,
// webhook, generator, mailer and verdict API, one INFO SMOKE_PASSED is
// published, and nothing of the run is left in the Orders table.
func TestSmokeFunctionPassesOnTheLocalStack(t *testing.T) {
	o := options(t)
	o.ScheduleOff = true
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	s, err := stack.Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })

	out, err := s.Fire(ctx, "SmokeFunction")
	if err != nil {
		t.Fatalf("smoke run: %v (%s)", err, out)
	}
	var rep smoke.Report
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("report %s: %v", out, err)
	}
	if !rep.OK() || rep.ExitCode() != 0 {
		t.Fatalf("report:\n%s", rep)
	}
	// Alerts reach the test through SNS and a queue: wait for this one.
	testkit.Eventually(30*time.Second, 100*time.Millisecond, func() bool { return len(alertsOf(s, alert.SmokePassed)) > 0 })
	if got := alertsOf(s, alert.SmokePassed); len(got) != 1 || !strings.Contains(got[0], "10/10 PASS") {
		t.Errorf("SMOKE_PASSED alerts %q, want one", got)
	}
	if n := len(alertsOf(s, alert.SmokeFailed)); n != 0 {
		t.Errorf("%d SMOKE_FAILED alerts", n)
	}
	if item := orderItem(t, s, rep.Session); item != nil {
		t.Errorf("the smoke order is still there: %v", item)
	}
}
