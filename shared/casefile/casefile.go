// Package casefile gathers what is known of one order: its state as the
// order store keeps it and its timeline from the audit log. The operator's
// `show` action prints it; a dispute's evidence bundle is built from it.
package casefile

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/oracle"
)

// Orders reads one order (store.Orders).
type Orders interface {
	Get(ctx context.Context, sessionID string) (oracle.Order, bool, error)
}

// Records reads one session's audit records (audit.Reader).
type Records interface {
	Session(ctx context.Context, sessionID string, created time.Time) ([]audit.Record, error)
}

// ErrNoOrder means the session has no order.
var ErrNoOrder = errors.New("no such order")

// File is one order's case: its state, without the customer's address or
// query, and every audit record of its session, oldest first.
type File struct {
	SessionID       string                               `json:"session_id"`
	Status          oracle.Status                        `json:"status"`
	Tier            oracle.Tier                          `json:"tier,omitempty"`
	Livemode        bool                                 `json:"livemode"`
	Smoke           bool                                 `json:"smoke,omitempty"`
	AmountTotal     int64                                `json:"amount_total"`
	Currency        string                               `json:"currency"`
	PaymentIntent   string                               `json:"payment_intent,omitempty"`
	Amount          string                               `json:"amount"` // AmountTotal as the alerts write it, e.g. 500_CAD
	SessionCreated  time.Time                            `json:"session_created"`
	PaidAt          *time.Time                           `json:"paid_at,omitempty"`
	GeneratedAt     *time.Time                           `json:"generated_at,omitempty"`
	Verdict         oracle.Verdict                       `json:"verdict,omitempty"`
	VerdictHash     string                               `json:"verdict_hash,omitempty"`
	Attempts        int                                  `json:"attempts,omitempty"`
	Failure         string                               `json:"failure,omitempty"`
	DropReason      oracle.DropReason                    `json:"drop_reason,omitempty"`
	QuarantineGate  string                               `json:"quarantine_gate,omitempty"`
	QuarantineTerms []string                             `json:"quarantine_terms,omitempty"`
	RefundID        string                               `json:"refund_id,omitempty"`
	RefundedAt      *time.Time                           `json:"refunded_at,omitempty"`
	RefundedBy      string                               `json:"refunded_by,omitempty"`
	DisputeID       string                               `json:"dispute_id,omitempty"`
	Mail            map[oracle.MailKind]oracle.MailState `json:"mail,omitempty"`
	Timeline        []audit.Record                       `json:"timeline"`
}

// Open reads the case of sessionID, and the order it was read from.
func Open(ctx context.Context, orders Orders, records Records, sessionID string) (File, oracle.Order, error) {
	o, found, err := orders.Get(ctx, sessionID)
	if err != nil {
		return File{}, oracle.Order{}, err
	}
	if !found {
		return File{}, oracle.Order{}, fmt.Errorf("%s: %w", oracle.ShortID(sessionID), ErrNoOrder)
	}
	recs, err := records.Session(ctx, sessionID, o.SessionCreated)
	if err != nil {
		return File{}, oracle.Order{}, fmt.Errorf("the timeline of %s: %w", oracle.ShortID(sessionID), err)
	}
	slices.SortStableFunc(recs, func(a, b audit.Record) int { return cmp.Compare(a.Timestamp.UnixNano(), b.Timestamp.UnixNano()) })
	return Of(o, recs), o, nil
}

// Of is the case of o with its records.
func Of(o oracle.Order, recs []audit.Record) File {
	if recs == nil {
		recs = []audit.Record{}
	}
	return File{
		SessionID: o.SessionID, Status: o.Status, Tier: o.Tier, Livemode: o.Livemode, Smoke: o.Smoke,
		AmountTotal: o.AmountTotal, Currency: o.Currency, PaymentIntent: o.PaymentIntent, Amount: oracle.FormatAmount(o.AmountTotal, o.Currency),
		SessionCreated: o.SessionCreated, PaidAt: o.PaidAt, GeneratedAt: o.GeneratedAt,
		Verdict: o.VerdictLabel, VerdictHash: o.VerdictHash, Attempts: o.Attempts, Failure: o.Failure, DropReason: o.DropReason,
		QuarantineGate: o.QuarantineGate, QuarantineTerms: o.QuarantineTerms,
		RefundID: o.RefundID, RefundedAt: o.RefundedAt, RefundedBy: o.RefundedBy, DisputeID: o.DisputeID,
		Mail: o.Mail, Timeline: recs,
	}
}
