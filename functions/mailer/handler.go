package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"42sisters.ai/oracle/functions/mailer/letter"
	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/crashpoint"
	"42sisters.ai/oracle/shared/mail"
	"42sisters.ai/oracle/shared/obs"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/quarantine"
	"42sisters.ai/oracle/shared/queue"
	"42sisters.ai/oracle/shared/repair"
	"42sisters.ai/oracle/shared/sosfilter"
	"42sisters.ai/oracle/shared/sqsbatch"
	"42sisters.ai/oracle/shared/store"
	"42sisters.ai/oracle/shared/tracing"
)

// Orders is the order store (shared/store): the mailer reads an order only
// through its delivery's claim.
type Orders interface {
	orderDeliveries
	QuarantineReady(ctx context.Context, sessionID string, q store.Quarantine) (bool, error)
}

// Ledger keeps the mail dead letters, the suppression list, which session
// each sent email was, and the deliveries of the autoresponses and of the
// chat's emails (shared/store).
type Ledger interface {
	RecordMailDeadLetter(ctx context.Context, d store.MailDeadLetter, ttl time.Duration) (bool, error)
	Suppressed(ctx context.Context, emailHash string) (bool, error)
	RecordSentMessage(ctx context.Context, messageID, sessionID string, ttl time.Duration) error
	replyDeliveries
	chatDeliveries
}

// Received reads a message the support inbox received (shared/inbox).
type Received interface {
	Get(ctx context.Context, key string) ([]byte, time.Time, error)
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
	Mail(subject, text, html string, own sosfilter.Own) sosfilter.Report
}

// QuarantineStore keeps what the filter stopped (shared/quarantine).
type QuarantineStore interface {
	Put(ctx context.Context, r quarantine.Record) (string, error)
}

// Sender sends a job to a queue.
type Sender interface {
	Send(ctx context.Context, j queue.Job) error
}

// Verdicts checks a stored verdict before it is mailed, setting a corrupt
// one aside (repair.Guard).
type Verdicts interface {
	Check(ctx context.Context, o oracle.Order) (repair.Outcome, error)
}

// Counter emits a metric (obs.Metrics).
type Counter interface {
	Count(name string, n float64)
	Emit(figs ...obs.Figure)
}

// Handler consumes the mail queue.
type Handler struct {
	Orders Orders
	Ledger Ledger
	// Live and Test retrieve sessions of each mode; Test may be nil when
	// test-mode orders are not expected.
	Live, Test Sessions
	Transport  Transport
	// TransportName names the transport in records ("SES" or "Graph").
	TransportName string
	// Schedule is the delay before each attempt of an email (the first
	// 0); after the last one fails the email is dead-lettered.
	Schedule []time.Duration
	// BlockedRetry is how long a job waits while the account cannot send.
	BlockedRetry time.Duration
	// DeadLetterRetention is how long a mail dead-letter record is kept.
	DeadLetterRetention time.Duration
	// SentRetention is how long the session of each sent email is
	// remembered, for replies to find their order; ReplyRetention how long
	// an autoresponse's delivery record is kept.
	SentRetention, ReplyRetention time.Duration
	// Inbox reads the received messages autoresponses answer.
	Inbox Received
	// Chat reads the chat accounts' addresses and mints their sign-in
	// links; ChatMailRetention is how long a chat email's delivery record
	// is kept.
	Chat              Accounts
	ChatMailRetention time.Duration
	// Audit writes the mailer's records, alerting when one is lost.
	Audit  *audit.Recorder
	Alerts Alerter
	// Verdicts is asked before a READY order's email is composed.
	Verdicts Verdicts
	// Filter is gate 2: every email passes it just before it is sent; a
	// stopped one goes to Quarantine and the customer gets the review
	// notice (Mail).
	Filter     ContentFilter
	Quarantine QuarantineStore
	Mail       Sender
	Hasher     *audit.Hasher
	Brand      letter.Brand
	BaseURL    string // the site, for the result page link
	// Metrics counts the deliveries that fail (MailerRecordFailures).
	Metrics Counter
	Log     *slog.Logger
	Now     func() time.Time
	// Lease bounds one send attempt before another may take over.
	Lease time.Duration
}

// DefaultLease outlasts one invocation of the mailer (30 s timeout), so a
// live send is never taken over.
const DefaultLease = time.Minute

// DefaultSentRetention is how long the session of a sent email is
// remembered: replies come within days, rarely after months.
const DefaultSentRetention = 90 * 24 * time.Hour

// DefaultReplyRetention is how long an autoresponse's delivery record is
// kept: past its last retry, and past the inbox bucket's expiry of the
// message it answers, so no redelivered job can send it again.
const DefaultReplyRetention = 60 * 24 * time.Hour

// DefaultBlockedRetry is how often a job parked while the account cannot
// send tries again: often enough that mail resumes soon after the fix, and
// within one SQS delay, so a parked job needs no hops.
const DefaultBlockedRetry = 15 * time.Minute

// task is one mail job on its way through the Handler.
type task struct {
	job     queue.Job
	started time.Time
	log     *slog.Logger
	order   oracle.Order
	// delivery is the record of the email's delivery, whatever owns it.
	delivery delivery
	// token is this task's claim on the delivery, once taken.
	token string
	// hash is the keyed hash of the message, the same on every attempt.
	hash string
	// reply is set on an autoresponse's task, which answers a received
	// message instead of an order.
	reply *reply
	// chat is set on the task of a chat account's email: its delivery.
	chat *chatMail
}

// Handle processes a batch and reports the records that failed, so that
// SQS redelivers only those (and, after the queue's maxReceiveCount, moves
// them to the dead-letter queue).
func (h *Handler) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	return sqsbatch.Process(ctx, h.Log, sqsbatch.Failures{Metrics: h.Metrics, Name: obs.MailerRecordFailures}, ev, h.process), nil
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
	// The order's whole id on this record's span and every span under it.
	ctx = tracing.WithOrder(ctx, job.SessionID)
	t := &task{job: job, started: h.Now(), log: h.Log.With("kind", job.Kind, "attempt", job.Attempt)}
	switch {
	case job.Kind == oracle.MailAutoresponse:
		t.log = h.Log.With("kind", job.Kind, "attempt", job.Attempt)
	case oracle.ChatMail(job.Kind):
		// The account is a keyed hash; the address never reaches a log.
		t.log = h.Log.With("kind", job.Kind, "attempt", job.Attempt, "account", job.Account, "nonce", job.Nonce)
	}
	return h.run(ctx, t)
}

// run does what the job calls for, given its order.
func (h *Handler) run(ctx context.Context, t *task) error {
	if t.job.NotBefore != nil && t.job.NotBefore.After(t.started) {
		// A wait longer than SQS's 15-minute delay goes in hops.
		if err := h.Mail.Send(ctx, t.job); err != nil {
			return fmt.Errorf("hop: %w", err)
		}
		t.log.DebugContext(ctx, "mail job not due yet; sent on", "attempt", t.job.Attempt, "not_before", t.job.NotBefore.UTC().Format(time.RFC3339))
		return nil
	}
	switch {
	case t.job.Kind == oracle.MailAutoresponse:
		return h.autorespond(ctx, t)
	case oracle.ChatMail(t.job.Kind):
		return h.sendChat(ctx, t)
	}
	return h.orderMail(ctx, t)
}

// orderMail sends an order's email. Its claim reads the order in the same
// request and is granted only while the order is owed the email; the
// address is read from Stripe and looked up on the suppression list
// meanwhile, so the send waits on one round trip, not four.
func (h *Handler) orderMail(ctx context.Context, t *task) error {
	d := &orderMail{orders: h.Orders, sessionID: t.job.SessionID, kind: t.job.Kind}
	t.delivery = d
	addr := h.lookUp(ctx, t.job.SessionID)
	defer addr.stop()
	token, err := d.claim(ctx, t.job.Attempt, h.Lease)
	t.order = d.read.Order
	if errors.Is(err, store.ErrNoOrder) || errors.Is(err, store.ErrMailNotOwed) || err == nil {
		switch next(t.job.Kind, t.order, !errors.Is(err, store.ErrNoOrder)) {
		case stepUnknownOrder:
			t.log.WarnContext(ctx, "mail job for an unknown order acknowledged")
			return nil
		case stepNotOwed:
			// Granted only for an agent's order, which has no address.
			if err == nil {
				t.token = token
				h.release(ctx, t)
			}
			t.log.WarnContext(ctx, "mail job for an order with nothing to send acknowledged", "status", string(t.order.Status))
			return nil
		case stepFollowUps:
			t.log.InfoContext(ctx, "verdict quarantined; its follow-ups are queued again")
			return h.quarantineFollowUps(ctx, t.order.SessionID)
		}
	}
	if errors.Is(err, store.ErrAlreadySent) && sentBy(t.job.Kind, t.job.Attempt, d.read) {
		// The job that sent it: it died after recording the send, maybe
		// before the send's records (see records).
		t.log.InfoContext(ctx, "mail already sent; duplicate job acknowledged, its records written where missing")
		return h.recordAgain(ctx, t, d.read.Result, addr)
	}
	if done, err := claimed(ctx, t, err); done || err != nil {
		return err
	}
	t.token = token
	crashpoint.Reach(ctx, crashpoint.MailerClaimed)
	if t.job.Kind == oracle.MailVerdict || t.job.Kind == oracle.MailDivergence {
		// A corrupt verdict is never mailed: it is set aside and repaired,
		// and what the repair owes the customer is queued by it. The
		// claim is given up after: the repair's own email comes later.
		switch outcome, err := h.Verdicts.Check(ctx, t.order); {
		case err != nil:
			h.release(ctx, t)
			return err
		case outcome != repair.Intact:
			h.release(ctx, t)
			t.log.WarnContext(ctx, "the stored verdict was corrupt and is set aside; mail job acknowledged")
			return nil
		}
	}
	return h.deliver(ctx, t, h.orderEmail(t, addr))
}

// sentBy reports whether a delivery of kind that the claim found closed
// was closed by a send of attempt: its email left (whatever the transport
// said of it since), and no later attempt was due.
func sentBy(kind oracle.MailKind, attempt int, c store.MailClaim) bool {
	if c.Next > attempt {
		return false // this attempt failed; its records were written then
	}
	switch c.Order.Mail[kind] {
	case oracle.MailSent, oracle.MailDelivered, oracle.MailBounced, oracle.MailComplained, oracle.MailUndeliverable:
		return true
	}
	return false
}

// orderEmail is the task's order's email on the delivery path: composed
// from the stored order (never from the message) and passed through gate 2
// while the recipient is read (addr); a stopped one is quarantined and the
// customer gets the review notice; a given-up one is kept as a dead letter
// in the Ledger for a resend.
func (h *Handler) orderEmail(t *task, addr *address) *email {
	o, kind := t.order, t.job.Kind
	return &email{
		letterFirst: true,
		claimed:     true,
		compose:     func(context.Context) (letter.Message, error) { return h.compose(kind, o) },
		stopped: func(ctx context.Context, t *task, msg letter.Message, rep sosfilter.Report) (letter.Message, bool, error) {
			h.Audit.RecordStep(ctx, []audit.Line{h.filterLine(t, rep)})
			return letter.Message{}, false, h.quarantine(ctx, t, msg, rep)
		},
		recipient: func(ctx context.Context, _ *task) (addressee, error) {
			to, suppressed, err := addr.wait(ctx, o.Livemode)
			if err == nil && to == "" {
				// The page still serves the verdict; the operator already
				// has the drop alert for a dropped order.
				return addressee{none: &unsent{log: "no email address on the session; nothing sent", detail: "no customer email on the session",
					result: "none: no address"}}, nil
			}
			return addressee{to: to, suppressed: suppressed}, err
		},
		tags:  map[string]string{mail.TagSession: o.SessionID, mail.TagKind: string(kind)},
		audit: &orderAudit{h: h},
		logs: emailLogs{sent: "mail sent", suppressed: "the address complained about an earlier email; nothing sent",
			givenUp: "email given up", closeFailed: "closing the undeliverable email failed",
			// wait_ms, payment to email sent, is what the slowest-orders
			// query sorts by: the end of a paid order's processing.
			sentAttrs: func() []any { return []any{"wait_ms", audit.Wait(o.PaidAt, h.Now()).Milliseconds()} }},
		alerts: emailAlerts{about: alert.Alert{Session: o.SessionID}, name: "the " + string(kind) + " email",
			told: "the result page still serves the verdict and says the email could not be delivered"},
		deadLetter: h.deadLetter,
	}
}

// deadLetter keeps an order's email given up in the Ledger: what a resend
// needs. FM-04: when it cannot be written, the alert goes out all the same
// and says so.
func (h *Handler) deadLetter(ctx context.Context, t *task, cause error, tries []store.Try) (first bool, note string) {
	first, err := h.Ledger.RecordMailDeadLetter(ctx, store.MailDeadLetter{SessionID: t.order.SessionID, Kind: t.job.Kind, Transport: h.transportOf(cause),
		Class: failureClass(cause), Livemode: t.order.Livemode, Tries: tries, DeadAt: h.Now().UTC()}, h.DeadLetterRetention)
	if err != nil {
		t.log.ErrorContext(ctx, "writing the mail dead-letter record failed", "error", err.Error())
		return true, "its dead-letter record could NOT be written (" + err.Error() + ")"
	}
	return first, "its dead-letter record in the Ledger keeps what a resend needs"
}

// orderAudit writes an order's email's records a step to an object
// (audit.Recorder.RecordStep): gate 2's decision goes in the object of the
// step that ends the email, and so does the attempt that ends it; an
// attempt tried again later is written alone.
type orderAudit struct {
	h   *Handler
	rep sosfilter.Report
	// last is the record of the attempt that ended the email, once made.
	last *audit.Line
}

func (a *orderAudit) filtered(_ context.Context, _ *task, rep sosfilter.Report) { a.rep = rep }

func (a *orderAudit) tried(ctx context.Context, t *task, err error, to string, oc outcome) {
	switch oc {
	case retry, blocked:
		a.h.Audit.RecordStep(ctx, []audit.Line{a.h.attemptLine(t, err, to, oc == blocked)})
	case deadLetter, refused:
		line := a.h.attemptLine(t, err, to, false)
		a.last = &line
	}
}

func (a *orderAudit) ended(ctx context.Context, t *task, status audit.Status, detail *string, to, _ string) {
	lines := []audit.Line{a.h.filterLine(t, a.rep)}
	if a.last != nil {
		lines = append(lines, *a.last)
	}
	a.h.ended(ctx, t, status, detail, to, true, lines...)
}

func (a *orderAudit) sent(ctx context.Context, t *task, messageID, to string) {
	// A crash from here on leaves the send recorded and its records
	// unwritten: the job, redelivered, finds the delivery closed by its
	// own attempt and writes them (recordAgain).
	crashpoint.Reach(ctx, crashpoint.MailerRecorded)
	a.h.records(ctx, t, a.rep, messageID, to, true)
}

// records writes what a sent email leaves besides its delivery's record,
// at once: one object of gate 2's audit record, the attempt's and the
// email's, and which session the message was (for replies), but for a
// verdict email, whose delivery's record is found by its message id
// (store.SentMessages). Each is written once however often it is asked (a
// write-once key), so
// recordAgain may ask again; count is false then, so the email is counted
// once.
func (h *Handler) records(ctx context.Context, t *task, rep sosfilter.Report, messageID, to string, count bool) {
	var wg sync.WaitGroup
	wg.Go(func() {
		h.ended(ctx, t, audit.StatusEmailSent, nil, to, count, h.filterLine(t, rep), h.attemptLine(t, nil, to, false))
	})
	if t.job.Kind != oracle.MailVerdict {
		wg.Go(func() {
			if err := h.Ledger.RecordSentMessage(ctx, messageID, t.order.SessionID, h.SentRetention); err != nil {
				// The reply still finds its order when it quotes the result link.
				t.log.WarnContext(ctx, "remembering the sent message failed; a reply naming only it will not find its order", "error", err.Error())
			}
		})
	}
	wg.Wait()
}

// recordAgain writes the records of an email its job's attempt sent and
// recorded before it died: the email composed and filtered again from the
// stored order (the same message, so the same hash and gate 2's same
// decision), the address read again.
func (h *Handler) recordAgain(ctx context.Context, t *task, messageID string, addr *address) error {
	msg, err := h.compose(t.job.Kind, t.order)
	if err != nil {
		return err
	}
	rep := h.Filter.Mail(msg.Subject, msg.Text, msg.HTML, sosfilter.Own(msg.Own))
	to, _, err := addr.wait(ctx, t.order.Livemode)
	if err != nil {
		return err
	}
	t.hash = messageHash(h.Hasher, msg)
	h.records(ctx, t, rep, messageID, to, false)
	return nil
}

// messageHash is the keyed hash of a message, the same on every attempt.
func messageHash(hasher *audit.Hasher, msg letter.Message) string {
	return hasher.Hash(msg.Subject + "\x00" + msg.Text + "\x00" + msg.HTML)
}

// suppressed reports whether the address complained about an earlier
// email. SES's complaint names the address as it was sent, with its domain
// in punycode, so the list is keyed that way; an address that cannot be
// written so is not on it (and its send is refused).
func (h *Handler) suppressed(ctx context.Context, to string) (bool, error) {
	ascii, err := mail.ASCIIAddress(to)
	if err != nil {
		return false, nil
	}
	return h.Ledger.Suppressed(ctx, h.Hasher.Email(ascii))
}

// retryLater queues the next attempt of the schedule, due after wait, and
// records this one as failed. The next job is queued first: if that fails,
// the claim is released and SQS brings this job back for the same attempt.
func (h *Handler) retryLater(ctx context.Context, t *task, cause error, wait time.Duration) error {
	failedAt := h.Now()
	at := failedAt.Add(wait)
	next := t.job
	next.Attempt++
	next.NotBefore = &at
	if err := h.Mail.Send(ctx, next); err != nil {
		h.release(ctx, t)
		return fmt.Errorf("queue attempt %d: %w", next.Attempt, err)
	}
	if _, err := h.failed(ctx, t, h.try(t, cause, failedAt), at); err != nil {
		// The next attempt is queued and claims once this lease ends.
		t.log.ErrorContext(ctx, "recording the failed attempt failed", "error", err.Error())
	}
	t.log.WarnContext(ctx, "send failed; the next attempt is queued", "class", failureClass(cause), "error", cause.Error(),
		"next_attempt", next.Attempt, "next_at", at.UTC().Format(time.RFC3339))
	return nil
}

// park holds the job while the account cannot send: its attempt is not
// spent, and it comes back by itself every BlockedRetry, so mail resumes
// once a send works again. One alert a minute at most, for every job held.
func (h *Handler) park(ctx context.Context, t *task, cause error) error {
	h.release(ctx, t)
	h.Alerts.Raise(ctx, alert.Alert{Severity: alert.Critical, Kind: alert.EmailBlocked,
		Detail: "the account cannot send (" + cause.Error() + "); mail jobs such as " + t.delivery.what() +
			" are parked and try again every " + h.BlockedRetry.String()})
	at := h.Now().Add(h.BlockedRetry)
	job := t.job
	job.NotBefore = &at
	if err := h.Mail.Send(ctx, job); err != nil {
		return fmt.Errorf("park: %w", err) // SQS brings the job back all the same
	}
	t.log.WarnContext(ctx, "the account cannot send; job parked", "error", cause.Error(), "until", at.UTC().Format(time.RFC3339))
	return nil
}

// try is the record of the task's attempt that failed at at.
func (h *Handler) try(t *task, cause error, at time.Time) store.Try {
	return store.Try{Attempt: t.job.Attempt, At: at.UTC(), Class: failureClass(cause), Code: failureCode(cause)}
}

// transportOf names the transport that failed, or the configured one.
func (h *Handler) transportOf(err error) string {
	var e *mail.Error
	if errors.As(err, &e) && e.Transport != "" {
		return e.Transport
	}
	return h.TransportName
}

// close records the delivery as done with result (the message id, or why
// nothing left) and the email's state. A failure is logged: the audit
// record and the alert still say what happened.
func (h *Handler) close(ctx context.Context, t *task, result string, state oracle.MailState) {
	if err := t.delivery.sent(ctx, t.token, result, state); err != nil {
		t.log.ErrorContext(ctx, "recording the delivery failed", "result", result, "error", err.Error())
	}
}

// release gives up the task's claim, if it holds one (an autoresponse's
// letter is composed before it is claimed), without spending its attempt.
func (h *Handler) release(ctx context.Context, t *task) {
	if t.token == "" {
		return
	}
	if err := t.delivery.release(ctx, t.token); err != nil {
		t.log.ErrorContext(ctx, "releasing the delivery failed", "error", err.Error())
	}
}

// failed records the task's failed attempt; a zero nextAt closes the
// delivery as undeliverable.
func (h *Handler) failed(ctx context.Context, t *task, try store.Try, nextAt time.Time) ([]store.Try, error) {
	return t.delivery.failed(ctx, t.token, try, nextAt)
}

// claim takes the task's attempt of its delivery: done when the job ends
// here, with nothing left to do (see claimed) or with err.
func (h *Handler) claim(ctx context.Context, t *task) (done bool, _ error) {
	token, err := t.delivery.claim(ctx, t.job.Attempt, h.Lease)
	if done, err := claimed(ctx, t, err); done || err != nil {
		return true, err
	}
	t.token = token
	crashpoint.Reach(ctx, crashpoint.MailerClaimed)
	return false, nil
}

// claimed judges a claim's error: done when the job has nothing left to do
// (its email sent, its attempt made, or held by another job).
func claimed(ctx context.Context, t *task, err error) (done bool, _ error) {
	switch {
	case errors.Is(err, store.ErrAlreadySent):
		t.log.InfoContext(ctx, "mail already sent; duplicate job acknowledged")
		return true, nil
	case errors.Is(err, store.ErrAttemptSpent):
		t.log.InfoContext(ctx, "this attempt was already made; duplicate job acknowledged")
		return true, nil
	case errors.Is(err, store.ErrMailInFlight):
		// The holder's own job is acknowledged only once it has settled
		// the attempt (sent, or the next one queued, or parked); if the
		// holder dies, SQS brings that job back after its lease. So this
		// duplicate is not needed.
		t.log.InfoContext(ctx, "another job holds this attempt; duplicate acknowledged")
		return true, nil
	}
	return false, err
}
