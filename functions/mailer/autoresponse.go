package main

import (
	"context"
	"errors"
	"strconv"
	"time"

	"42sisters.ai/oracle/functions/mailer/letter"
	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/crashpoint"
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
// and never travels in the job. The delivery is claimed, retried on the
// email schedule, parked while the account cannot send, and given up after
// the last attempt, as an order's email is; each failure alerts (G5).
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
	msg, err := letter.Autoresponse(h.Brand, m.Subject)
	if err != nil {
		return err
	}
	if h.Filter.Mail(msg.Subject, msg.Text, msg.HTML, sosfilter.Own{}).Action != sosfilter.Pass {
		// Only the echoed subject can trip gate 2: the text is the
		// canonical one, which a test passes through the filter.
		t.log.WarnContext(ctx, "the message's subject tripped the content filter; acknowledged under a neutral subject")
		if msg, err = letter.Autoresponse(h.Brand, ""); err != nil {
			return err
		}
	}
	t.delivery = inboxReply{ledger: h.Ledger, key: t.reply.key, ttl: h.ReplyRetention}
	if done, err := h.claim(ctx, t); done {
		return err
	}
	suppressed, err := h.suppressed(ctx, m.From)
	if err != nil {
		h.release(ctx, t)
		return err
	}
	if suppressed {
		t.log.WarnContext(ctx, "the sender complained about an earlier email; no autoresponse")
		h.auditReply(ctx, t, audit.StatusEmailFailed, audit.Detail("the address is on the suppression list (a complaint)"), "suppressed")
		h.close(ctx, t, "none: suppressed", "")
		return nil
	}
	t.hash = h.Hasher.Hash(msg.Subject + "\x00" + msg.Text + "\x00" + msg.HTML)
	id, err := h.Transport.Send(ctx, mail.Outgoing{From: h.Brand.From(), To: m.From, ReplyTo: h.Brand.Support, Subject: msg.Subject,
		Text: msg.Text, HTML: msg.HTML, Tags: map[string]string{mail.TagKind: string(oracle.MailAutoresponse)}})
	// As for an order's email: recorded before anything else.
	crashpoint.Reach(ctx, crashpoint.MailerSent)
	if err == nil {
		h.close(ctx, t, id, "")
	}
	h.auditReplyAttempt(ctx, t, err)
	switch oc, wait := afterSend(err, t.job.Attempt, h.Schedule); oc {
	case retry:
		// One alert per attempt (the dedupe window would merge the
		// attempts of a compressed schedule).
		h.Alerts.Raise(ctx, alert.Alert{Severity: alert.Warn, Kind: alert.AutoresponseFailed, Subject: t.reply.key + "/" + strconv.Itoa(t.job.Attempt),
			Detail: "the autoresponse to a message from " + t.reply.domain + " failed (" + err.Error() + "); attempt " +
				strconv.Itoa(t.job.Attempt+2) + " follows in " + wait.String()})
		return h.retryLater(ctx, t, err, wait)
	case blocked:
		return h.park(ctx, t, err)
	case deadLetter, refused:
		if _, ferr := h.failed(ctx, t, h.try(t, err, h.Now()), time.Time{}); ferr != nil {
			t.log.ErrorContext(ctx, "closing the undeliverable autoresponse failed", "error", ferr.Error())
		}
		h.auditReply(ctx, t, audit.StatusEmailFailed, audit.Detail(oc.String()+": "+err.Error()), "undeliverable")
		h.Alerts.Raise(ctx, alert.Alert{Severity: alert.Error, Kind: alert.AutoresponseFailed, Subject: t.reply.key + "/given-up",
			Detail: "the autoresponse to a message from " + t.reply.domain + " was given up (" + oc.String() + ": " + err.Error() +
				"); the message itself is in the inbox: answer it by hand"})
		t.log.ErrorContext(ctx, "autoresponse given up", "outcome", oc.String(), "class", failureClass(err))
		return nil
	}
	h.auditReply(ctx, t, audit.StatusEmailSent, nil, "sent")
	t.log.InfoContext(ctx, "autoresponse sent")
	return nil
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
