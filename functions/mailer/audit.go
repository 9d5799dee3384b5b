package main

import (
	"context"

	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/obs"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/quarantine"
	"42sisters.ai/oracle/shared/sosfilter"
)

// The mailer's audit records. Each has an id unique for what it records, so
// a redelivered job writes nothing twice; a record that cannot be written
// alerts (audit.Recorder) and withholds nothing from the customer.

// record is the audit record of an event of this function on the task's
// order.
func (h *Handler) record(t *task, event audit.Event, status audit.Status, detail *string) audit.Record {
	r := audit.OfOrder(h.Hasher, t.order, audit.SourceEmailService, event, status, t.started, h.Now())
	r.ErrorDetail = detail
	return r
}

// auditMail writes the record of the task's delivery; to is the address it
// went to, kept as a keyed hash ("" when none was found).
func (h *Handler) auditMail(ctx context.Context, t *task, status audit.Status, detail *string, to string) {
	h.auditMailCounted(ctx, t, status, detail, to, true)
}

// auditMailCounted is auditMail, which counts the email's end only when
// count is set: a record written again (recordAgain) is not another email.
func (h *Handler) auditMailCounted(ctx context.Context, t *task, status audit.Status, detail *string, to string, count bool) {
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
	h.Audit.Record(ctx, r, audit.RecordID(t.order.SessionID, audit.NameMail, t.job.Kind))
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

// auditFilter writes the record of gate 2's decision on the task's email:
// the entries' ids, never the text.
func (h *Handler) auditFilter(ctx context.Context, t *task, rep sosfilter.Report) {
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
	h.Audit.Record(ctx, r, audit.RecordID(t.order.SessionID, audit.NameFilterMail, t.job.Kind))
}

// auditAttempt writes the record of one attempt of the task's delivery:
// its number and the message's hash (the same on every attempt), and the
// failure's class when it failed.
func (h *Handler) auditAttempt(ctx context.Context, t *task, err error, to string) {
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
	h.Audit.Record(ctx, r, audit.RecordID(t.order.SessionID, audit.NameMailAttempt, t.job.Kind, t.job.Attempt))
}
