package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/health"
	"42sisters.ai/oracle/shared/obs"
)

// Alerter raises operator alerts.
type Alerter interface {
	Raise(ctx context.Context, a alert.Alert)
}

// Counter emits a metric (obs.Metrics).
type Counter interface {
	Count(name string, n float64)
}

// States keeps the health record and each check's state (store.Ledger).
type States interface {
	CheckStates(ctx context.Context, names []string) (map[string]health.CheckState, error)
	PutCheckState(ctx context.Context, name string, st health.CheckState, keep time.Duration) error
	PutHealth(ctx context.Context, rec health.Record, keep time.Duration) error
}

// Auditor writes one audit record (audit.Writer).
type Auditor interface {
	Write(ctx context.Context, r audit.Record, id string) (bool, error)
}

// Check is one named probe: it reports a status and a detail, or an error
// that makes it critical, and may add its figures to the run's record.
type Check struct {
	Name string
	Run  func(ctx context.Context, rec *health.Record) (health.Status, string, error)
	// Finding marks a check whose result is a finding, not a dependency's
	// answer (new dead letters, a sample of stored verdicts): trying it
	// again would lose or redraw what it found, so it is not retried.
	Finding bool
	// Kind is the kind its failures are alerted as, when it is not
	// HEALTH_CHECK_FAILED (the facilitator's is X402_FACILITATOR_DOWN);
	// the lifecycle and the RECOVERED notice are every check's.
	Kind alert.Kind
}

// Handler is one run of the health job: the checks (each retried once
// after RetryDelay before it counts), the reconciliation of orders left
// behind, the reminders of orders waiting for the operator, then the
// record, the alerts the lifecycle calls for and the run's metric.
type Handler struct {
	Checks    []Check
	Reconcile *Reconciler
	States    States
	Alerts    Alerter
	Metrics   Counter
	Log       *slog.Logger
	Now       func() time.Time
	// Sleep waits d or until ctx ends (tests pass one that only advances
	// their clock).
	Sleep        func(ctx context.Context, d time.Duration) error
	RetryDelay   time.Duration
	FailCritical int
	// History is how long each run's record is kept.
	History time.Duration

	// Subscriptions reconciles Sisters Chat's subscriptions with Stripe's.
	Subscriptions *SubscriptionReconciler
}

// Handle runs the job once; its event (the schedule's) carries nothing it
// needs. It fails only when the record cannot be kept, which the
// function's error alarm sees.
func (h *Handler) Handle(ctx context.Context, _ any) (health.Record, error) {
	start := h.Now()
	rec := health.Record{At: start.UTC()}
	rec.Checks = h.runChecks(ctx, &rec)
	if h.Reconcile != nil {
		rec.Checks = append(rec.Checks, h.Reconcile.Run(ctx, &rec)...)
	}
	if h.Subscriptions != nil {
		rec.Checks = append(rec.Checks, h.Subscriptions.Run(ctx))
	}
	rec.Overall = health.OverallOf(rec.Checks)
	h.lifecycle(ctx, rec.Checks)
	rec.DurationMs = h.Now().Sub(start).Milliseconds()
	h.Metrics.Count(obs.HealthRuns, 1)
	if rec.Overall == health.Critical {
		h.Metrics.Count(obs.HealthCritical, 1)
	}
	if err := h.States.PutHealth(ctx, rec, h.History); err != nil {
		return rec, fmt.Errorf("keep the health record: %w", err)
	}
	h.Log.InfoContext(ctx, "health run", "overall", string(rec.Overall), "duration_ms", rec.DurationMs, "failing", failing(rec.Checks))
	return rec, nil
}

// runChecks runs every check, retrying each dependency that failed
// (critical) once after RetryDelay: a blip is never alerted. A warning is
// a finding about a dependency that answered, and a Finding check's
// result would not repeat: neither is tried again.
func (h *Handler) runChecks(ctx context.Context, rec *health.Record) []health.Check {
	out := make([]health.Check, 0, len(h.Checks))
	for _, c := range h.Checks {
		r := h.try(ctx, c, rec)
		if r.Status == health.Critical && !c.Finding && h.RetryDelay > 0 {
			first := r.Detail
			if err := h.Sleep(ctx, h.RetryDelay); err == nil {
				r = h.try(ctx, c, rec)
				r.Retried = true
				if r.Status == health.OK {
					r.Detail += " (passed on its retry; first try: " + first + ")"
				}
			}
		}
		out = append(out, r)
	}
	return out
}

// try runs a check once, timing it; a panic is a critical result.
func (h *Handler) try(ctx context.Context, c Check, rec *health.Record) (r health.Check) {
	start := h.Now()
	r.Name = c.Name
	defer func() {
		if p := recover(); p != nil {
			r.Status, r.Detail = health.Critical, fmt.Sprintf("the check panicked: %v", p)
		}
		r.DurationMs = h.Now().Sub(start).Milliseconds()
	}()
	status, detail, err := c.Run(ctx, rec)
	if err != nil {
		status, detail = health.Critical, err.Error()
	}
	r.Status, r.Detail = status, detail
	return r
}

// lifecycle moves each check's kept state on and raises what it calls
// for. A state that cannot be read counts from zero (an alert raised twice
// is better than one missed); one that cannot be kept is logged.
func (h *Handler) lifecycle(ctx context.Context, checks []health.Check) {
	names := make([]string, len(checks))
	for i, c := range checks {
		names[i] = c.Name
	}
	states, err := h.States.CheckStates(ctx, names)
	if err != nil {
		h.Log.ErrorContext(ctx, "check states unreadable; counting from zero", "error", err.Error())
		states = map[string]health.CheckState{}
	}
	kinds := map[string]alert.Kind{}
	for _, c := range h.Checks {
		kinds[c.Name] = c.Kind
	}
	now := h.Now()
	for _, c := range checks {
		prev := states[c.Name]
		next, a := health.Next(prev, c, h.FailCritical, now)
		if a != nil {
			if a.Kind == alert.HealthCheckFailed && kinds[c.Name] != "" {
				a.Kind = kinds[c.Name]
			}
			h.Alerts.Raise(ctx, *a)
		}
		if next == prev {
			continue
		}
		if err := h.States.PutCheckState(ctx, c.Name, next, 7*24*time.Hour); err != nil {
			h.Log.ErrorContext(ctx, "check state not kept", "check", c.Name, "error", err.Error())
		}
	}
}

func failing(checks []health.Check) string {
	var names []string
	for _, c := range checks {
		if c.Status != health.OK {
			names = append(names, c.Name+"="+string(c.Status))
		}
	}
	return strings.Join(names, ",")
}
