package main

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"42sisters.ai/oracle/shared/crosscheck"
	"42sisters.ai/oracle/shared/gemini"
	"42sisters.ai/oracle/shared/oracle"
)

func TestNextStepOfAJobFollowsItsOrder(t *testing.T) {
	order := func(s oracle.Status) oracle.Order { return oracle.Order{SessionID: "cs_test_a", Status: s} }
	tests := []struct {
		name  string
		order oracle.Order
		found bool
		want  step
	}{
		{"no order", oracle.Order{}, false, stepUnknownOrder},
		{"paid, or a regeneration reset to paid", order(oracle.StatusPaid), true, stepGenerate},
		{"generating: a lease that died, or a live one StartGeneration refuses", order(oracle.StatusGenerating), true, stepGenerate},
		{"verdict stored, or live on a regeneration job: finish what follows it", order(oracle.StatusReady), true, stepResume},
		{"failed: the notice again", order(oracle.StatusFailed), true, stepRenotify},
		{"held: the notice again", order(oracle.StatusHeld), true, stepRenotify},
		{"quarantined: the notice again", order(oracle.StatusQuarantined), true, stepRenotify},
		{"dropped", order(oracle.StatusDropped), true, stepNotOwed},
		{"refunded", order(oracle.StatusRefunded), true, stepNotOwed},
	}
	for _, tc := range tests {
		if got := next(tc.order, tc.found); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestRemedyOfAFailedGeneration(t *testing.T) {
	rej := &rejected{decision: crosscheck.Decision{Reason: crosscheck.ReasonFieldMissing}}
	modelErr := func(k gemini.Kind) error { return &gemini.Error{Kind: k} }
	tests := []struct {
		name     string
		cause    error
		receives int
		want     remedy
		class    string
	}{
		{"both replies rejected by the crosscheck", &gemini.Error{Kind: gemini.ContentFailure, Err: fmt.Errorf("%w: %w", gemini.ErrInvalidReply, rej)}, 1, remedyHold, "crosscheck_field_missing"},
		{"rejected on the last delivery still holds", rej, 3, remedyHold, "crosscheck_field_missing"},
		{"key refused", modelErr(gemini.AuthFailure), 1, remedyParkKey, "model_auth_failure"},
		{"request refused", modelErr(gemini.BadRequest), 1, remedyGiveUp, "model_bad_request"},
		{"server error", modelErr(gemini.ServerError), 1, remedyRetry, "model_server_error"},
		{"server error on the last delivery is still retried", modelErr(gemini.ServerError), 3, remedyRetry, "model_server_error"},
		{"rate limited", modelErr(gemini.RateLimited), 1, remedyRetry, "model_rate_limited"},
		{"timeout", &gemini.CallError{Attempts: 3, Err: modelErr(gemini.Timeout)}, 1, remedyRetry, "model_timeout"},
		{"connection lost", modelErr(gemini.ConnectionError), 2, remedyRetry, "model_connection_error"},
		{"no time left to call", &gemini.CallError{Err: gemini.ErrNoBudget}, 1, remedyRetry, "no_time_left"},
		{"prompt refused again on the stricter retry", &gemini.CallError{Attempts: 2, Strict: true, Refusals: 2,
			Err: &gemini.Error{Kind: gemini.ContentFailure, Err: gemini.ErrRefused}}, 1, remedyHoldRefused, "model_refused"},
		{"refused once, then off the schema", &gemini.CallError{Attempts: 2, Strict: true, Refusals: 1,
			Err: &gemini.Error{Kind: gemini.ContentFailure, Err: fmt.Errorf("%w: bad", gemini.ErrInvalidReply)}}, 1, remedyRedeliver, "invalid_reply"},
		{"reply blocked", modelErr(gemini.ContentFailure), 1, remedyRedeliver, "model_content_failure"},
		{"reply blocked on the last delivery", modelErr(gemini.ContentFailure), 3, remedyLastDelivery, "model_content_failure"},
		{"reply off the schema", &gemini.Error{Kind: gemini.ContentFailure, Err: fmt.Errorf("%w: bad", gemini.ErrInvalidReply)}, 2, remedyRedeliver, "invalid_reply"},
		{"internal", errors.New("encode"), 2, remedyRedeliver, "internal"},
		{"internal on the last delivery", errors.New("encode"), 3, remedyLastDelivery, "internal"},
		{"deadline", fmt.Errorf("store: %w", context.DeadlineExceeded), 4, remedyLastDelivery, "timeout"},
	}
	for _, tc := range tests {
		if got := remedyFor(tc.cause, tc.receives, 3); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
		if got := failureClass(tc.cause); got != tc.class {
			t.Errorf("%s: class %q, want %q", tc.name, got, tc.class)
		}
	}
	if got := remedyFor(errors.New("encode"), 50, 0); got != remedyRedeliver {
		t.Errorf("without a receive limit: %s, want redeliver", got)
	}
}

func TestParkUntilKeepsWithinTheBudget(t *testing.T) {
	since := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return since.Add(d) }
	const budget = 6 * time.Hour
	tests := []struct {
		name       string
		until, now time.Time
		want       time.Time
		ok         bool
	}{
		{"waits until asked", at(time.Minute), since, at(time.Minute), true},
		{"a time already past is now", at(time.Hour), at(2 * time.Hour), at(2 * time.Hour), true},
		{"the budget's end is checked on time", at(7 * time.Hour), at(5 * time.Hour), at(budget), true},
		{"at the budget's end it fails", at(7 * time.Hour), at(budget), time.Time{}, false},
		{"past it, it fails", at(budget + time.Minute), at(budget + time.Second), time.Time{}, false},
	}
	for _, tc := range tests {
		got, ok := parkUntil(since, tc.until, tc.now, budget)
		if ok != tc.ok || !got.Equal(tc.want) {
			t.Errorf("%s: %s %v, want %s %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

func TestBackoffDoublesToFifteenMinutesWithEqualJitter(t *testing.T) {
	tests := []struct {
		attempt int
		jitter  float64
		want    time.Duration
	}{
		{1, 0, 15 * time.Second},
		{1, 0.5, 22500 * time.Millisecond},
		{1, 0.9999, 29998500 * time.Microsecond},
		{2, 0, 30 * time.Second},
		{3, 0, time.Minute},
		{0, 0, 15 * time.Second}, // attempt 0 is treated as the first
		{6, 1, 15 * time.Minute}, // 30 s × 32 = 16 min, capped
		{40, 0.5, 11*time.Minute + 15*time.Second},
	}
	for _, tc := range tests {
		if got := backoff(30*time.Second, tc.attempt, tc.jitter); got != tc.want {
			t.Errorf("attempt %d, jitter %v: %s, want %s", tc.attempt, tc.jitter, got, tc.want)
		}
	}
}
