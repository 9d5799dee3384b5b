package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
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
	ClaimMail(ctx context.Context, sessionID, kind string, lease time.Duration) (string, error)
	MailSent(ctx context.Context, sessionID, kind, token, messageID string) error
	ReleaseMail(ctx context.Context, sessionID, kind, token string) error
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

// Auditor appends audit records.
type Auditor interface {
	Write(ctx context.Context, r audit.Record, id string) (bool, error)
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
	Audit      Auditor
	Alerts     Alerter
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

// Handle processes a batch and reports the records that failed, so that
// SQS redelivers only those (and, after the queue's maxReceiveCount, moves
// them to the dead-letter queue).
func (h *Handler) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	return sqsbatch.Process(ctx, h.Log, ev, h.process), nil
}

func (h *Handler) process(ctx context.Context, rec events.SQSMessage) error {
	job, err := queue.Parse(rec.Body)
	if err == nil && job.Kind == "" {
		err = errors.New("a generation job on the mail queue")
	}
	if err != nil {
		h.Alerts.Raise(ctx, alert.Alert{Severity: alert.Error, Kind: "GARBAGE_JOB", Session: rec.MessageId,
			Detail: "unreadable message on the mail queue (" + rec.MessageId + "); it will reach the dead-letter queue"})
		return fmt.Errorf("message %s: %w", rec.MessageId, err)
	}
	started := h.Now()
	log := h.Log.With(obs.Session(job.SessionID), "kind", job.Kind)
	order, found, err := h.Orders.Get(ctx, job.SessionID)
	if err != nil {
		return err
	}
	if !found {
		log.Warn("mail job for an unknown order acknowledged")
		return nil
	}
	if order.Status == oracle.StatusQuarantined && (job.Kind == queue.MailVerdict || job.Kind == queue.MailDivergence) {
		log.Info("verdict quarantined; its follow-ups are queued again")
		return h.quarantineFollowUps(ctx, order.SessionID)
	}
	// The email is built from the stored record, never from the message.
	msg, err := h.compose(job.Kind, order)
	if errors.Is(err, errNotReady) {
		log.Warn("mail job for an order with nothing to send acknowledged", "status", string(order.Status))
		return nil
	}
	if err != nil {
		return err
	}
	token, err := h.Orders.ClaimMail(ctx, order.SessionID, job.Kind, h.Lease)
	switch {
	case errors.Is(err, store.ErrAlreadySent):
		log.Info("mail already sent; duplicate job acknowledged")
		return nil
	case errors.Is(err, store.ErrMailInFlight):
		return err // redelivered later; by then the other attempt has finished or died
	case err != nil:
		return err
	}
	// Gate 2, on the email exactly as it would leave.
	rep := h.Filter.Mail(msg.Subject, msg.Text, msg.HTML, order.Query)
	h.auditFilter(ctx, order, job.Kind, rep, started)
	if rep.Action != sosfilter.Pass {
		return h.quarantine(ctx, log, order, job.Kind, token, msg, rep)
	}
	to, err := h.recipient(ctx, order)
	if err != nil {
		_ = h.Orders.ReleaseMail(ctx, order.SessionID, job.Kind, token)
		return err
	}
	if to == "" {
		// The page still serves the verdict; the operator already has the
		// drop alert for a dropped order.
		log.Warn("no email address on the session; nothing sent")
		h.audit(ctx, order, job.Kind, audit.StatusEmailFailed, audit.Detail("no customer email on the session"), started, "")
		if err := h.Orders.MailSent(ctx, order.SessionID, job.Kind, token, "none: no address"); err != nil {
			log.Error("recording the unsent mail failed", "error", err.Error())
		}
		return nil
	}
	id, err := h.Transport.Send(ctx, mail.Outgoing{From: h.Brand.From(), To: to, ReplyTo: h.Brand.Support, Subject: msg.Subject, Text: msg.Text, HTML: msg.HTML})
	if err != nil {
		if mail.Retryable(err) {
			_ = h.Orders.ReleaseMail(ctx, order.SessionID, job.Kind, token)
			log.Warn("send failed; it will be retried", "error", err.Error())
			return err
		}
		if mail.KindOf(err) == mail.Blocked {
			// Nothing leaves this account until the operator acts; then
			// every held email should. The job is retried and then kept on
			// the dead-letter queue, from which the operator redrives it.
			_ = h.Orders.ReleaseMail(ctx, order.SessionID, job.Kind, token)
			h.Alerts.Raise(ctx, alert.Alert{Severity: alert.Critical, Kind: "EMAIL_BLOCKED", Session: order.SessionID,
				Detail: "SES will not send from this account: " + err.Error() + "; the " + job.Kind + " email waits on the mail queue, then its dead-letter queue (redrive it once SES sends again)"})
			return err
		}
		// A refusal will not change on a retry: the delivery is closed as
		// refused and the operator decides.
		if rerr := h.Orders.MailSent(ctx, order.SessionID, job.Kind, token, "refused"); rerr != nil {
			log.Error("recording the refusal failed", "error", rerr.Error())
		}
		h.audit(ctx, order, job.Kind, audit.StatusEmailFailed, audit.Detail("send refused: "+err.Error()), started, to)
		h.Alerts.Raise(ctx, alert.Alert{Severity: alert.Error, Kind: "EMAIL_FAILED", Session: order.SessionID, Detail: "the " + job.Kind + " email was refused and will not be retried: " + err.Error()})
		return nil
	}
	if err := h.Orders.MailSent(ctx, order.SessionID, job.Kind, token, id); err != nil {
		log.Error("recording the send failed", "error", err.Error())
	}
	h.audit(ctx, order, job.Kind, audit.StatusEmailSent, nil, started, to)
	log.Info("mail sent")
	return nil
}

var errNotReady = errors.New("nothing to send for this order yet")

// compose renders the mail of kind from the stored order.
func (h *Handler) compose(kind string, o oracle.Order) (letter.Message, error) {
	switch kind {
	case queue.MailVerdict:
		if o.Status != oracle.StatusReady || o.Verdict == "" {
			return letter.Message{}, errNotReady
		}
		a, err := oracle.ParseAnalysis(o.Tier, []byte(o.Verdict))
		if err != nil {
			return letter.Message{}, fmt.Errorf("stored verdict of %s: %w", oracle.ShortID(o.SessionID), err)
		}
		return letter.Verdict(h.Brand, o.Tier, o.Query, a, h.link(o))
	case queue.MailSilentDrop:
		if o.Status != oracle.StatusDropped {
			return letter.Message{}, errNotReady
		}
		return letter.SilentDropNotice(h.Brand)
	// Each notice is owed only while the order is in the state it tells of.
	case queue.MailFailed:
		return h.notice(o.Status == oracle.StatusFailed, letter.Failed, o)
	case queue.MailReview:
		return h.notice(o.Status == oracle.StatusHeld || o.Status == oracle.StatusQuarantined, letter.Review, o)
	case queue.MailDivergence:
		return h.notice(o.Status == oracle.StatusReady && oracle.NotifyDivergence(o.Divergence), letter.Divergence, o)
	}
	return letter.Message{}, fmt.Errorf("unknown mail kind %q", kind)
}

func (h *Handler) notice(owed bool, name string, o oracle.Order) (letter.Message, error) {
	if !owed {
		return letter.Message{}, errNotReady
	}
	return letter.Notice(h.Brand, name, h.link(o))
}

// link is the order's result page.
func (h *Handler) link(o oracle.Order) string {
	return h.BaseURL + "/oracle/result?session_id=" + url.QueryEscape(o.SessionID)
}

// recipient reads the address from Stripe at send time:
// customer_details.email, then customer_email.
func (h *Handler) recipient(ctx context.Context, o oracle.Order) (string, error) {
	src := h.Live
	if !o.Livemode {
		src = h.Test
	}
	if src == nil {
		return "", fmt.Errorf("no Stripe key for %s sessions", map[bool]string{true: "live", false: "test"}[o.Livemode])
	}
	s, err := src.RetrieveSession(ctx, o.SessionID)
	if err != nil {
		return "", fmt.Errorf("recipient: %w", err)
	}
	return s.Email, nil
}

// audit writes the record of one delivery of kind; to is the address it
// went to, kept as a keyed hash ("" keeps the order's own hash).
func (h *Handler) audit(ctx context.Context, o oracle.Order, kind string, status audit.Status, detail *string, started time.Time, to string) {
	r := h.record(o, "mail_"+kind, status, detail, started)
	if to != "" {
		r.Email = h.Hasher.Email(to)
	}
	h.write(ctx, r, o.SessionID+".mail-"+kind)
}

// record is the audit record of an event of this function on o.
func (h *Handler) record(o oracle.Order, event string, status audit.Status, detail *string, started time.Time) audit.Record {
	r := audit.OfOrder(h.Hasher, o, audit.SourceEmailService, event, status, started, h.Now())
	r.ErrorDetail = detail
	return r
}

func (h *Handler) write(ctx context.Context, r audit.Record, id string) {
	if _, err := h.Audit.Write(ctx, r, id); err != nil {
		h.Alerts.Raise(ctx, alert.Alert{Severity: alert.Error, Kind: "AUDIT_WRITE_FAILED", Session: r.SessionID, Detail: r.Event + " audit record not written"})
		h.Log.Error("audit write failed", obs.Session(r.SessionID), "event", r.Event, "error", err.Error())
	}
}

// quarantine holds an email the filter stopped at gate 2: it is kept whole
// for review and never sent, and the order (if its verdict was READY) is
// no longer served. If the review record cannot be written, nothing is
// sent and the job is retried (fail closed, GAP-L).
func (h *Handler) quarantine(ctx context.Context, log *slog.Logger, o oracle.Order, kind, token string, msg letter.Message, rep sosfilter.Report) error {
	terms := rep.Terms()
	raw, err := json.Marshal(quarantine.Mail{Subject: msg.Subject, Text: msg.Text, HTML: msg.HTML})
	if err != nil {
		return fmt.Errorf("encode the stopped email: %w", err)
	}
	key, err := h.Quarantine.Put(ctx, quarantine.Record{
		SessionID: o.SessionID, Tier: string(o.Tier), Gate: quarantine.GateMailer, QuarantinedAt: h.Now().UTC(),
		Terms: terms, Reason: string(rep.Reason), FilterVersion: rep.Version, PromptVersion: o.PromptVersion, Model: o.Model,
		Livemode: o.Livemode, AmountTotal: o.AmountTotal, Currency: o.Currency, MailKind: kind, Raw: raw,
	})
	if err != nil {
		_ = h.Orders.ReleaseMail(ctx, o.SessionID, kind, token)
		h.Alerts.Raise(ctx, alert.Alert{Severity: alert.Critical, Kind: "QUARANTINE_RECORD_FAILED", Session: o.SessionID,
			Detail: "the content filter stopped the " + kind + " email and its review record could not be written; nothing was sent and the job will be retried"})
		return fmt.Errorf("quarantine: %w", err)
	}
	// The order stops being served before the delivery is closed: if this
	// write fails, the claim is released and the retry quarantines again,
	// instead of finding the mail done and the verdict still on the page.
	held, err := h.Orders.QuarantineReady(ctx, o.SessionID, store.Quarantine{Gate: quarantine.GateMailer, Terms: terms, Record: key, FilterVersion: rep.Version})
	if err != nil {
		_ = h.Orders.ReleaseMail(ctx, o.SessionID, kind, token)
		return err
	}
	if err := h.Orders.MailSent(ctx, o.SessionID, kind, token, "quarantined"); err != nil {
		log.Error("recording the stopped mail failed", "error", err.Error())
	}
	log.Error("email quarantined by the content filter", "terms", strings.Join(terms, ","), "reason", string(rep.Reason), "filter_version", rep.Version)
	h.Alerts.Raise(ctx, alert.Alert{Severity: alert.Critical, Kind: "EMAIL_QUARANTINED", Session: o.SessionID,
		Detail: fmt.Sprintf("the content filter stopped the %s email at gate 2 (%s: %s); nothing was sent. Review the record the order names (quarantine_record), then deliver a cleaned verdict or refund",
			kind, rep.Reason, strings.Join(terms, ", "))})
	if !held {
		return nil // not a served verdict: the alert is the operator's whole task
	}
	return h.quarantineFollowUps(ctx, o.SessionID)
}

// quarantineFollowUps queues what a quarantined order is owed: the
// customer's review notice and the operator's reminder chain. A job that
// finds its verdict already quarantined runs it again, since the attempt
// that quarantined it may have died first; the notice is sent once and
// each reminder step is taken once, so a repeat changes nothing.
func (h *Handler) quarantineFollowUps(ctx context.Context, sessionID string) error {
	if err := h.Mail.Send(ctx, queue.Job{SessionID: sessionID, Kind: queue.MailReview}); err != nil {
		return fmt.Errorf("enqueue review notice: %w", err)
	}
	at := h.Now().Add(h.QuarantineReminder)
	if err := h.Reminders.Send(ctx, queue.Job{SessionID: sessionID, Reason: queue.ReasonQuarantineReview, NotBefore: &at}); err != nil {
		return fmt.Errorf("schedule the quarantine reminder: %w", err)
	}
	return nil
}

// auditFilter writes the record of gate 2's decision on one email: the
// entries' ids, never the text.
func (h *Handler) auditFilter(ctx context.Context, o oracle.Order, kind string, rep sosfilter.Report, started time.Time) {
	status, detail := audit.StatusOK, (*string)(nil)
	if rep.Action != sosfilter.Pass {
		status, detail = audit.StatusError, audit.Detail("quarantined by the content filter: "+string(rep.Reason))
	}
	r := h.record(o, "sos_filter", status, detail, started)
	r.Filter = &audit.Filter{Gate: quarantine.GateMailer, Action: rep.Action.String(), Reason: string(rep.Reason), TermIDs: rep.Terms(), Exempted: rep.Exempted(), Version: rep.Version, MailKind: kind}
	if r.Filter.TermIDs == nil {
		r.Filter.TermIDs = []string{}
	}
	h.write(ctx, r, o.SessionID+".filter-mail-"+kind)
}
