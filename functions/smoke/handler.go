package main

import (
	"context"
	"log/slog"
	"strings"

	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/smoke"
)

// Runner runs the smoke test's stages (smoke.Runner).
type Runner interface {
	Run(ctx context.Context) smoke.Report
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
			h.Log.Info("smoke", "line", line)
		}
	}
	h.Alerts.Raise(ctx, smoke.Announcement(rep))
	passed := 1.0
	if !rep.OK() {
		passed = 0
	}
	h.Metrics.Count("SmokePassed", passed)
	h.Log.Info("smoke run", "passed", rep.Passed(), "exit", rep.ExitCode(), "duration_ms", rep.Duration.Milliseconds())
	return rep, nil
}
