package main

import (
	"context"

	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/obs"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/quarantine"
	"42sisters.ai/oracle/shared/sosfilter"
)

// The mailer's audit records. Each has an id unique for what it records,
// and the records of one step of a delivery are written as one object
// (audit.Recorder.RecordStep): the step that ends it writes gate 2's
// decision, its attempt's record and the email's in one, named by the
// email's record; an attempt that fails and is tried again writes its own
// record alone. No id is in two steps' objects, so a redelivered job that
// writes its step again adds nothing; a record that cannot be written
// alerts (audit.Recorder) and withholds nothing from the customer.

// record is the audit record of an event of this function on the task's
// order.
func (h *Handler) record(t *task, event audit.Event, status audit.Status, detail *string) audit.Record {
	r := audit.OfOrder(h.Hasher, t.order, audit.SourceEmailService, event, status, t.started, h.Now())
	r.ErrorDetail = detail
	return r
}

// ended writes the records of the step that ended the task's delivery as
// one object: lines (gate 2's decision, the attempt's), then the email's
// own, which names it. to is the address it went to, kept as a keyed hash
// ("" when none was found); count is false for a record written again
// (recordAgain), which is not another email.
func (h *Handler) ended(ctx context.Context, t *task, status audit.Status, detail *string, to string, count bool, lines ...audit.Line) {
	h.Audit.RecordStep(ctx, append(lines, h.mailLine(t, status, detail, to, count)))
}

// mailLine is the record of the task's delivery, counting the email's end
// when count is set.
func (h *Handler) mailLine(t *task, status audit.Status, detail *string, to string, count bool) audit.Line {
	r := h.record(t, audit.MailEvent(t.job.Kind), status, detail)
	if to != "" {
		r.Email = h.Hasher.Email(to)
	}
	figs := mailFigures(status)
	if status == audit.StatusEmailSent && t.job.Kind == oracle.MailVerdict && !t.order.Regen {
		// The customer's wait for their verdict's email; over a minute,
		// CustomerWaitAlarm's.
		wait := audit.Wait(t.order.PaidAt, r.Timestamp)
		r.WaitMS = wait.Milliseconds()
		figs = append(figs, obs.Waited(obs.EmailWait, wait, audit.WaitBudget)...)
	}
	if count {
		h.Metrics.Emit(figs...)
	}
	return audit.Line{Record: r, ID: audit.RecordID(t.order.SessionID, audit.NameMail, t.job.Kind)}
}

// mailFigures counts an email's end: sent (EmailsSent) or failed for good
// (EmailsFailed); nothing for any other status.
func mailFigures(status audit.Status) []obs.Figure {
	switch status {
	case audit.StatusEmailSent:
		return []obs.Figure{{Name: obs.EmailsSent, Value: 1, Unit: obs.UnitCount}}
	case audit.StatusEmailFailed:
		return []obs.Figure{{Name: obs.EmailsFailed, Value: 1, Unit: obs.UnitCount}}
	}
	return nil
}

// filterLine is the record of gate 2's decision on the task's email: the
// entries' ids, never the text. Its id is the email's, so it is written
// once, by the step that ends the delivery (or quarantines the email).
func (h *Handler) filterLine(t *task, rep sosfilter.Report) audit.Line {
	status, detail := audit.StatusOK, (*string)(nil)
	if rep.Action != sosfilter.Pass {
		status, detail = audit.StatusError, audit.Detail("quarantined by the content filter: "+string(rep.Reason))
	}
	r := h.record(t, audit.EventFilter, status, detail)
	r.Filter = &audit.Filter{Gate: quarantine.GateMailer, Action: rep.Action.String(), Reason: string(rep.Reason),
		TermIDs: rep.Terms(), Version: rep.Version, MailKind: t.job.Kind}
	if r.Filter.TermIDs == nil {
		r.Filter.TermIDs = []string{}
	}
	return audit.Line{Record: r, ID: audit.RecordID(t.order.SessionID, audit.NameFilterMail, t.job.Kind)}
}

// attemptLine is the record of one attempt of the task's delivery: its
// number and the message's hash (the same on every attempt), and the
// failure's class when it failed. An attempt the account could not send
// (blocked) is not spent and comes back under the same number: its record
// is named apart, once an hour (audit.Hourly), so that the number's own id
// stays the attempt's that ran.
func (h *Handler) attemptLine(t *task, err error, to string, blocked bool) audit.Line {
	status, detail := audit.StatusEmailSent, (*string)(nil)
	if err != nil {
		status, detail = audit.StatusEmailFailed, audit.Detail(err.Error())
	}
	r := h.record(t, audit.EventMailAttempt, status, detail)
	r.Email = h.Hasher.Email(to)
	r.Mail = &audit.MailAttempt{Kind: t.job.Kind, Attempt: t.job.Attempt, MessageHash: t.hash, Transport: h.transportOf(err)}
	if err != nil {
		r.Mail.Class, r.Mail.Code = failureClass(err), failureCode(err)
	}
	id := audit.RecordID(t.order.SessionID, audit.NameMailAttempt, t.job.Kind, t.job.Attempt)
	if blocked {
		id = audit.RecordID(t.order.SessionID, audit.NameMailAttempt, t.job.Kind, t.job.Attempt, audit.PartBlocked, audit.Hourly(r.Timestamp))
	}
	return audit.Line{Record: r, ID: id}
}
