package main

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/smoke"
)

type fixedRunner smoke.Report

func (r fixedRunner) Run(context.Context) smoke.Report { return smoke.Report(r) }

type alerts []alert.Alert

func (a *alerts) Raise(_ context.Context, x alert.Alert) { *a = append(*a, x) }

type counts map[string][]float64

func (c counts) Count(name string, n float64) { c[name] = append(c[name], n) }

// report has every stage pass up to failAt (0: none), which fails; the
// stages after it are skipped.
func report(failAt int) smoke.Report {
	rep := smoke.Report{Started: time.Date(2026, 11, 24, 7, 0, 0, 0, time.UTC), Duration: 12 * time.Second, Session: "cs_test_a1b2c3d4e5f6g7h8"}
	for i := range smoke.Stages {
		r := smoke.Result{Stage: i + 1, Outcome: smoke.Pass}
		switch {
		case failAt > 0 && i+1 == failAt:
			r.Outcome, r.Err = smoke.Fail, "the order is not READY after 30s"
		case failAt > 0 && i+1 > failAt:
			r.Outcome = smoke.Skip
		}
		rep.Results = append(rep.Results, r)
	}
	return rep
}

// TestEveryRunIsAnnounced: a pass raises one INFO SMOKE_PASSED and counts
// SmokePassed 1; a failure one CRITICAL SMOKE_FAILED naming the failing
// stage and counts 0; both log the report line by line, and neither is a
// function error (a retry would only run it again).
func TestEveryRunIsAnnounced(t *testing.T) {
	for _, tc := range []struct {
		name     string
		rep      smoke.Report
		severity alert.Severity
		kind     alert.Kind
		detail   string
		metric   float64
	}{
		{"pass", report(0), alert.Info, alert.SmokePassed, "13/13 PASS", 1},
		{"stage 6 fails", report(6), alert.Critical, alert.SmokeFailed, "Stage 6", 0},
		{"environment fails", report(1), alert.Critical, alert.SmokeFailed, "Stage 1", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var raised alerts
			metrics := counts{}
			var logs bytes.Buffer
			h := &Handler{Runner: fixedRunner(tc.rep), Alerts: &raised, Metrics: metrics, Log: slog.New(slog.NewJSONHandler(&logs, nil))}
			rep, err := h.Handle(context.Background())
			if err != nil {
				t.Fatalf("Handle: %v", err)
			}
			if rep.Session != tc.rep.Session {
				t.Errorf("returned report of session %q", rep.Session)
			}
			if len(raised) != 1 {
				t.Fatalf("%d alerts, want 1: %+v", len(raised), raised)
			}
			a := raised[0]
			if a.Severity != tc.severity || a.Kind != tc.kind || !strings.Contains(a.Detail, tc.detail) || a.Session != tc.rep.Session {
				t.Errorf("alert %+v, want %s %s with %q", a, tc.severity, tc.kind, tc.detail)
			}
			if got := metrics["SmokePassed"]; len(got) != 1 || got[0] != tc.metric {
				t.Errorf("SmokePassed %v, want [%v]", got, tc.metric)
			}
			if !strings.Contains(logs.String(), "RESULT: ") || !strings.Contains(logs.String(), "[STAGE 13]") {
				t.Errorf("the report is not in the log:\n%s", logs.String())
			}
		})
	}
}

// TestEveryRunReadsItsSecretsAnew: the run's settings are read when it
// starts, so a Stripe key rotated in its secret since the last run is the
// one the next run uses; settings that cannot be read fail stage 1 with
// the reason.
func TestEveryRunReadsItsSecretsAnew(t *testing.T) {
	keys := []string{"sk_test_before", "sk_test_rotated"}
	var loads int
	var built []string
	f := Fresh{
		Load: func(context.Context) (smoke.Settings, error) {
			loads++
			if loads > len(keys) {
				return smoke.Settings{}, errors.New("STRIPE_SECRET_KEY_ARN: AccessDeniedException")
			}
			return smoke.Settings{StripeKey: keys[loads-1]}, nil
		},
		Build: func(s smoke.Settings) (Runner, error) {
			built = append(built, s.StripeKey)
			return fixedRunner(report(0)), nil
		},
		Now: func() time.Time { return time.Date(2026, 11, 26, 7, 0, 0, 0, time.UTC) },
	}
	for range keys {
		if rep := f.Run(context.Background()); !rep.OK() {
			t.Fatalf("run %d: %s", loads, rep.Headline())
		}
	}
	if !slices.Equal(built, keys) {
		t.Fatalf("the runs used %q, want %q", built, keys)
	}
	rep := f.Run(context.Background())
	if rep.ExitCode() != 2 || !strings.Contains(rep.Results[0].Err, "AccessDeniedException") {
		t.Fatalf("unreadable settings: exit %d, %+v", rep.ExitCode(), rep.Results)
	}
}
