package main

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/obs"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/smoke"
)

// Runner runs the smoke test's stages (smoke.Runner).
type Runner interface {
	Run(ctx context.Context) smoke.Report
}

// Fresh is the Runner of a run whose settings, the Stripe key, the
// test-mode signing secret and the x402 smoke wallet's key among them, are
// read anew when it starts: the cold start has checked them once already,
// and the smoke test runs once a day, so a few more Secrets Manager reads a
// run cost nothing and a rotated key or secret is never used stale, whether
// or not the container is new.
type Fresh struct {
	Load  func(ctx context.Context) (smoke.Settings, error)
	Build func(smoke.Settings) (Runner, error)
	Now   func() time.Time
}

// Run reads the settings, builds the run's Runner and runs it. Settings
// that can no longer be read fail the environment check, stage 1, with
// the reason, as a live key or a missing secret does.
func (f Fresh) Run(ctx context.Context) smoke.Report {
	s, err := f.Load(ctx)
	var r Runner
	if err == nil {
		r, err = f.Build(s)
	}
	if err != nil {
		return smoke.Report{Started: f.Now(), Results: []smoke.Result{{Stage: 1, Outcome: smoke.Fail, Err: oracle.Clip("the settings: "+err.Error(), 300)}}}
	}
	return r.Run(ctx)
}

// Alerter raises operator alerts.
type Alerter interface {
	Raise(ctx context.Context, a alert.Alert)
}

// Counter counts a metric.
type Counter interface {
	Count(name string, n float64)
}

// Handler runs the smoke test on its schedule or when invoked, and says
// the result: the report in the log, one alert (INFO SMOKE_PASSED, or
// CRITICAL SMOKE_FAILED naming the first failing stage) and the
// SmokePassed metric whose absence for 26 hours is an alarm.
type Handler struct {
	Runner  Runner
	Alerts  Alerter
	Metrics Counter
	Log     *slog.Logger
}

// Handle runs once. The event is not read: the schedule and an operator's
// invoke ask the same thing. A failed run is not a function error: the
// alert and the metric say it, and a retry would only run it again.
func (h *Handler) Handle(ctx context.Context) (smoke.Report, error) {
	rep := h.Runner.Run(ctx)
	for line := range strings.SplitSeq(strings.TrimRight(rep.String(), "\n"), "\n") {
		if line != "" {
			h.Log.InfoContext(ctx, "smoke", "line", line)
		}
	}
	h.Alerts.Raise(ctx, smoke.Announcement(rep))
	passed := 1.0
	if !rep.OK() {
		passed = 0
	}
	h.Metrics.Count(obs.SmokePassed, passed)
	h.Log.InfoContext(ctx, "smoke run", "passed", rep.Passed(), "exit", rep.ExitCode(), "duration_ms", rep.Duration.Milliseconds())
	return rep, nil
}
