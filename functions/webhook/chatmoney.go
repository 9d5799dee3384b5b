package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/stripe/stripe-go/v76"

	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/subscription"
)

// ChatPayments finds the chat invoice a payment intent paid
// (subscription.Store).
type ChatPayments interface {
	PaymentOf(ctx context.Context, pi string) (subscription.Payment, bool, error)
}

// chatRecord is the audit record of a money event on a chat invoice's
// payment: source chat, the account as its email, the subscription in its
// chat block, the payment's amount.
func (m *Money) chatRecord(pay subscription.Payment, ev stripe.Event, event audit.Event, arrived time.Time) audit.Record {
	now := m.Now()
	return audit.Record{
		Timestamp:      now.UTC(),
		SessionCreated: time.Unix(ev.Created, 0).UTC(),
		Email:          pay.Account,
		LatencyMS:      max(now.Sub(arrived).Milliseconds(), 0),
		Status:         audit.StatusOK,
		Source:         audit.SourceChat,
		Event:          event,
		EventID:        ev.ID,
		Livemode:       ev.Livemode,
		AmountTotal:    pay.Amount,
		Currency:       pay.Currency,
		Chat:           &audit.Chat{Subscription: pay.Subscription},
	}
}

// chatRefunded records the refund of a chat invoice's payment. The
// operator's (make ops ACTION=chat-refund, known by its idempotency key)
// is recorded by its action too, and cancels the subscription; one made in
// Stripe's Dashboard is alerted, since it leaves the subscription running.
func (m *Money) chatRefunded(ctx context.Context, log *slog.Logger, pay subscription.Payment, c stripe.Charge, byOperator bool, ev stripe.Event, arrived time.Time) error {
	amount := oracle.FormatAmount(c.AmountRefunded, string(c.Currency))
	r := m.chatRecord(pay, ev, audit.EventChargeRefunded, arrived)
	r.AmountRefunded = c.AmountRefunded
	id := audit.ChatRecordID(pay.Subscription, audit.NameRefunded, pay.Invoice)
	if !c.Refunded {
		r.Status, r.ErrorDetail = audit.StatusError, audit.Detail(fmt.Sprintf("partial refund: %s of %s", amount, oracle.FormatAmount(c.Amount, string(c.Currency))))
		id = audit.ChatRecordID(pay.Subscription, audit.NameRefundPartial, pay.Invoice, c.AmountRefunded)
	}
	if err := m.Audit.Require(ctx, r, id); err != nil {
		return err
	}
	if !byOperator {
		m.Alerts.Raise(ctx, alert.Alert{Severity: alert.Warn, Kind: alert.Refunded, Subject: pay.Subscription,
			Detail: fmt.Sprintf("%s of Sisters Chat invoice %s (subscription %s) was refunded in Stripe's Dashboard; the subscription goes on: cancel it in the Dashboard, or refund and cancel with make ops ACTION=chat-refund", amount, pay.Invoice, pay.Subscription)})
	}
	log.InfoContext(ctx, "chat refund recorded", "by_operator", byOperator, "full", c.Refunded)
	return nil
}

// chatDisputed records a dispute of a chat invoice's payment and alerts
// the operator, who answers it in Stripe's Dashboard (the chat keeps no
// evidence bundle: its conversation is the person's, and deleted by them).
func (m *Money) chatDisputed(ctx context.Context, log *slog.Logger, pay subscription.Payment, d stripe.Dispute, ev stripe.Event, arrived time.Time) error {
	amount := oracle.FormatAmount(d.Amount, string(d.Currency))
	r := m.chatRecord(pay, ev, audit.EventDisputeCreated, arrived)
	r.Status, r.ErrorDetail = audit.StatusError, audit.Detail(fmt.Sprintf("dispute %s opened: %s, %s", d.ID, d.Reason, amount))
	if err := m.Audit.Require(ctx, r, audit.ChatRecordID(pay.Subscription, audit.NameDispute, d.ID)); err != nil {
		return err
	}
	deadline := "no deadline given"
	if d.EvidenceDetails != nil && d.EvidenceDetails.DueBy > 0 {
		deadline = "evidence due by " + time.Unix(d.EvidenceDetails.DueBy, 0).UTC().Format(time.RFC3339)
	}
	m.Alerts.Raise(ctx, alert.Alert{Severity: alert.Critical, Kind: alert.DisputeOpened, Subject: pay.Subscription,
		Detail: fmt.Sprintf("dispute %s of %s (%s) on Sisters Chat invoice %s (subscription %s); %s; answer it in Stripe's Dashboard (the invoice and its period are the evidence), and end the subscription with make ops ACTION=chat-refund if it should not renew", d.ID, amount, d.Reason, pay.Invoice, pay.Subscription, deadline)})
	log.WarnContext(ctx, "chat dispute recorded", "dispute", d.ID)
	return nil
}

// chatWarned alerts Radar's warning on a chat invoice's payment, advising
// the refund that avoids a dispute.
func (m *Money) chatWarned(ctx context.Context, log *slog.Logger, pay subscription.Payment, w stripe.RadarEarlyFraudWarning, ev stripe.Event, arrived time.Time) error {
	r := m.chatRecord(pay, ev, audit.EventEarlyFraudWarned, arrived)
	r.Status, r.ErrorDetail = audit.StatusError, audit.Detail("early fraud warning: "+string(w.FraudType))
	if err := m.Audit.Require(ctx, r, audit.ChatRecordID(pay.Subscription, audit.NameFraudWarning, w.ID)); err != nil {
		return err
	}
	m.Alerts.Raise(ctx, alert.Alert{Severity: alert.Error, Kind: alert.EarlyFraudWarning, Subject: pay.Subscription,
		Detail: fmt.Sprintf("Radar warns that the payment of Sisters Chat invoice %s (subscription %s) was fraudulent (%s, actionable: %t); refund it and end the subscription now to avoid a dispute: make ops ACTION=chat-refund with the account's address", pay.Invoice, pay.Subscription, w.FraudType, w.Actionable)})
	log.WarnContext(ctx, "chat fraud warning recorded", "warning", w.ID)
	return nil
}
