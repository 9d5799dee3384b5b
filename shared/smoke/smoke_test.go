package smoke_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"42sisters.ai/oracle/shared/smoke"
)

// TestEnvironmentCheckStopsTheRun: a live key, no test key or no signing
// secret fail stage 1, exit 2, and nothing else runs (no probe, no call).
func TestEnvironmentCheckStopsTheRun(t *testing.T) {
	cases := []struct{ name, key, secret, want string }{
		{"a live key", "sk_live_x", "whsec_x", "FATAL: production Stripe key"},
		{"a live restricted key", "rk_live_x", "whsec_x", "FATAL: production Stripe key"},
		{"no key", "", "whsec_x", "no test-mode Stripe key"},
		{"no signing secret", "sk_test_x", "", "no test-mode webhook signing secret"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			touched := false
			probe := func(context.Context) (string, error) { touched = true; return "", nil }
			r := &smoke.Runner{StripeKey: c.key, SigningSecret: c.secret, APIURL: "http://127.0.0.1:1", HTTP: http.DefaultClient,
				Stores: probe, Email: probe}
			rep := r.Run(context.Background())
			if rep.ExitCode() != 2 || len(rep.Results) != 1 || !strings.Contains(rep.Results[0].Err, c.want) || touched {
				t.Errorf("exit %d, results %+v, probes touched %v; want exit 2 and stage 1 alone failing with %q", rep.ExitCode(), rep.Results, touched, c.want)
			}
		})
	}
}

// TestStagesThatNeedAFailedOneAreSkipped: with the checkout down, the
// stages that follow the session are skipped, the stores and email still
// report, and the run exits 1 naming stage 4.
func TestStagesThatNeedAFailedOneAreSkipped(t *testing.T) {
	ok := func(context.Context) (string, error) { return "ok", nil }
	r := &smoke.Runner{StripeKey: "sk_test_x", SigningSecret: "whsec_x", APIURL: "http://127.0.0.1:1", HTTP: http.DefaultClient,
		Stores: ok, Email: func(context.Context) (string, error) { return "", errors.New("sending paused") }}
	rep := r.Run(context.Background())
	got := ""
	for _, s := range rep.Results {
		got += string(s.Outcome)[:1]
	}
	if got != "PPFFSSSSSS" || rep.ExitCode() != 1 || rep.Passed() != 2 {
		t.Fatalf("outcomes %s exit %d, want PPFFSSSSSS and 1", got, rep.ExitCode())
	}
	if f, _ := rep.FirstFailure(); f.Stage != 3 || !strings.Contains(rep.Headline(), "2/10 FAIL — Stage 3 (Email transport): sending paused") {
		t.Errorf("first failure %+v, headline %q", f, rep.Headline())
	}
}

func TestReportFormat(t *testing.T) {
	rep := smoke.Report{Started: time.Date(2026, 4, 16, 7, 0, 0, 0, time.UTC), Duration: 18300 * time.Millisecond}
	for i := range smoke.Stages {
		rep.Results = append(rep.Results, smoke.Result{Stage: i + 1, Outcome: smoke.Pass})
	}
	rep.Results[3].Figure = "session_id=cs_test_abc1"
	want := "ORACLE SMOKE TEST — 2026-04-16T07:00:00Z\n" + strings.Repeat("=", 42) + "\n\n" +
		"[STAGE 1] Environment check ....................... PASS\n"
	s := rep.String()
	if !strings.HasPrefix(s, want) {
		t.Errorf("report begins\n%s\nwant\n%s", s[:min(len(s), len(want)+40)], want)
	}
	for _, line := range []string{"[STAGE 4] Test checkout session ", "PASS  session_id=cs_test_abc1\n", "[STAGE 10] Cleanup ",
		"\nRESULT: 10/10 PASS — Pipeline operational.\nDuration: 18.3s\n"} {
		if !strings.Contains(s, line) {
			t.Errorf("report lacks %q:\n%s", line, s)
		}
	}
	if rep.ExitCode() != 0 || rep.Headline() != "[SMOKE] Oracle pipeline: 10/10 PASS (18.3s)" {
		t.Errorf("exit %d headline %q", rep.ExitCode(), rep.Headline())
	}
}
