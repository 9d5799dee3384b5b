package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/mail"
	"42sisters.ai/oracle/shared/obs"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/sesevent"
	"42sisters.ai/oracle/shared/sqsbatch"
	"42sisters.ai/oracle/shared/store"
	"42sisters.ai/oracle/shared/tracing"
)

// Orders moves an email's state (shared/store).
type Orders interface {
	MailFeedback(ctx context.Context, sessionID string, kind oracle.MailKind, messageID string, state oracle.MailState) (bool, error)
}

// Suppression is the list of addresses not to email again (shared/store).
type Suppression interface {
	Suppress(ctx context.Context, emailHash, reason string) (bool, error)
}

// Alerter raises operator alerts.
type Alerter interface {
	Raise(ctx context.Context, a alert.Alert)
}

// Counter emits a metric (obs.Metrics).
type Counter interface {
	Count(name string, n float64)
}

// Handler consumes the mail events queue.
type Handler struct {
	Orders      Orders
	Suppression Suppression
	Alerts      Alerter
	Hasher      *audit.Hasher
	// Metrics counts the deliveries that fail (FeedbackRecordFailures),
	// and the bounces and complaints.
	Metrics Counter
	Log     *slog.Logger
	// Sleep waits between tries of an event that came before the mailer
	// recorded its send (store.ErrMailNotRecorded); RecordWait is how long
	// such an event is tried again before SQS is left to deliver it again.
	Sleep      func(ctx context.Context, d time.Duration) error
	RecordWait time.Duration
}

// recordPoll is how often an event whose send is not recorded yet is tried
// again: the mailer writes its record just after the transport's answer.
const recordPoll = 100 * time.Millisecond

// DefaultRecordWait is how long an event whose send is not recorded yet is
// tried again in the invocation that received it.
const DefaultRecordWait = 2 * time.Second

// Handle processes a batch and reports the records that failed, so that
// SQS redelivers only those (and, after the queue's maxReceiveCount, moves
// them to the dead-letter queue, where each raises its own alert).
func (h *Handler) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	return sqsbatch.Process(ctx, h.Log, sqsbatch.Failures{Metrics: h.Metrics, Name: obs.FeedbackRecordFailures}, ev, h.process), nil
}

// process applies one SES event.
func (h *Handler) process(ctx context.Context, rec events.SQSMessage) error {
	ev, err := sesevent.Parse(rec.Body)
	if errors.Is(err, sesevent.ErrNotANotification) {
		// SNS's subscription confirmation: the template's subscription
		// needs none, and it carries no event.
		h.Log.InfoContext(ctx, "SNS message without an event acknowledged")
		return nil
	}
	if err != nil {
		h.Alerts.Raise(ctx, alert.Alert{Severity: alert.Error, Kind: alert.GarbageJob, Session: rec.MessageId,
			Detail: "unreadable message on the mail events queue (" + rec.MessageId + "); it will reach the dead-letter queue"})
		return fmt.Errorf("message %s: %w", rec.MessageId, err)
	}
	session, kind := ev.Tag(mail.TagSession), oracle.MailKind(ev.Tag(mail.TagKind))
	ctx = obs.WithOrder(ctx, session)
	log := h.Log.With("kind", kind, "event", string(ev.EventType))
	if kind == oracle.MailAutoresponse || oracle.ChatMail(kind) {
		// An acknowledgement or a chat account's email answers no order:
		// only a complaint about it matters, and it keeps every later email
		// from that address.
		state := stateOf(ev)
		log.InfoContext(ctx, "mail event for an email of no order", "state", string(state))
		if state == oracle.MailComplained {
			if err := h.suppress(ctx, ev); err != nil {
				return err
			}
		}
		h.counted(state)
		return nil
	}
	if !oracle.ValidSessionID(session) || !slices.Contains(oracle.MailKinds(), kind) {
		// Another sender of the account, or a message sent before tags:
		// nothing of ours to update.
		log.InfoContext(ctx, "mail event for a message without the service's tags acknowledged")
		return nil
	}
	// SES's event carries no trace context (SNS, then SQS, from SES): its
	// spans are a trace of their own, found by the order they name.
	ctx = tracing.WithOrder(ctx, session)
	state := stateOf(ev)
	if state == "" {
		log.DebugContext(ctx, "mail event changes no state")
		return nil
	}
	// The suppression list first: it must hold even when the state cannot
	// move (an email of an order already gone).
	if state == oracle.MailComplained {
		if err := h.suppress(ctx, ev); err != nil {
			return err
		}
	}
	moved, err := h.feedback(ctx, session, kind, ev.Mail.MessageID, state)
	if err != nil {
		return err
	}
	log.InfoContext(ctx, "mail event applied", "state", string(state), "moved", moved)
	if moved {
		h.counted(state)
		h.alert(ctx, session, kind, state, ev)
	}
	return nil
}

// feedback moves the email's state. SES's event can come before the
// mailer's record of the send (its answer, then its event through SNS and
// SQS, against one write): such an event is tried again every recordPoll
// for RecordWait, then failed, so that SQS delivers it again after the
// queue's visibility timeout (and, should the record never come, to the
// dead-letter queue with its alert): never dropped as another message's.
func (h *Handler) feedback(ctx context.Context, session string, kind oracle.MailKind, messageID string, state oracle.MailState) (bool, error) {
	for waited := time.Duration(0); ; waited += recordPoll {
		moved, err := h.Orders.MailFeedback(ctx, session, kind, messageID, state)
		if !errors.Is(err, store.ErrMailNotRecorded) || waited >= h.RecordWait || h.Sleep == nil {
			return moved, err
		}
		if err := h.Sleep(ctx, recordPoll); err != nil {
			return false, fmt.Errorf("waiting for the send's record: %w", err)
		}
	}
}

// counted counts a bounce (EmailsBounced) or a complaint
// (EmailsComplained): the stack's own reputation, beside SES's account-wide
// one.
func (h *Handler) counted(state oracle.MailState) {
	switch state {
	case oracle.MailBounced:
		h.Metrics.Count(obs.EmailsBounced, 1)
	case oracle.MailComplained:
		h.Metrics.Count(obs.EmailsComplained, 1)
	}
}

// stateOf is the mail state an event moves its email to, or "" when it
// moves none: a send (the mailer recorded it), a soft bounce or a delay
// (SES is still trying, or gave up on a message a later one may pass).
func stateOf(ev sesevent.Event) oracle.MailState {
	switch ev.EventType {
	case sesevent.Delivery:
		return oracle.MailDelivered
	case sesevent.Bounce:
		if ev.PermanentBounce() {
			return oracle.MailBounced
		}
	case sesevent.Complaint:
		return oracle.MailComplained
	case sesevent.Reject, sesevent.RenderingFailure:
		return oracle.MailUndeliverable
	}
	return ""
}

// suppress puts each complaining address on the suppression list, as a
// keyed hash of the address as sent.
func (h *Handler) suppress(ctx context.Context, ev sesevent.Event) error {
	for _, addr := range ev.Recipients() {
		if _, err := h.Suppression.Suppress(ctx, h.Hasher.Email(addr), "complaint"); err != nil {
			return err
		}
	}
	return nil
}

// alert tells the operator what a moved state means.
func (h *Handler) alert(ctx context.Context, session string, kind oracle.MailKind, state oracle.MailState, ev sesevent.Event) {
	a := alert.Alert{Severity: alert.Warn, Session: session}
	switch state {
	case oracle.MailBounced:
		a.Kind = alert.EmailBounced
		a.Detail = fmt.Sprintf("the %s email bounced for good (%s); the result page says it could not be delivered and still serves the verdict", kind, bounceType(ev))
	case oracle.MailComplained:
		a.Kind = alert.EmailComplaint
		a.Detail = fmt.Sprintf("the recipient of the %s email marked it as spam; the address is on the suppression list", kind)
	case oracle.MailUndeliverable:
		a.Severity, a.Kind = alert.Error, alert.EmailFailed
		a.Detail = fmt.Sprintf("SES did not deliver the %s email (%s); the result page says it could not be delivered and still serves the verdict", kind, ev.EventType)
	default:
		return
	}
	h.Alerts.Raise(ctx, a)
}

func bounceType(ev sesevent.Event) string {
	if ev.Bounce == nil {
		return "bounce"
	}
	return ev.Bounce.BounceType + "/" + ev.Bounce.BounceSubType
}
