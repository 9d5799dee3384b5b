package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/stripe/stripe-go/v76"

	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/casefile"
	"42sisters.ai/oracle/shared/fulfil"
	"42sisters.ai/oracle/shared/obs"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/store"
	"42sisters.ai/oracle/shared/stripex"
	"42sisters.ai/oracle/shared/subscription"
)

// PaymentIndex finds the order of a payment intent (store.OrderIndex).
type PaymentIndex interface {
	SessionOfPaymentIntent(ctx context.Context, pi string) (string, bool, error)
}

// MoneyOrders records what happens to a payment after it was made
// (store.Orders).
type MoneyOrders interface {
	fulfil.Refunder
	MarkDisputed(ctx context.Context, sessionID, disputeID string, opened time.Time) (bool, error)
}

// EvidenceWriter keeps a dispute's evidence bundle (casefile.EvidenceStore).
type EvidenceWriter interface {
	Put(ctx context.Context, e casefile.Evidence) (string, error)
	Location(key string) string
}

// Auditor appends audit records (audit.Recorder).
type Auditor interface {
	Require(ctx context.Context, r audit.Record, id string) error
}

// Money handles Stripe's events about a payment after it was made: a
// refund, a dispute, an early fraud warning. Each names the payment intent,
// which the order keeps (the by_payment_intent index), so no scan is made.
type Money struct {
	Index    PaymentIndex
	Orders   MoneyOrders
	Records  casefile.Records
	Evidence EvidenceWriter
	Mail     fulfil.Sender
	Audit    Auditor
	Alerts   Alerter
	Hasher   *audit.Hasher
	// BaseURL is the site's, for the result page named in the evidence.
	BaseURL string
	Now     func() time.Time
	// ChatPayments knows the payments of Sisters Chat's invoices: an event
	// no order has may be the chat's.
	ChatPayments ChatPayments
}

// moneyEvents are the event types Money handles.
var moneyEvents = map[audit.Event]bool{audit.EventChargeRefunded: true, audit.EventDisputeCreated: true, audit.EventEarlyFraudWarned: true}

// payment is what every money event says: the payment it is about.
type payment struct {
	intent, charge string
	livemode       bool
}

// handle does what the event asks. An error is answered 500 and the event
// retried by Stripe; everything it does is idempotent.
func (m *Money) handle(ctx context.Context, log *slog.Logger, event stripe.Event, arrived time.Time) error {
	var (
		p   payment
		act func(context.Context, *slog.Logger, oracle.Order, time.Time) error
		// chat is act for a chat invoice's payment.
		chat func(context.Context, *slog.Logger, subscription.Payment) error
	)
	switch audit.Event(event.Type) {
	case audit.EventChargeRefunded:
		var c stripe.Charge
		if err := json.Unmarshal(event.Data.Raw, &c); err != nil || c.ID == "" {
			return fmt.Errorf("%w: charge: %v", errUnreadable, err)
		}
		p = payment{intent: intentOf(c.PaymentIntent), charge: c.ID, livemode: c.Livemode}
		act = func(ctx context.Context, log *slog.Logger, o oracle.Order, arrived time.Time) error {
			// The ops function's refund carries its idempotency key, and
			// its event may arrive before the action records the refund.
			byOperator := event.Request != nil && event.Request.IdempotencyKey == stripex.RefundKey(o.SessionID)
			return m.refunded(ctx, log, o, c, byOperator, event.ID, arrived)
		}
		chat = func(ctx context.Context, log *slog.Logger, pay subscription.Payment) error {
			byOperator := event.Request != nil && event.Request.IdempotencyKey == stripex.ChatRefundKey(pay.Invoice)
			return m.chatRefunded(ctx, log, pay, c, byOperator, event, arrived)
		}
	case audit.EventDisputeCreated:
		var d stripe.Dispute
		if err := json.Unmarshal(event.Data.Raw, &d); err != nil || d.ID == "" {
			return fmt.Errorf("%w: dispute: %v", errUnreadable, err)
		}
		p = payment{intent: intentOf(d.PaymentIntent), charge: chargeOf(d.Charge), livemode: d.Livemode}
		act = func(ctx context.Context, log *slog.Logger, o oracle.Order, arrived time.Time) error {
			return m.disputed(ctx, log, o, d, event.ID, arrived)
		}
		chat = func(ctx context.Context, log *slog.Logger, pay subscription.Payment) error {
			return m.chatDisputed(ctx, log, pay, d, event, arrived)
		}
	case audit.EventEarlyFraudWarned:
		var w stripe.RadarEarlyFraudWarning
		if err := json.Unmarshal(event.Data.Raw, &w); err != nil || w.ID == "" {
			return fmt.Errorf("%w: early fraud warning: %v", errUnreadable, err)
		}
		p = payment{intent: intentOf(w.PaymentIntent), charge: chargeOf(w.Charge), livemode: w.Livemode}
		act = func(ctx context.Context, log *slog.Logger, o oracle.Order, arrived time.Time) error {
			return m.warned(ctx, o, w, event.ID, arrived)
		}
		chat = func(ctx context.Context, log *slog.Logger, pay subscription.Payment) error {
			return m.chatWarned(ctx, log, pay, w, event, arrived)
		}
	default:
		return fmt.Errorf("not a money event: %s", event.Type)
	}
	if p.livemode != event.Livemode {
		return fmt.Errorf("%w: event and object disagree on livemode", errUnreadable)
	}
	session, found, err := m.Index.SessionOfPaymentIntent(ctx, p.intent)
	if err != nil {
		return err
	}
	if !found && m.ChatPayments != nil {
		pay, isChat, err := m.ChatPayments.PaymentOf(ctx, p.intent)
		if err != nil {
			return err
		}
		if isChat {
			return chat(ctx, log.With("subscription", pay.Subscription), pay)
		}
	}
	if !found {
		m.Alerts.Raise(ctx, alert.Alert{Severity: alert.Error, Kind: alert.ChargeUnknown, Session: event.ID,
			Detail: fmt.Sprintf("%s names payment intent %q (charge %s), which no order has", event.Type, p.intent, p.charge)})
		log.WarnContext(ctx, "money event for a payment no order has", "payment_intent", p.intent)
		return nil
	}
	o, found, err := m.Orders.Get(ctx, session)
	if err != nil {
		return err
	}
	if !found {
		return fmt.Errorf("the order of payment intent %s vanished", p.intent)
	}
	return act(obs.WithOrder(ctx, session), log, o, arrived)
}

// refunded records a refund: a full one makes the order REFUNDED and owes
// the customer the refund notice; a partial one changes nothing but is
// audited and alerted. Only a refund made outside the ops function (in
// the Dashboard) is alerted: the operator's own is recorded by its action.
func (m *Money) refunded(ctx context.Context, log *slog.Logger, o oracle.Order, c stripe.Charge, byOperator bool, eventID string, arrived time.Time) error {
	amount := oracle.FormatAmount(c.AmountRefunded, string(c.Currency))
	r := m.record(o, audit.EventChargeRefunded, eventID, arrived)
	r.AmountRefunded = c.AmountRefunded
	if !c.Refunded {
		r.Status, r.ErrorDetail = audit.StatusError, audit.Detail(fmt.Sprintf("partial refund: %s of %s", amount, oracle.FormatAmount(c.Amount, string(c.Currency))))
		if err := m.Audit.Require(ctx, r, audit.RecordID(o.SessionID, audit.NameRefundPartial, c.AmountRefunded)); err != nil {
			return err
		}
		m.Alerts.Raise(ctx, alert.Alert{Severity: alert.Warn, Kind: alert.PartialRefund, Session: o.SessionID,
			Detail: fmt.Sprintf("%s of %s was refunded in Stripe's Dashboard; the order stays %s", amount, oracle.FormatAmount(c.Amount, string(c.Currency)), o.Status)})
		return nil
	}
	refund := store.Refund{ID: c.ID, Amount: c.AmountRefunded, By: store.RefundedInStripe}
	if byOperator {
		refund.By = store.RefundedByOperator
	}
	if c.Refunds != nil && len(c.Refunds.Data) > 0 {
		refund.ID = c.Refunds.Data[0].ID
	}
	refundedOrder, changed, err := fulfil.Refunded(ctx, m.Orders, m.Mail, o.SessionID, refund)
	if errors.Is(err, fulfil.ErrNotRefundable) {
		// Stripe refunded a payment the order never saw succeed: say so.
		m.Alerts.Raise(ctx, alert.Alert{Severity: alert.Error, Kind: alert.ChargeUnknown, Session: o.SessionID,
			Detail: fmt.Sprintf("a refund of %s names an order in state %s, which was never paid", amount, o.Status)})
		return nil
	}
	if err != nil {
		return err
	}
	o = refundedOrder
	r.OrderStatus = string(o.Status)
	if err := m.Audit.Require(ctx, r, audit.RecordID(o.SessionID, audit.NameRefunded)); err != nil {
		return err
	}
	if changed && !byOperator {
		m.Alerts.Raise(ctx, alert.Alert{Severity: alert.Warn, Kind: alert.Refunded, Session: o.SessionID,
			Detail: fmt.Sprintf("%s was refunded in Stripe's Dashboard; the order is REFUNDED and the customer is sent the refund notice", amount)})
	}
	log.InfoContext(ctx, "refund recorded", "changed", changed)
	return nil
}

// disputed records a dispute, writes its evidence bundle and alerts the
// operator with where it is and by when to upload it.
func (m *Money) disputed(ctx context.Context, log *slog.Logger, o oracle.Order, d stripe.Dispute, eventID string, arrived time.Time) error {
	opened := time.Unix(d.Created, 0)
	if _, err := m.Orders.MarkDisputed(ctx, o.SessionID, d.ID, opened); err != nil {
		return err
	}
	f, o, err := casefile.Open(ctx, m.Orders, m.Records, o.SessionID)
	if err != nil {
		return err
	}
	var due time.Time
	if d.EvidenceDetails != nil && d.EvidenceDetails.DueBy > 0 {
		due = time.Unix(d.EvidenceDetails.DueBy, 0).UTC()
	}
	dispute := casefile.Dispute{ID: d.ID, Reason: string(d.Reason), Charge: chargeOf(d.Charge), PaymentIntent: intentOf(d.PaymentIntent),
		Amount: d.Amount, Currency: string(d.Currency), DueBy: due}
	key, err := m.Evidence.Put(ctx, casefile.NewEvidence(dispute, f, o, m.BaseURL+"/oracle/result?session_id="+o.SessionID, m.Now()))
	if err != nil {
		return err
	}
	r := m.record(o, audit.EventDisputeCreated, eventID, arrived)
	r.Status, r.ErrorDetail = audit.StatusError, audit.Detail(fmt.Sprintf("dispute %s opened: %s, %s", d.ID, d.Reason, oracle.FormatAmount(d.Amount, string(d.Currency))))
	if err := m.Audit.Require(ctx, r, audit.RecordID(o.SessionID, audit.NameDispute, d.ID)); err != nil {
		return err
	}
	deadline := "no deadline given"
	if !due.IsZero() {
		deadline = "evidence due by " + due.Format(time.RFC3339)
	}
	m.Alerts.Raise(ctx, alert.Alert{Severity: alert.Critical, Kind: alert.DisputeOpened, Session: o.SessionID,
		Detail: fmt.Sprintf("dispute %s of %s (%s) on a %s order; %s; the evidence bundle is %s: upload it in Stripe's Dashboard",
			d.ID, oracle.FormatAmount(d.Amount, string(d.Currency)), d.Reason, o.Status, deadline, m.Evidence.Location(key))})
	log.WarnContext(ctx, "dispute recorded", "dispute", d.ID)
	return nil
}

// warned alerts the operator to Radar's warning, suggesting the refund
// that avoids a dispute.
func (m *Money) warned(ctx context.Context, o oracle.Order, w stripe.RadarEarlyFraudWarning, eventID string, arrived time.Time) error {
	r := m.record(o, audit.EventEarlyFraudWarned, eventID, arrived)
	r.Status, r.ErrorDetail = audit.StatusError, audit.Detail("early fraud warning: "+string(w.FraudType))
	if err := m.Audit.Require(ctx, r, audit.RecordID(o.SessionID, audit.NameFraudWarning, w.ID)); err != nil {
		return err
	}
	advice := "refund it now to avoid a dispute: make ops ACTION=refund SESSION=" + oracle.ShortID(o.SessionID)
	if o.Status == oracle.StatusRefunded {
		advice = "the order is already refunded"
	}
	m.Alerts.Raise(ctx, alert.Alert{Severity: alert.Error, Kind: alert.EarlyFraudWarning, Session: o.SessionID,
		Detail: fmt.Sprintf("Radar warns that the payment of this %s order was fraudulent (%s, actionable: %t); %s", o.Status, w.FraudType, w.Actionable, advice)})
	return nil
}

// record is the audit record of a money event on o.
func (m *Money) record(o oracle.Order, event audit.Event, eventID string, arrived time.Time) audit.Record {
	r := audit.OfOrder(m.Hasher, o, audit.SourceWebhook, event, audit.StatusOK, arrived, m.Now())
	r.EventID = eventID
	return r
}

func intentOf(pi *stripe.PaymentIntent) string {
	if pi == nil {
		return ""
	}
	return pi.ID
}

func chargeOf(c *stripe.Charge) string {
	if c == nil {
		return ""
	}
	return c.ID
}
