package main

import (
	"context"
	"errors"
	"time"

	"42sisters.ai/oracle/functions/mailer/letter"
	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/inbox"
	"42sisters.ai/oracle/shared/mail"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/sosfilter"
)

// reply is what an autoresponse's task knows of the message it answers.
type reply struct {
	key    string    // the message's key (inbox.Key)
	domain string    // the sender's domain, which records may show
	via    string    // the source that received it
	stored time.Time // when it was stored: its records' partition
	sender string    // the sender's keyed hash
}

// autorespond sends the support inbox's acknowledgement of the stored
// message the job names: the sender is read from the message at send time
// and never travels in the job. It takes the delivery path every email
// does (deliver); each failure alerts (G5).
func (h *Handler) autorespond(ctx context.Context, t *task) error {
	raw, stored, err := h.Inbox.Get(ctx, t.job.Inbox)
	if errors.Is(err, inbox.ErrGone) {
		t.log.WarnContext(ctx, "the message to acknowledge is gone (expired); job acknowledged")
		return nil
	}
	if err != nil {
		return err
	}
	m, err := inbox.Parse(raw)
	if err != nil || m.From == "" {
		// The inbox function queues no autoresponse to such a message.
		t.log.WarnContext(ctx, "the message to acknowledge names no sender; job acknowledged")
		return nil
	}
	t.reply = &reply{key: inbox.Key(h.Hasher, m, raw), domain: inbox.Domain(m.From), via: inbox.Via(t.job.Inbox), stored: stored,
		sender: h.Hasher.Email(m.From)}
	t.log = t.log.With("message", oracle.Clip(t.reply.key, 12))
	t.delivery = inboxReply{ledger: h.Ledger, key: t.reply.key, ttl: h.ReplyRetention}
	return h.deliver(ctx, t, h.replyEmail(t, m.From, m.Subject))
}

// replyEmail is the autoresponse to the message from (whose subject it
// echoes) on the delivery path: composed before its claim, every failed
// attempt alerts (G5), and one given up leaves the message to be answered
// by hand.
func (h *Handler) replyEmail(t *task, from, subject string) *email {
	return &email{
		letterFirst: true,
		compose:     func(context.Context) (letter.Message, error) { return letter.Autoresponse(h.Brand, subject) },
		stopped: func(ctx context.Context, t *task, _ letter.Message, _ sosfilter.Report) (letter.Message, bool, error) {
			// Only the echoed subject can trip gate 2: the text is the
			// canonical one, which a test passes through the filter.
			t.log.WarnContext(ctx, "the message's subject tripped the content filter; acknowledged under a neutral subject")
			msg, err := letter.Autoresponse(h.Brand, "")
			return msg, err == nil, err
		},
		recipient: func(ctx context.Context, _ *task) (addressee, error) {
			suppressed, err := h.suppressed(ctx, from)
			return addressee{to: from, suppressed: suppressed}, err
		},
		tags:  map[string]string{mail.TagKind: string(oracle.MailAutoresponse)},
		audit: replyAudit{h},
		logs: emailLogs{sent: "autoresponse sent", suppressed: "the sender complained about an earlier email; no autoresponse",
			givenUp: "autoresponse given up", closeFailed: "closing the undeliverable autoresponse failed"},
		alerts: emailAlerts{about: alert.Alert{Subject: t.reply.key}, name: "the autoresponse to a message from " + t.reply.domain,
			eachFailure: alert.AutoresponseFailed, told: "the message itself is in the inbox: answer it by hand"},
	}
}

// replyAudit writes an autoresponse's records, each alone (G3); gate 2's
// decision on it is not recorded, since only the echoed subject can trip
// it, and a stopped one goes under a neutral subject.
type replyAudit struct{ h *Handler }

func (replyAudit) filtered(context.Context, *task, sosfilter.Report) {}

func (a replyAudit) tried(ctx context.Context, t *task, err error, _ string, _ outcome) {
	a.h.auditReplyAttempt(ctx, t, err)
}

func (a replyAudit) ended(ctx context.Context, t *task, status audit.Status, detail *string, _, outcome string) {
	a.h.auditReply(ctx, t, status, detail, outcome)
}

func (a replyAudit) sent(ctx context.Context, t *task, _, _ string) {
	a.h.auditReply(ctx, t, audit.StatusEmailSent, nil, "sent")
}

// replyRecord is the audit record of an event of the task's autoresponse.
func (h *Handler) replyRecord(t *task, event audit.Event, status audit.Status, detail *string, outcome string) audit.Record {
	now := h.Now()
	return audit.Record{Timestamp: now.UTC(), Email: t.reply.sender, LatencyMS: max(now.Sub(t.started).Milliseconds(), 0),
		Status: status, Source: audit.SourceInbox, ErrorDetail: detail, SessionCreated: t.reply.stored.UTC(), Event: event,
		Inbox: &audit.InboxMessage{MessageKey: t.reply.key, Domain: t.reply.domain, Via: t.reply.via, Outcome: outcome}}
}

// auditReply writes the record of the autoresponse's delivery (G3).
func (h *Handler) auditReply(ctx context.Context, t *task, status audit.Status, detail *string, outcome string) {
	h.Metrics.Emit(mailFigures(status)...)
	h.Audit.Record(ctx, h.replyRecord(t, audit.EventAutoresponse, status, detail, outcome),
		audit.InboxRecordID(t.reply.key, audit.NameMail, oracle.MailAutoresponse))
}

// auditReplyAttempt writes the record of one attempt of the autoresponse.
func (h *Handler) auditReplyAttempt(ctx context.Context, t *task, err error) {
	status, detail, outcome := audit.StatusEmailSent, (*string)(nil), "sent"
	if err != nil {
		status, detail, outcome = audit.StatusEmailFailed, audit.Detail(err.Error()), "failed"
	}
	r := h.replyRecord(t, audit.EventMailAttempt, status, detail, outcome)
	r.Mail = &audit.MailAttempt{Kind: oracle.MailAutoresponse, Attempt: t.job.Attempt, MessageHash: t.hash, Transport: h.transportOf(err)}
	if err != nil {
		r.Mail.Class, r.Mail.Code = failureClass(err), failureCode(err)
	}
	h.Audit.Record(ctx, r, audit.InboxRecordID(t.reply.key, audit.NameMailAttempt, oracle.MailAutoresponse, t.job.Attempt))
}
