package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"42sisters.ai/oracle/functions/mailer/letter"
	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/chat"
	"42sisters.ai/oracle/shared/crashpoint"
	"42sisters.ai/oracle/shared/mail"
	"42sisters.ai/oracle/shared/mailaddr"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/quarantine"
	"42sisters.ai/oracle/shared/sosfilter"
	"42sisters.ai/oracle/shared/store"
	"42sisters.ai/oracle/shared/stripex"
)

// Accounts are Sisters Chat's accounts (chat.Store): the address each
// holds, and the sign-in links minted as their emails leave.
type Accounts interface {
	Address(ctx context.Context, account string) (string, error)
	IssueSignIn(ctx context.Context, account string) (token string, expires time.Time, err error)
}

// DefaultChatMailRetention is how long a chat email's delivery record is
// kept: past its last retry and past the mail queue's and its dead-letter
// queue's retention (14 days), so no redelivered or redriven job finds it
// gone and sends the email again.
const DefaultChatMailRetention = 30 * 24 * time.Hour

// signInDraws bounds how often a sign-in email is drawn again with a new
// link when gate 2 stops it. The link's token is random, and about one
// draw in four thousand spells something the filter reads as a term; a
// stop that outlasts the draws is the template's.
const signInDraws = 3

// sendChat sends the email the job owes a chat account: the address is
// read from the account at send time and never travels in the job, and a
// sign-in link is minted for each attempt. The delivery is claimed,
// retried on the email schedule, parked while the account cannot send,
// and given up after the last attempt, as an order's email is.
func (h *Handler) sendChat(ctx context.Context, t *task) error {
	d := &chatMail{ledger: h.Ledger, mail: store.ChatMail{Kind: t.job.Kind, Account: t.job.Account, Nonce: t.job.Nonce}, ttl: h.ChatMailRetention}
	t.delivery, t.chat = d, d
	if done, err := h.claim(ctx, t); done {
		return err
	}
	to, err := h.Chat.Address(ctx, t.job.Account)
	if errors.Is(err, chat.ErrNoAccount) {
		t.log.WarnContext(ctx, "no such chat account; nothing sent")
		h.auditChat(ctx, t, audit.StatusEmailFailed, audit.Detail("no such chat account"))
		h.close(ctx, t, "none: no account", "")
		return nil
	}
	if err != nil {
		h.release(ctx, t)
		return err
	}
	if to, err = h.accountAddress(ctx, t, to); err != nil {
		return nil
	}
	suppressed, err := h.suppressed(ctx, to)
	if err != nil {
		h.release(ctx, t)
		return err
	}
	if suppressed {
		t.log.WarnContext(ctx, "the address complained about an earlier email; nothing sent")
		h.auditChat(ctx, t, audit.StatusEmailFailed, audit.Detail("the address is on the suppression list (a complaint)"))
		h.close(ctx, t, "none: suppressed", "")
		return nil
	}
	msg, rep, err := h.chatLetter(ctx, t)
	if err != nil {
		h.release(ctx, t)
		return err
	}
	h.auditChatFilter(ctx, t, rep)
	if rep.Action != sosfilter.Pass {
		return h.stopChat(ctx, t, rep)
	}
	t.hash = h.Hasher.Hash(msg.Subject + "\x00" + msg.Text + "\x00" + msg.HTML)
	id, err := h.Transport.Send(ctx, mail.Outgoing{From: h.Brand.From(), To: to, ReplyTo: h.Brand.Support, Subject: msg.Subject, Text: msg.Text, HTML: msg.HTML,
		Tags: map[string]string{mail.TagKind: string(t.job.Kind)}})
	// As for an order's email: recorded before anything else.
	crashpoint.Reach(ctx, crashpoint.MailerSent)
	if err == nil {
		h.close(ctx, t, id, "")
	}
	h.auditChatAttempt(ctx, t, err)
	switch oc, wait := afterSend(err, t.job.Attempt, h.Schedule); oc {
	case retry:
		return h.retryLater(ctx, t, err, wait)
	case blocked:
		return h.park(ctx, t, err)
	case deadLetter, refused:
		return h.giveUpChat(ctx, t, err, oc)
	}
	h.auditChat(ctx, t, audit.StatusEmailSent, nil)
	t.log.InfoContext(ctx, "mail sent")
	return nil
}

// errNotItsAddress: the account holds an address that does not name it.
var errNotItsAddress = errors.New("the account's address is not its own")

// accountAddress is the canonical form of the address an account holds,
// the only one its email goes to, once that form names the account. An
// account written before addresses had one canonical form can hold
// another's (a look-alike overwrote it): its email is not sent, the
// delivery is closed, and the operator hears of it (errNotItsAddress).
func (h *Handler) accountAddress(ctx context.Context, t *task, stored string) (string, error) {
	to, err := mailaddr.Canonical(stored)
	if err == nil && h.Hasher.Email(to) == t.job.Account {
		return to, nil
	}
	t.log.ErrorContext(ctx, "the chat account holds an address that is not its own; nothing sent")
	h.auditChat(ctx, t, audit.StatusEmailFailed, audit.Detail("the account's address is not its own canonical address"))
	h.close(ctx, t, "none: not the account's address", "")
	h.Alerts.Raise(ctx, alert.Alert{Severity: alert.Error, Kind: alert.EmailFailed, Subject: chatSubject(t),
		Detail: fmt.Sprintf("the %s email %s was not sent: the chat account %s holds an address that is not its own canonical form (written before addresses were canonical, possibly by a look-alike's sign-in request); erase the account (make ops ACTION=chat-erase) and ask its owner to sign in again",
			t.job.Kind, t.job.Nonce, t.job.Account)})
	return "", errNotItsAddress
}

// chatLetter renders the task's email as it will leave and passes it
// through gate 2. A sign-in email carries a link minted now, valid for
// chat.SignInTTL; one gate 2 stops is drawn again with a new link (see
// signInDraws). A link never sent is never known, and expires.
func (h *Handler) chatLetter(ctx context.Context, t *task) (letter.Message, sosfilter.Report, error) {
	if t.job.Kind == oracle.MailChatPaymentFailed {
		msg, err := letter.ChatPaymentFailed(h.Brand, h.BaseURL+"/chat")
		if err != nil {
			return letter.Message{}, sosfilter.Report{}, err
		}
		return msg, h.Filter.Mail(msg.Subject, msg.Text, msg.HTML, sosfilter.Own{}), nil
	}
	var (
		msg letter.Message
		rep sosfilter.Report
	)
	for range signInDraws {
		token, _, err := h.Chat.IssueSignIn(ctx, t.job.Account)
		if err != nil {
			return letter.Message{}, sosfilter.Report{}, fmt.Errorf("mint the sign-in link: %w", err)
		}
		msg, err = letter.ChatSignIn(h.Brand, h.BaseURL+"/chat/signin?token="+url.QueryEscape(token), chat.SignInTTL)
		if err != nil {
			return letter.Message{}, sosfilter.Report{}, err
		}
		if rep = h.Filter.Mail(msg.Subject, msg.Text, msg.HTML, sosfilter.Own{}); rep.Action == sosfilter.Pass {
			break
		}
	}
	return msg, rep, nil
}

// stopChat closes a chat email gate 2 stopped: nothing is sent, and the
// operator hears of it. Its text is the template's own (the link aside,
// which chatLetter drew again), so no review record is kept: a stopped
// sign-in email would keep a working link there.
func (h *Handler) stopChat(ctx context.Context, t *task, rep sosfilter.Report) error {
	terms := strings.Join(rep.Terms(), ", ")
	h.auditChat(ctx, t, audit.StatusEmailFailed, audit.Detail("quarantined by the content filter: "+string(rep.Reason)))
	h.close(ctx, t, "quarantined", "")
	t.log.ErrorContext(ctx, "email stopped by the content filter", "terms", terms, "reason", string(rep.Reason), "filter_version", rep.Version)
	h.Alerts.Raise(ctx, alert.Alert{Severity: alert.Critical, Kind: alert.EmailQuarantined, Subject: chatSubject(t),
		Detail: fmt.Sprintf("the content filter stopped the %s email %s at gate 2 (%s: %s); nothing was sent. Its template trips the filter: fix it (functions/mailer/letter)",
			t.job.Kind, t.job.Nonce, rep.Reason, terms)})
	return nil
}

// giveUpChat closes a chat email as undeliverable after the schedule's
// last attempt failed or the message was refused for good, and alerts once
// (a job that comes again finds its delivery closed). The alert names the
// kind and the nonce, never the address.
func (h *Handler) giveUpChat(ctx context.Context, t *task, cause error, oc outcome) error {
	tries, err := h.failed(ctx, t, h.try(t, cause, h.Now()), time.Time{})
	if err != nil {
		t.log.ErrorContext(ctx, "closing the undeliverable email failed", "error", err.Error())
		tries = []store.Try{h.try(t, cause, h.Now())}
	}
	h.auditChat(ctx, t, audit.StatusEmailFailed, audit.Detail(oc.String()+": "+cause.Error()))
	t.log.ErrorContext(ctx, "email given up", "outcome", oc.String(), "class", failureClass(cause), "attempts", len(tries))
	after := "the person was not told that their renewal failed; Stripe goes on retrying the card, and the chat page offers the portal: write to them if it matters (the account " + t.job.Account + " holds the address)"
	if t.job.Kind == oracle.MailChatSignIn {
		after = "the person got no sign-in link; they can ask for another on the chat page"
	}
	a := alert.Alert{Severity: alert.Error, Kind: alert.EmailFailed, Subject: chatSubject(t),
		Detail: fmt.Sprintf("the %s email %s was refused for good and will not be retried (%s); %s", t.job.Kind, t.job.Nonce, cause.Error(), after)}
	if oc == deadLetter {
		a.Severity, a.Kind = alert.Critical, alert.EmailDeadLetter
		a.Detail = fmt.Sprintf("the %s email %s failed on all %d attempts (last: %s); %s", t.job.Kind, t.job.Nonce, len(h.Schedule), cause.Error(), after)
	}
	h.Alerts.Raise(ctx, a)
	return nil
}

// chatSubject names a chat email in alerts (and their dedupe windows).
func chatSubject(t *task) string { return string(t.job.Kind) + "/" + t.job.Nonce }

// chatRecord is the audit record of an event of the task's chat email:
// the account (a keyed hash) in the email field, no session, dated by its
// delivery's first claim so that every attempt's records share a partition.
func (h *Handler) chatRecord(t *task, event audit.Event, status audit.Status, detail *string) audit.Record {
	now := h.Now()
	created := t.chat.created
	if created.IsZero() {
		created = t.started
	}
	return audit.Record{Timestamp: now.UTC(), Email: t.job.Account, LatencyMS: max(now.Sub(t.started).Milliseconds(), 0), Status: status,
		Source: audit.SourceEmailService, ErrorDetail: detail, SessionCreated: created.UTC(), Event: event,
		// The smoke test's chat account (SES's mailbox simulator): its
		// sign-in emails are counted in no figure.
		Smoke: t.job.Account == h.Hasher.Email(stripex.SmokeEmail)}
}

// chatRecordID is the id of the task's record of name.
func chatRecordID(t *task, name audit.RecordName, parts ...any) string {
	return audit.ChatMailRecordID(t.job.Kind, t.job.Account, t.job.Nonce, name, parts...)
}

// auditChat writes the record of the chat email's delivery.
func (h *Handler) auditChat(ctx context.Context, t *task, status audit.Status, detail *string) {
	h.Metrics.Emit(mailFigures(status)...)
	h.Audit.Record(ctx, h.chatRecord(t, audit.MailEvent(t.job.Kind), status, detail), chatRecordID(t, audit.NameMail))
}

// auditChatAttempt writes the record of one attempt of the chat email. A
// sign-in email's hash differs from one attempt to the next: each carries
// its own link.
func (h *Handler) auditChatAttempt(ctx context.Context, t *task, err error) {
	status, detail := audit.StatusEmailSent, (*string)(nil)
	if err != nil {
		status, detail = audit.StatusEmailFailed, audit.Detail(err.Error())
	}
	r := h.chatRecord(t, audit.EventMailAttempt, status, detail)
	r.Mail = &audit.MailAttempt{Kind: t.job.Kind, Attempt: t.job.Attempt, MessageHash: t.hash, Transport: h.transportOf(err)}
	if err != nil {
		r.Mail.Class, r.Mail.Code = failureClass(err), failureCode(err)
	}
	h.Audit.Record(ctx, r, chatRecordID(t, audit.NameMailAttempt, t.job.Attempt))
}

// auditChatFilter writes the record of gate 2's decision on the chat email.
func (h *Handler) auditChatFilter(ctx context.Context, t *task, rep sosfilter.Report) {
	status, detail := audit.StatusOK, (*string)(nil)
	if rep.Action != sosfilter.Pass {
		status, detail = audit.StatusError, audit.Detail("quarantined by the content filter: "+string(rep.Reason))
	}
	r := h.chatRecord(t, audit.EventFilter, status, detail)
	r.Filter = &audit.Filter{Gate: quarantine.GateMailer, Action: rep.Action.String(), Reason: string(rep.Reason),
		TermIDs: rep.Terms(), Version: rep.Version, MailKind: t.job.Kind}
	if r.Filter.TermIDs == nil {
		r.Filter.TermIDs = []string{}
	}
	h.Audit.Record(ctx, r, chatRecordID(t, audit.NameFilterMail))
}
