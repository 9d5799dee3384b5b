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

// sendChat sends the email the job owes a chat account, on the delivery
// path: the address is read from the account once the delivery is claimed
// and never travels in the job, and a sign-in link is minted for each
// attempt.
func (h *Handler) sendChat(ctx context.Context, t *task) error {
	d := &chatMail{ledger: h.Ledger, mail: store.ChatMail{Kind: t.job.Kind, Account: t.job.Account, Nonce: t.job.Nonce}, ttl: h.ChatMailRetention}
	t.delivery, t.chat = d, d
	return h.deliver(ctx, t, h.chatEmail(t))
}

// chatEmail is the task's chat email on the delivery path: composed last,
// once its account's address is found and has not complained (a sign-in
// letter mints a link, drawn again when gate 2 stops it); a stopped one is
// closed unsent, and one given up tells the operator what the person
// missed. Its alerts name the kind and the nonce, never the address.
func (h *Handler) chatEmail(t *task) *email {
	draws, after := 1, "the person was not told that their renewal failed; Stripe goes on retrying the card, and the chat page offers the portal: write to them if it matters (the account "+t.job.Account+" holds the address)"
	if t.job.Kind == oracle.MailChatSignIn {
		draws, after = signInDraws, "the person got no sign-in link; they can ask for another on the chat page"
	}
	return &email{
		compose: func(ctx context.Context) (letter.Message, error) { return h.chatLetter(ctx, t) },
		draws:   draws,
		stopped: func(ctx context.Context, t *task, _ letter.Message, rep sosfilter.Report) (letter.Message, bool, error) {
			return letter.Message{}, false, h.stopChat(ctx, t, rep)
		},
		recipient: h.accountAddress,
		tags:      map[string]string{mail.TagKind: string(t.job.Kind)},
		audit:     chatAudit{h},
		logs: emailLogs{sent: "mail sent", suppressed: "the address complained about an earlier email; nothing sent",
			givenUp: "email given up", closeFailed: "closing the undeliverable email failed"},
		alerts: emailAlerts{about: alert.Alert{Subject: chatSubject(t)}, name: "the " + string(t.job.Kind) + " email " + t.job.Nonce, told: after},
	}
}

// accountAddress is the canonical form of the address the task's account
// holds, the only one its email goes to, once that form names the account.
// An account written before addresses had one canonical form can hold
// another's (a look-alike overwrote it): its email is not sent, the
// delivery is closed, and the operator hears of it.
func (h *Handler) accountAddress(ctx context.Context, t *task) (addressee, error) {
	stored, err := h.Chat.Address(ctx, t.job.Account)
	if errors.Is(err, chat.ErrNoAccount) {
		return addressee{none: &unsent{log: "no such chat account; nothing sent", detail: "no such chat account", result: "none: no account"}}, nil
	}
	if err != nil {
		return addressee{}, err
	}
	to, err := mailaddr.Canonical(stored)
	if err != nil || h.Hasher.Email(to) != t.job.Account {
		return addressee{none: &unsent{log: "the chat account holds an address that is not its own; nothing sent",
			detail: "the account's address is not its own canonical address", result: "none: not the account's address",
			alert: &alert.Alert{Severity: alert.Error, Kind: alert.EmailFailed, Subject: chatSubject(t),
				Detail: fmt.Sprintf("the %s email %s was not sent: the chat account %s holds an address that is not its own canonical form (written before addresses were canonical, possibly by a look-alike's sign-in request); erase the account (make ops ACTION=chat-erase) and ask its owner to sign in again",
					t.job.Kind, t.job.Nonce, t.job.Account)}}}, nil
	}
	suppressed, err := h.suppressed(ctx, to)
	return addressee{to: to, suppressed: suppressed}, err
}

// chatLetter renders the task's email as it will leave. A sign-in email
// carries a link minted now, valid for chat.SignInTTL; a link never sent
// is never known, and expires.
func (h *Handler) chatLetter(ctx context.Context, t *task) (letter.Message, error) {
	if t.job.Kind == oracle.MailChatPaymentFailed {
		return letter.ChatPaymentFailed(h.Brand, h.BaseURL+"/chat")
	}
	token, _, err := h.Chat.IssueSignIn(ctx, t.job.Account)
	if err != nil {
		return letter.Message{}, fmt.Errorf("mint the sign-in link: %w", err)
	}
	return letter.ChatSignIn(h.Brand, h.BaseURL+"/chat/signin?token="+url.QueryEscape(token), chat.SignInTTL)
}

// chatAudit writes a chat email's records, each alone, as they happen.
type chatAudit struct{ h *Handler }

func (a chatAudit) filtered(ctx context.Context, t *task, rep sosfilter.Report) {
	a.h.auditChatFilter(ctx, t, rep)
}

func (a chatAudit) tried(ctx context.Context, t *task, err error, _ string, _ outcome) {
	a.h.auditChatAttempt(ctx, t, err)
}

func (a chatAudit) ended(ctx context.Context, t *task, status audit.Status, detail *string, _, _ string) {
	a.h.auditChat(ctx, t, status, detail)
}

func (a chatAudit) sent(ctx context.Context, t *task, _, _ string) {
	a.h.auditChat(ctx, t, audit.StatusEmailSent, nil)
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
