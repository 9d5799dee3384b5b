package audit

import (
	"context"
	"log/slog"

	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/obs"
)

// Appender appends one record (Writer).
type Appender interface {
	Write(ctx context.Context, r Record, id string) (bool, error)
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
	if _, err := rc.Writer.Write(ctx, r, id); err != nil {
		rc.Alerts.Raise(ctx, alert.Alert{Severity: alert.Error, Kind: alert.AuditWriteFailed, Session: r.SessionID,
			Detail: string(r.Event) + " audit record not written"})
		rc.Log.ErrorContext(ctx, "audit write failed", obs.Order(r.SessionID), "event", string(r.Event), "error", err.Error())
		return err
	}
	return nil
}
