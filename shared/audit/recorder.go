package audit

import (
	"context"
	"log/slog"
	"strings"

	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/obs"
)

// Appender appends one step's records as one object (Writer).
type Appender interface {
	WriteStep(ctx context.Context, lines []Line) (bool, error)
}

// Raiser raises an operator alert (alert.Alerter).
type Raiser interface {
	Raise(ctx context.Context, a alert.Alert)
}

// Recorder writes a function's audit records. A record that cannot be
// written raises AUDIT_WRITE_FAILED and is logged (the event and the
// error, never the record): the customer is served all the same.
type Recorder struct {
	Writer Appender
	Alerts Raiser
	Log    *slog.Logger
}

// Record writes r under id, alerting when it cannot.
func (rc *Recorder) Record(ctx context.Context, r Record, id string) {
	_ = rc.Require(ctx, r, id)
}

// Require is Record for a caller whose work is not done until its record
// is written (a claim, which is then retried): it also returns the failure.
func (rc *Recorder) Require(ctx context.Context, r Record, id string) error {
	return rc.RequireStep(ctx, []Line{{Record: r, ID: id}})
}

// RecordStep writes a step's records as one object (Writer.WriteStep),
// alerting when it cannot.
func (rc *Recorder) RecordStep(ctx context.Context, lines []Line) {
	_ = rc.RequireStep(ctx, lines)
}

// RequireStep is RecordStep that also returns the failure. The alert and
// the log name the step by its outcome's event, and every event it held.
func (rc *Recorder) RequireStep(ctx context.Context, lines []Line) error {
	if len(lines) == 0 {
		return nil
	}
	if _, err := rc.Writer.WriteStep(ctx, lines); err != nil {
		head := lines[len(lines)-1].Record
		events := make([]string, len(lines))
		for i, l := range lines {
			events[i] = string(l.Record.Event)
		}
		what := strings.Join(events, ", ")
		rc.Alerts.Raise(ctx, alert.Alert{Severity: alert.Error, Kind: alert.AuditWriteFailed, Session: head.SessionID,
			Detail: what + " audit record not written"})
		rc.Log.ErrorContext(ctx, "audit write failed", obs.Order(head.SessionID), "event", what, "error", err.Error())
		return err
	}
	return nil
}
