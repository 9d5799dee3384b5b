package main

import (
	"context"
	"errors"
	"math"
	"time"

	"42sisters.ai/oracle/shared/gemini"
	"42sisters.ai/oracle/shared/oracle"
)

// The generator's decisions, as functions of what they decide from: no
// I/O, so each is tested as a table.

// step is what a job calls for, given its order.
type step int

const (
	stepNotOwed      step = iota // the order owes no generation: acknowledge
	stepUnknownOrder             // no such order: acknowledge
	stepGenerate                 // ask the model for the verdict
	stepResume                   // the verdict is stored: finish what follows it
	stepRenotify                 // settled without a verdict: queue what it is owed again
)

var stepNames = [...]string{"not owed", "unknown order", "generate", "resume", "renotify"}

func (s step) String() string { return stepNames[s] }

// next is what a generate job calls for when its order is o (found false:
// there is none).
func next(o oracle.Order, found bool) step {
	switch {
	case !found:
		return stepUnknownOrder
	case o.Status == oracle.StatusReady:
		// A redelivery after the verdict was stored: what follows it may
		// not have been finished.
		return stepResume
	case o.Status == oracle.StatusFailed || o.Status == oracle.StatusHeld || o.Status == oracle.StatusQuarantined:
		// A redelivery after the order was settled without a verdict: the
		// attempt that settled it may have died before queueing what the
		// customer is owed.
		return stepRenotify
	case o.Status == oracle.StatusPaid || o.Status == oracle.StatusGenerating:
		return stepGenerate
	}
	return stepNotOwed
}

// remedy is what a failed generation calls for.
type remedy int

const (
	// remedyHold: the crosscheck refused both replies; the order is held
	// for review.
	remedyHold remedy = iota
	// remedyParkKey: the model refused the key; the job waits for a
	// working one.
	remedyParkKey
	// remedyRetry: the model failed in a way that passes; the job waits
	// a backoff and tries again, as its next attempt.
	remedyRetry
	// remedyGiveUp: the same request would fail again; the order fails now.
	remedyGiveUp
	// remedyRedeliver: SQS delivers the job again.
	remedyRedeliver
	// remedyLastDelivery: as remedyRedeliver, but this was the queue's
	// last delivery: the order fails, and the message goes to the
	// dead-letter queue.
	remedyLastDelivery
	// remedyHoldRefused: the model refused the prompt again on the
	// stricter retry: a content outcome, not an outage; the order is held
	// for the operator at once.
	remedyHoldRefused
)

var remedyNames = [...]string{"hold", "park until the key works", "retry", "give up", "redeliver", "give up on the last delivery", "hold: the model refused"}

func (r remedy) String() string { return remedyNames[r] }

// remedyFor is what a generation that failed with cause calls for, on the
// receives-th delivery of a queue that makes maxReceives (0: no limit).
func remedyFor(cause error, receives, maxReceives int) remedy {
	var rej *rejected
	switch kind := gemini.KindOf(cause); {
	case errors.As(cause, &rej):
		return remedyHold
	case gemini.Refusals(cause) >= 2:
		return remedyHoldRefused
	case kind == gemini.AuthFailure:
		return remedyParkKey
	case kind == gemini.BadRequest:
		return remedyGiveUp
	case gemini.Countable(cause), errors.Is(cause, gemini.ErrNoBudget):
		return remedyRetry
	case maxReceives > 0 && receives >= maxReceives:
		return remedyLastDelivery
	}
	// Content and internal failures: SQS delivers the job again.
	return remedyRedeliver
}

// failureClass names a failure for audit records and alerts without
// quoting the model or the customer.
func failureClass(err error) string {
	var rej *rejected
	switch {
	case errors.As(err, &rej):
		return "crosscheck_" + string(rej.decision.Reason)
	case errors.Is(err, gemini.ErrRefused):
		return "model_refused"
	case errors.Is(err, gemini.ErrInvalidReply):
		return "invalid_reply"
	case errors.Is(err, gemini.ErrNoBudget):
		return "no_time_left"
	case gemini.KindOf(err) != 0:
		return "model_" + gemini.KindOf(err).String()
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	}
	return "internal"
}

// maxRetryDelay bounds backoff.
const maxRetryDelay = 15 * time.Minute

// backoff is the wait before attempt n after a transient failure: base
// doubled per attempt, at most 15 minutes, with equal jitter (jitter in
// [0, 1) picks within the upper half).
func backoff(base time.Duration, n int, jitter float64) time.Duration {
	d := float64(base) * math.Pow(2, float64(max(n-1, 0)))
	d = min(d, float64(maxRetryDelay))
	return time.Duration(d/2 + jitter*d/2)
}

// parkUntil is when a job parked at now, waiting for the model until
// until, comes back: not before now, and not after the end of the parking
// budget that started at since, so that the end is checked on time. ok is
// false when the budget is spent: the order fails instead.
func parkUntil(since, until, now time.Time, budget time.Duration) (at time.Time, ok bool) {
	deadline := since.Add(budget)
	if !now.Before(deadline) {
		return time.Time{}, false
	}
	if until.Before(now) {
		until = now
	}
	if until.After(deadline) {
		until = deadline
	}
	return until, true
}
