package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/stripe/stripe-go/v76"

	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/fulfil"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/queue"
	"42sisters.ai/oracle/shared/stripex"
	"42sisters.ai/oracle/shared/subscription"
)

// Subscriptions keeps the chat's subscriptions (subscription.Store).
type Subscriptions interface {
	Get(ctx context.Context, account, id string) (subscription.State, bool, error)
	Apply(ctx context.Context, st subscription.State) (subscription.State, bool, error)
	Link(ctx context.Context, account, id string) error
	AccountOf(ctx context.Context, id string) (string, bool, error)
	RecordPayment(ctx context.Context, p subscription.Payment, paidAt time.Time) error
}

// Chat handles Stripe's events about Sisters Chat's subscriptions: it
// stores each subscription's state from the newest event (Subscriptions
// never regresses it), records each event in the audit log, and sends one
// payment-failed email per failed invoice.
type Chat struct {
	Subscriptions Subscriptions
	Mail          fulfil.Sender
	// Ledger remembers the invoices whose payment-failed email was sent.
	Ledger Ledger
	Audit  Auditor
	Alerts Alerter
	Now    func() time.Time
}

// The subscription events the chat takes, beside checkout.session.completed
// in mode subscription.
var chatEvents = map[stripe.EventType]bool{
	stripe.EventTypeCustomerSubscriptionCreated: true,
	stripe.EventTypeCustomerSubscriptionUpdated: true,
	stripe.EventTypeCustomerSubscriptionDeleted: true,
	stripe.EventTypeInvoicePaid:                 true,
	stripe.EventTypeInvoicePaymentFailed:        true,
}

// paymentFailedMailTTL is how long an invoice's payment-failed email is
// remembered as sent: longer than Stripe's retries of the invoice (about
// three weeks) and of its events (three days).
const paymentFailedMailTTL = 60 * 24 * time.Hour

// chatEvent is what an event says of a subscription.
type chatEvent struct {
	state subscription.State
	// invoice is set for invoice events: its id, and what it paid.
	invoice        string
	amount         int64
	currency       string
	paymentIntent  string // invoice.paid's: what paid it, and its charge
	charge         string
	paymentFailed  bool
	linkOnly       bool // checkout.session.completed: links, stores no state
	accountFromObj string
}

// handle does what the event asks. An error is answered 5xx and the event
// retried by Stripe: everything here is idempotent. errUnreadable marks an
// object that cannot be read.
func (c *Chat) handle(ctx context.Context, log *slog.Logger, event stripe.Event, arrived time.Time) error {
	ev, livemode, err := readChatEvent(event)
	if err != nil {
		return fmt.Errorf("%w: %w", errUnreadable, err)
	}
	if livemode != event.Livemode {
		return fmt.Errorf("%w: event and object disagree on livemode", errUnreadable)
	}
	if ev.state.ID == "" {
		// An invoice of no subscription (a one-off invoice): not the chat's.
		log.InfoContext(ctx, "invoice of no subscription ignored")
		return nil
	}
	log = log.With("subscription", ev.state.ID)
	account := ev.accountFromObj
	if account == "" {
		found, ok, err := c.Subscriptions.AccountOf(ctx, ev.state.ID)
		if err != nil {
			return err
		}
		if ok {
			account = found
		}
	}
	if !subscription.ValidAccount(account) {
		c.unknown(ctx, log, event, ev.state.ID, "names no chat account")
		return nil
	}
	ev.state.Account = account
	if err := ev.state.Validate(); err != nil && !ev.linkOnly {
		return fmt.Errorf("%w: %w", errUnreadable, err)
	}
	// The record says the subscription's state after the event: the
	// event's own, or the newer one stored before it (an event that came
	// late changes nothing), so the audit log's last record of a
	// subscription is its state.
	after := ev.state
	if ev.linkOnly {
		after.Status = ""
		if err = c.Subscriptions.Link(ctx, account, ev.state.ID); err == nil {
			stored, found, gerr := c.Subscriptions.Get(ctx, account, ev.state.ID)
			if gerr != nil {
				return gerr
			}
			if found {
				after = stored
			}
		}
	} else {
		var (
			stored  subscription.State
			applied bool
		)
		stored, applied, err = c.Subscriptions.Apply(ctx, ev.state)
		if err == nil {
			after = stored
		}
		log = log.With("applied", applied)
	}
	switch {
	case errors.Is(err, subscription.ErrNoAccount) && subscription.Ended(ev.state.Status):
		// Ended, for an account that is gone (erased at its owner's
		// request, its subscription cancelled first): nothing is charged,
		// nothing to store, nothing for the operator to do.
		log.InfoContext(ctx, "ended subscription of an account that is gone; nothing stored", "status", ev.state.Status)
		return nil
	case errors.Is(err, subscription.ErrNoAccount):
		c.unknown(ctx, log, event, ev.state.ID, "names a chat account that does not exist")
		return nil
	case errors.Is(err, subscription.ErrOtherAccount):
		c.unknown(ctx, log, event, ev.state.ID, "names another account than the one the subscription belongs to")
		return nil
	case err != nil:
		return err
	}
	// A paid invoice is kept under its payment intent, by which its
	// refund, dispute or fraud warning (Money) is known for the chat's.
	if ev.paymentIntent != "" {
		p := subscription.Payment{PaymentIntent: ev.paymentIntent, Charge: ev.charge, Invoice: ev.invoice, Subscription: ev.state.ID,
			Account: account, Amount: ev.amount, Currency: ev.currency}
		if err := c.Subscriptions.RecordPayment(ctx, p, ev.state.EventCreated); err != nil {
			return err
		}
	}
	if err := c.record(ctx, event, ev, after, arrived); err != nil {
		return err
	}
	if ev.paymentFailed {
		if err := c.mailPaymentFailed(ctx, account, ev.invoice); err != nil {
			return err
		}
	}
	log.InfoContext(ctx, "chat subscription event applied", "status", ev.state.Status)
	return nil
}

// readChatEvent reads the subscription's state from the event's object, in
// APIVersion's shape: a subscription's own fields; an invoice's, which say
// the subscription is active (paid) or past_due (a renewal's payment
// failed; incomplete for the first payment), the period its subscription
// line bills, and not whether it is to end (CancelUnknown); a completed
// Checkout Session's, which only link the subscription to its account.
func readChatEvent(event stripe.Event) (chatEvent, bool, error) {
	var ev chatEvent
	base := subscription.State{EventCreated: time.Unix(event.Created, 0).UTC(), EventID: event.ID}
	raw := event.Data.Raw
	switch event.Type {
	case stripe.EventTypeCheckoutSessionCompleted:
		s, err := stripex.ChatSessionFromJSON(raw)
		if err != nil {
			return ev, false, err
		}
		base.ID, base.Customer = s.Subscription, s.Customer
		if !subscription.ValidID(base.ID) {
			return ev, false, errors.New("a completed subscription session names no subscription")
		}
		ev = chatEvent{state: base, linkOnly: true, accountFromObj: s.Account}
		return ev, s.Livemode, nil
	case stripe.EventTypeInvoicePaid, stripe.EventTypeInvoicePaymentFailed:
		in, err := stripex.InvoiceFromJSON(raw)
		if err != nil {
			return ev, false, err
		}
		base.ID, base.Customer, base.PeriodEnd, base.CancelUnknown = in.Subscription, in.Customer, in.PeriodEnd, true
		ev = chatEvent{invoice: in.ID, accountFromObj: in.Account}
		if event.Type == stripe.EventTypeInvoicePaid {
			base.Status = subscription.Active
			ev.amount, ev.currency = in.AmountPaid, in.Currency
			ev.paymentIntent, ev.charge = in.PaymentIntent, in.Charge
		} else {
			base.Status = subscription.PastDue
			if in.FirstInvoice {
				base.Status = subscription.Incomplete
			}
			// The first payment fails in front of the person, at Checkout.
			ev.paymentFailed = !in.FirstInvoice
		}
		ev.state = base
		return ev, in.Livemode, nil
	}
	s, err := stripex.SubscriptionFromJSON(raw)
	if err != nil {
		return ev, false, err
	}
	base.ID, base.Customer, base.Status, base.PeriodEnd, base.CancelAtPeriodEnd = s.ID, s.Customer, s.Status, s.PeriodEnd, s.CancelAtPeriodEnd
	if !subscription.KnownStatus(s.Status) {
		return ev, false, fmt.Errorf("subscription %s has an unknown status", s.ID)
	}
	return chatEvent{state: base, accountFromObj: s.Account}, s.Livemode, nil
}

// unknown alerts an event that names no chat account: another product's
// subscription, or metadata lost. It is not retried: nothing would change.
func (c *Chat) unknown(ctx context.Context, log *slog.Logger, event stripe.Event, id, why string) {
	c.Alerts.Raise(ctx, alert.Alert{Severity: alert.Error, Kind: alert.ChatSubscriptionUnknown, Subject: id,
		Detail: fmt.Sprintf("%s (event %s) about subscription %s %s; nothing was stored", event.Type, event.ID, id, why)})
	log.WarnContext(ctx, "subscription event for no known chat account", "why", why)
}

// record writes the event's audit record, with st the subscription's
// state after it, once per event (a redelivery finds it written).
func (c *Chat) record(ctx context.Context, event stripe.Event, ev chatEvent, st subscription.State, arrived time.Time) error {
	r := audit.Record{
		Timestamp:      c.Now().UTC(),
		SessionCreated: time.Unix(event.Created, 0).UTC(),
		Email:          st.Account,
		LatencyMS:      max(c.Now().Sub(arrived).Milliseconds(), 0),
		Status:         audit.StatusOK,
		Source:         audit.SourceChat,
		Event:          audit.EventChatSubscription,
		EventID:        event.ID,
		Livemode:       event.Livemode,
		AmountTotal:    ev.amount,
		Currency:       ev.currency,
		Chat:           &audit.Chat{Subscription: st.ID, SubscriptionStatus: st.Status},
	}
	if !st.PeriodEnd.IsZero() {
		end := st.PeriodEnd
		r.Chat.PeriodEnd = &end
	}
	return c.Audit.Require(ctx, r, audit.ChatRecordID(st.ID, audit.NameChatSubscription, event.ID))
}

// mailPaymentFailed sends the invoice's payment-failed email job once:
// Stripe sends invoice.payment_failed at each of its retries, and each may
// come twice. The job is sent before the invoice is marked, so a crash
// between the two sends it again, which the mailer's own record of the
// (kind, account, invoice) delivery makes one email.
func (c *Chat) mailPaymentFailed(ctx context.Context, account, invoice string) error {
	key := "chatmail#" + string(oracle.MailChatPaymentFailed) + "#" + invoice
	seen, err := c.Ledger.Seen(ctx, key)
	if err != nil || seen {
		return err
	}
	if err := c.Mail.Send(ctx, queue.Job{Kind: oracle.MailChatPaymentFailed, Account: account, Nonce: invoice}); err != nil {
		return fmt.Errorf("send the payment-failed email job: %w", err)
	}
	// Sent already: when the mark fails, a redelivery sends the job again
	// and the mailer still sends one email.
	_, _ = c.Ledger.Mark(ctx, key, paymentFailedMailTTL)
	return nil
}
