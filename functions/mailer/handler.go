package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"42sisters.ai/oracle/functions/mailer/letter"
	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/mail"
	"42sisters.ai/oracle/shared/obs"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/quarantine"
	"42sisters.ai/oracle/shared/queue"
	"42sisters.ai/oracle/shared/sosfilter"
	"42sisters.ai/oracle/shared/sqsbatch"
	"42sisters.ai/oracle/shared/store"
)

// Orders is the order store (shared/store).
type Orders interface {
	Get(ctx context.Context, sessionID string) (oracle.Order, bool, error)
	ClaimMail(ctx context.Context, sessionID string, kind oracle.MailKind, lease time.Duration) (string, error)
	MailSent(ctx context.Context, sessionID string, kind oracle.MailKind, token, messageID string) error
	ReleaseMail(ctx context.Context, sessionID string, kind oracle.MailKind, token string) error
	QuarantineReady(ctx context.Context, sessionID string, q store.Quarantine) (bool, error)
}

// Sessions retrieves Checkout Sessions, for the recipient at send time.
type Sessions interface {
	RetrieveSession(ctx context.Context, id string) (oracle.Session, error)
}

// Transport sends a message (shared/mail).
type Transport interface {
	Send(ctx context.Context, m mail.Outgoing) (string, error)
}

// Alerter raises operator alerts.
type Alerter interface {
	Raise(ctx context.Context, a alert.Alert)
}

// ContentFilter is gate 2 of the outbound content filter (shared/sosfilter).
type ContentFilter interface {
	Mail(subject, text, html, query string) sosfilter.Report
}

// QuarantineStore keeps what the filter stopped (shared/quarantine).
type QuarantineStore interface {
	Put(ctx context.Context, r quarantine.Record) (string, error)
}

// Sender sends a job to a queue.
type Sender interface {
	Send(ctx context.Context, j queue.Job) error
}

// Handler consumes the mail queue.
type Handler struct {
	Orders Orders
	// Live and Test retrieve sessions of each mode; Test may be nil when
	// test-mode orders are not expected.
	Live, Test Sessions
	Transport  Transport
	// Audit writes the mailer's records, alerting when one is lost.
	Audit  *audit.Recorder
	Alerts Alerter
	// Filter is gate 2: every email passes it just before it is sent; a
	// stopped one goes to Quarantine, the customer gets the review notice
	// (Mail) and the operator a reminder every QuarantineReminder
	// (Reminders, on the generate queue).
	Filter             ContentFilter
	Quarantine         QuarantineStore
	Mail               Sender
	Reminders          Sender
	QuarantineReminder time.Duration
	Hasher             *audit.Hasher
	Brand              letter.Brand
	BaseURL            string // the site, for the result page link
	Log                *slog.Logger
	Now                func() time.Time
	// Lease bounds one send attempt before another may take over.
	Lease time.Duration
}

// DefaultLease outlasts one invocation of the mailer (30 s timeout), so a
// live send is never taken over.
const DefaultLease = time.Minute

// task is one mail job on its way through the Handler.
type task struct {
	job     queue.Job
	started time.Time
	log     *slog.Logger
	order   oracle.Order
	// token is this task's claim on the delivery, once taken.
	token string
}

// Handle processes a batch and reports the records that failed, so that
// SQS redelivers only those (and, after the queue's maxReceiveCount, moves
// them to the dead-letter queue).
func (h *Handler) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	return sqsbatch.Process(ctx, h.Log, ev, h.process), nil
}

// process reads one message; run does its work.
func (h *Handler) process(ctx context.Context, rec events.SQSMessage) error {
	job, err := queue.Parse(rec.Body)
	if err == nil && job.Kind == "" {
		err = errors.New("a generation job on the mail queue")
	}
	if err != nil {
		h.Alerts.Raise(ctx, alert.Alert{Severity: alert.Error, Kind: alert.GarbageJob, Session: rec.MessageId,
			Detail: "unreadable message on the mail queue (" + rec.MessageId + "); it will reach the dead-letter queue"})
		return fmt.Errorf("message %s: %w", rec.MessageId, err)
	}
	return h.run(ctx, &task{job: job, started: h.Now(), log: h.Log.With(obs.Session(job.SessionID), "kind", job.Kind)})
}

// run does what the job calls for, given its order.
func (h *Handler) run(ctx context.Context, t *task) error {
	order, found, err := h.Orders.Get(ctx, t.job.SessionID)
	if err != nil {
		return err
	}
	t.order = order
	switch next(t.job.Kind, order, found) {
	case stepUnknownOrder:
		t.log.Warn("mail job for an unknown order acknowledged")
		return nil
	case stepNotOwed:
		t.log.Warn("mail job for an order with nothing to send acknowledged", "status", string(order.Status))
		return nil
	case stepFollowUps:
		t.log.Info("verdict quarantined; its follow-ups are queued again")
		return h.quarantineFollowUps(ctx, order.SessionID)
	}
	return h.deliver(ctx, t)
}

// deliver composes the email from the stored order (never from the
// message), claims its delivery, passes it through gate 2 and sends it.
func (h *Handler) deliver(ctx context.Context, t *task) error {
	o, kind := t.order, t.job.Kind
	msg, err := h.compose(kind, o)
	if err != nil {
		return err
	}
	token, err := h.Orders.ClaimMail(ctx, o.SessionID, kind, h.Lease)
	switch {
	case errors.Is(err, store.ErrAlreadySent):
		t.log.Info("mail already sent; duplicate job acknowledged")
		return nil
	case errors.Is(err, store.ErrMailInFlight):
		return err // redelivered later; by then the other attempt has finished or died
	case err != nil:
		return err
	}
	t.token = token
	// Gate 2, on the email exactly as it would leave.
	rep := h.Filter.Mail(msg.Subject, msg.Text, msg.HTML, o.Query)
	h.auditFilter(ctx, t, rep)
	if rep.Action != sosfilter.Pass {
		return h.quarantine(ctx, t, msg, rep)
	}
	to, err := h.recipient(ctx, o)
	if err != nil {
		h.release(ctx, t)
		return err
	}
	if to == "" {
		// The page still serves the verdict; the operator already has the
		// drop alert for a dropped order.
		t.log.Warn("no email address on the session; nothing sent")
		h.auditMail(ctx, t, audit.StatusEmailFailed, audit.Detail("no customer email on the session"), "")
		h.close(ctx, t, "none: no address")
		return nil
	}
	id, err := h.Transport.Send(ctx, mail.Outgoing{From: h.Brand.From(), To: to, ReplyTo: h.Brand.Support, Subject: msg.Subject, Text: msg.Text, HTML: msg.HTML})
	switch afterSend(err) {
	case retry:
		h.release(ctx, t)
		t.log.Warn("send failed; it will be retried", "error", err.Error())
		return err
	case blocked:
		h.release(ctx, t)
		h.Alerts.Raise(ctx, alert.Alert{Severity: alert.Critical, Kind: alert.EmailBlocked, Session: o.SessionID,
			Detail: "SES will not send from this account: " + err.Error() + "; the " + string(kind) + " email waits on the mail queue, then its dead-letter queue (redrive it once SES sends again)"})
		return err
	case refused:
		h.close(ctx, t, "refused")
		h.auditMail(ctx, t, audit.StatusEmailFailed, audit.Detail("send refused: "+err.Error()), to)
		h.Alerts.Raise(ctx, alert.Alert{Severity: alert.Error, Kind: alert.EmailFailed, Session: o.SessionID, Detail: "the " + string(kind) + " email was refused and will not be retried: " + err.Error()})
		return nil
	}
	h.close(ctx, t, id)
	h.auditMail(ctx, t, audit.StatusEmailSent, nil, to)
	t.log.Info("mail sent")
	return nil
}

// close records the delivery as done with result (the message id, or why
// nothing left). A failure is logged: the audit record and the alert still
// say what happened.
func (h *Handler) close(ctx context.Context, t *task, result string) {
	if err := h.Orders.MailSent(ctx, t.order.SessionID, t.job.Kind, t.token, result); err != nil {
		t.log.Error("recording the delivery failed", "result", result, "error", err.Error())
	}
}

// release gives up the task's claim, so that the retry may send.
func (h *Handler) release(ctx context.Context, t *task) {
	if err := h.Orders.ReleaseMail(ctx, t.order.SessionID, t.job.Kind, t.token); err != nil {
		t.log.Error("releasing the delivery failed", "error", err.Error())
	}
}
