package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"42sisters.ai/oracle/functions/mailer/letter"
	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/crashpoint"
	"42sisters.ai/oracle/shared/mail"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/sosfilter"
	"42sisters.ai/oracle/shared/store"
)

// Every email the mailer sends, whoever owes it (an order, a received
// message, a chat account), leaves through deliver: the only caller of the
// transport, and the only judge of what a send's result calls for. So a
// guarantee of the path (the claim before the send, the delivery closed
// before the send's records, the claim released on every error before a
// send) is kept once for every kind of email. What sets one owner's emails
// apart is an email value: data where the owners differ in words and
// settings, small funcs where they do different things.

// email is what sets an owner's email apart on the delivery path.
type email struct {
	// letterFirst: the letter is composed and passed through gate 2 before
	// the claim (when deliver takes it) and the recipient are. An order's
	// email is, while its address is read, and a stopped one is
	// quarantined whether or not there is an address; so is an
	// autoresponse, whose letter writes nothing.
	// A chat email is composed last: a sign-in letter mints a link, which
	// is not done for an account that has no address or complained.
	letterFirst bool
	// claimed: the owner's reading of the job took the delivery's claim
	// (an order's claim reads the order), so deliver takes none.
	claimed bool
	// compose renders the letter as it would leave.
	compose func(ctx context.Context) (letter.Message, error)
	// draws is how often a letter is composed when gate 2 stops it (at
	// least once): a sign-in letter's random link may spell a term, and
	// another link may not (signInDraws).
	draws int
	// stopped is what follows gate 2 stopping the letter on every draw:
	// instead is sent in its place when ok; otherwise the email ends
	// there, its claim closed or released, with err.
	stopped func(ctx context.Context, t *task, msg letter.Message, rep sosfilter.Report) (instead letter.Message, ok bool, err error)
	// recipient finds whom the email goes to, once it is claimed.
	recipient func(ctx context.Context, t *task) (addressee, error)
	// tags mark the message for the transport's events.
	tags map[string]string
	// audit writes the owner's audit records of the email.
	audit emailAudit
	logs  emailLogs
	// alerts say how the operator hears of the email's failures.
	alerts emailAlerts
	// deadLetter, when set, keeps the email given up, with every failed
	// attempt (tries), for a resend: first is false when it was kept
	// before (the operator was told then), and note says what was kept,
	// for the alert.
	deadLetter func(ctx context.Context, t *task, cause error, tries []store.Try) (first bool, note string)
}

// addressee is whom an email goes to, as its owner found them.
type addressee struct {
	to string
	// suppressed: the address complained about an earlier email.
	suppressed bool
	// none, when set, is why there is no one to send the email to.
	none *unsent
}

// unsent is why an email owed is not sent: its delivery is closed with
// result (and state), and the email's audit record says detail.
type unsent struct {
	// log is the line that says so: a warning, or an error when the
	// operator is alerted.
	log    string
	detail string
	result string
	state  oracle.MailState
	// outcome names it in an autoresponse's record (audit.InboxMessage).
	outcome string
	// alert, when set, is the operator's: they have something to do.
	alert *alert.Alert
}

// emailAudit writes an owner's audit records of one email.
type emailAudit interface {
	// filtered records gate 2's decision on the letter as it would leave.
	filtered(ctx context.Context, t *task, rep sosfilter.Report)
	// tried records an attempt to send it to to, which err ended and which
	// called for oc.
	tried(ctx context.Context, t *task, err error, to string, oc outcome)
	// ended records the email's end without a send: status and detail, to
	// whom it was owed ("" when no one was found), and outcome (see
	// unsent).
	ended(ctx context.Context, t *task, status audit.Status, detail *string, to, outcome string)
	// sent records the email sent to to as messageID.
	sent(ctx context.Context, t *task, messageID, to string)
}

// emailLogs are the words of the lines an owner's emails log.
type emailLogs struct {
	// sent is the email's line once sent; sentAttrs, when set, add to it.
	sent      string
	sentAttrs func() []any
	// suppressed: not sent, because the recipient complained before.
	suppressed string
	// givenUp is the line of the email given up.
	givenUp string
	// closeFailed: the give-up could not be recorded on the delivery.
	closeFailed string
}

// emailAlerts are how the operator hears of an owner's failed emails.
type emailAlerts struct {
	// about files the alerts: an order's session, or a subject naming the
	// email.
	about alert.Alert
	// name is the email in the alerts' words ("the verdict email").
	name string
	// eachFailure, when set, is the kind of an alert raised for every
	// failed attempt, and for the give-up (G5); otherwise only a give-up
	// alerts, as EMAIL_FAILED or EMAIL_DEAD_LETTER.
	eachFailure alert.Kind
	// told ends a give-up's alert: what the person was told, what the
	// operator can do.
	told string
}

// deliver sends the email the task's job owes on the task's delivery: it
// claims the delivery (unless the owner's reading of the job took the
// claim, as an order's does), finds the recipient and whether they
// complained, composes the letter and passes it through gate 2 (in the
// owner's order, see letterFirst), sends it, and closes, retries, parks or
// gives up the delivery as the send's result calls for (afterSend).
func (h *Handler) deliver(ctx context.Context, t *task, e *email) error {
	var msg letter.Message
	if e.letterFirst {
		var ok bool
		var err error
		if msg, ok, err = h.letterOf(ctx, t, e); !ok {
			return err
		}
	}
	if !e.claimed {
		if done, err := h.claim(ctx, t); done {
			return err
		}
	}
	who, err := e.recipient(ctx, t)
	if err != nil {
		h.release(ctx, t)
		return err
	}
	switch {
	case who.none != nil:
		return h.unsent(ctx, t, e, who.to, *who.none)
	case who.suppressed:
		return h.unsent(ctx, t, e, who.to, unsent{log: e.logs.suppressed, detail: "the address is on the suppression list (a complaint)",
			result: "none: suppressed", state: oracle.MailSuppressed, outcome: "suppressed"})
	}
	if !e.letterFirst {
		var ok bool
		if msg, ok, err = h.letterOf(ctx, t, e); !ok {
			return err
		}
	}
	t.hash = messageHash(h.Hasher, msg)
	id, err := h.Transport.Send(ctx, mail.Outgoing{From: h.Brand.From(), To: who.to, ReplyTo: h.Brand.Support, Subject: msg.Subject, Text: msg.Text,
		HTML: msg.HTML, Tags: e.tags})
	// A crash from here until close records the delivery sends the email
	// again once the claim's lease lapses: the one duplicate window, so
	// the record comes first and the send's audit records after it.
	crashpoint.Reach(ctx, crashpoint.MailerSent)
	oc, wait := afterSend(err, t.job.Attempt, h.Schedule)
	if oc == sent {
		h.close(ctx, t, id, oracle.MailSent)
	}
	e.audit.tried(ctx, t, err, who.to, oc)
	switch oc {
	case retry:
		if e.alerts.eachFailure != "" {
			// One alert per attempt (the dedupe window would merge the
			// attempts of a compressed schedule).
			a := e.alerts.about
			a.Severity, a.Kind, a.Subject = alert.Warn, e.alerts.eachFailure, a.Subject+"/"+strconv.Itoa(t.job.Attempt)
			a.Detail = e.alerts.name + " failed (" + err.Error() + "); attempt " + strconv.Itoa(t.job.Attempt+2) + " follows in " + wait.String()
			h.Alerts.Raise(ctx, a)
		}
		return h.retryLater(ctx, t, err, wait)
	case blocked:
		return h.park(ctx, t, err)
	case deadLetter, refused:
		return h.giveUp(ctx, t, e, err, oc, who.to)
	}
	e.audit.sent(ctx, t, id, who.to)
	var attrs []any
	if e.logs.sentAttrs != nil {
		attrs = e.logs.sentAttrs()
	}
	t.log.InfoContext(ctx, e.logs.sent, attrs...)
	return nil
}

// letterOf composes the task's email and passes it through gate 2, as it
// would leave: ok when it is to be sent. Otherwise the email ended there
// (gate 2 stopped it), or with err, its claim (if held) released.
func (h *Handler) letterOf(ctx context.Context, t *task, e *email) (msg letter.Message, ok bool, err error) {
	var rep sosfilter.Report
	for range max(e.draws, 1) {
		if msg, err = e.compose(ctx); err != nil {
			h.release(ctx, t)
			return letter.Message{}, false, err
		}
		if rep = h.Filter.Mail(msg.Subject, msg.Text, msg.HTML, sosfilter.Own(msg.Own)); rep.Action == sosfilter.Pass {
			break
		}
	}
	e.audit.filtered(ctx, t, rep)
	if rep.Action != sosfilter.Pass {
		return e.stopped(ctx, t, msg, rep)
	}
	return msg, true, nil
}

// unsent closes the task's delivery without a send, for why.
func (h *Handler) unsent(ctx context.Context, t *task, e *email, to string, why unsent) error {
	if why.alert != nil {
		t.log.ErrorContext(ctx, why.log)
	} else {
		t.log.WarnContext(ctx, why.log)
	}
	e.audit.ended(ctx, t, audit.StatusEmailFailed, audit.Detail(why.detail), to, why.outcome)
	h.close(ctx, t, why.result, why.state)
	if why.alert != nil {
		h.Alerts.Raise(ctx, *why.alert)
	}
	return nil
}

// giveUp closes the delivery as undeliverable after the schedule's last
// attempt failed or the message was refused for good, keeps the dead
// letter when the owner does, and alerts once (a job that comes again
// finds its delivery closed, or the dead letter kept).
func (h *Handler) giveUp(ctx context.Context, t *task, e *email, cause error, oc outcome, to string) error {
	try := h.try(t, cause, h.Now())
	tries, err := h.failed(ctx, t, try, time.Time{})
	if err != nil {
		// The records and the alert still go out: the attempt is what
		// they say.
		t.log.ErrorContext(ctx, e.logs.closeFailed, "error", err.Error())
		tries = []store.Try{try}
	}
	first, told := true, e.alerts.told
	if e.deadLetter != nil {
		var note string
		first, note = e.deadLetter(ctx, t, cause, tries)
		told += "; " + note
	}
	e.audit.ended(ctx, t, audit.StatusEmailFailed, audit.Detail(oc.String()+": "+cause.Error()), to, "undeliverable")
	t.log.ErrorContext(ctx, e.logs.givenUp, "outcome", oc.String(), "class", failureClass(cause), "attempts", len(tries))
	if first {
		h.Alerts.Raise(ctx, h.givenUpAlert(e, oc, cause, told))
	}
	return nil
}

// givenUpAlert is the operator's alert of the email given up for oc,
// ending with told. It names the email as its owner does, never its
// address.
func (h *Handler) givenUpAlert(e *email, oc outcome, cause error, told string) alert.Alert {
	a := e.alerts.about
	switch {
	case e.alerts.eachFailure != "":
		// Its attempts alerted under the same kind: the give-up is filed
		// apart from them.
		a.Severity, a.Kind, a.Subject = alert.Error, e.alerts.eachFailure, a.Subject+"/given-up"
		a.Detail = fmt.Sprintf("%s was given up (%s: %s); %s", e.alerts.name, oc, cause.Error(), told)
	case oc == deadLetter:
		a.Severity, a.Kind = alert.Critical, alert.EmailDeadLetter
		a.Detail = fmt.Sprintf("%s failed on all %d attempts (last: %s); %s", e.alerts.name, len(h.Schedule), cause.Error(), told)
	default:
		a.Severity, a.Kind = alert.Error, alert.EmailFailed
		a.Detail = fmt.Sprintf("%s was refused for good and will not be retried (%s); %s", e.alerts.name, cause.Error(), told)
	}
	return a
}
