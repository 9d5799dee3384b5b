package schedule

import (
	"context"
	"log"
	"time"
)

// Clock tells the time and waits for it.
type Clock interface {
	Now() time.Time
	// SleepUntil waits until the clock reads t or later, or ctx ends, and
	// reports whether t came.
	SleepUntil(ctx context.Context, t time.Time) bool
}

// System is the machine's clock.
var System Clock = systemClock{}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

func (systemClock) SleepUntil(ctx context.Context, t time.Time) bool {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// Job is what a schedule fires.
type Job struct {
	// Name names the job in the log, e.g. "HealthFunction Every".
	Name string
	// Expression says when the job is due.
	Expression Expression
	// Fire runs the job for the due time at; its error is logged.
	Fire func(ctx context.Context, at time.Time) error
}

// Run fires j at each due time of its expression after from, one firing at
// a time, until ctx ends or the expression is never due again. Each firing
// is logged, and so is a failed one; a firing that outlasts the next due
// times skips them, as they can no longer be on time, and the job goes on
// from the first due time still to come.
func Run(ctx context.Context, c Clock, from time.Time, logger *log.Logger, j Job) {
	next := j.Expression.Next(from)
	for !next.IsZero() {
		if !c.SleepUntil(ctx, next) {
			return
		}
		logger.Printf("%s fired", j.Name)
		if err := j.Fire(ctx, next); err != nil {
			if ctx.Err() != nil {
				return
			}
			logger.Printf("%s failed: %v", j.Name, err)
		}
		due := j.Expression.Next(next)
		if now := c.Now(); !due.IsZero() && !due.After(now) {
			due = j.Expression.Next(now)
			logger.Printf("%s: the firing outlasted its period; the missed ones are skipped", j.Name)
		}
		next = due
	}
	logger.Printf("%s: never due again", j.Name)
}
