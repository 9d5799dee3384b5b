package stripex

import (
	"context"
	"errors"
	"fmt"

	"github.com/stripe/stripe-go/v76"
	"github.com/stripe/stripe-go/v76/refund"

	"42sisters.ai/oracle/shared/secret"
)

// Refunds makes refunds with one key. It is apart from Client, so that
// only the function that refunds links Stripe's refund client.
type Refunds struct {
	backend stripe.Backend
	key     *secret.Value
}

// NewRefunds returns a refund client using key.
func NewRefunds(key string, o Options) *Refunds { return NewRefundsWithKey(secret.Static(key), o) }

// NewRefundsWithKey returns a refund client using key as last read, read
// again when Stripe refuses it (see NewWithKey).
func NewRefundsWithKey(key *secret.Value, o Options) *Refunds {
	return &Refunds{backend: backend(o), key: key}
}

// ErrAlreadyRefunded means the payment was refunded before, in full.
var ErrAlreadyRefunded = errors.New("the payment is already refunded")

// Refund is a refund Stripe made.
type Refund struct {
	ID     string
	Amount int64
	Status string
	// Replayed is set when Stripe answered with the refund an earlier
	// request of the same key made: this one made none.
	Replayed bool
}

// RefundKey is the idempotency key of the full refund of a session: the
// same refund asked twice (a retried action, an operator's double run)
// is made once. Stripe keeps a key for 24 hours; later, a second request
// is refused as already refunded.
func RefundKey(sessionID string) string { return "oracle-refund-" + sessionID }

// RefundSession refunds the whole payment of the session, whose payment
// intent is pi. It returns ErrAlreadyRefunded when nothing is left to
// refund.
func (c *Refunds) RefundSession(ctx context.Context, sessionID, pi string) (Refund, error) {
	return c.refund(ctx, pi, RefundKey(sessionID), "session_id", sessionID)
}

// ChatRefundKey is the idempotency key of the full refund of a chat
// subscription's invoice (see RefundKey).
func ChatRefundKey(invoice string) string { return "oracle-chat-refund-" + invoice }

// RefundInvoice refunds the whole payment of a chat subscription's paid
// invoice: ErrAlreadyRefunded when nothing is left to refund.
func (c *Refunds) RefundInvoice(ctx context.Context, in Invoice) (Refund, error) {
	if in.PaymentIntent == "" {
		return Refund{}, fmt.Errorf("refund invoice %s: it names no payment", in.ID)
	}
	return c.refund(ctx, in.PaymentIntent, ChatRefundKey(in.ID), "invoice", in.ID)
}

// refund refunds payment intent pi in full under idempotency key, with one
// metadata entry naming what it refunds.
func (c *Refunds) refund(ctx context.Context, pi, key, metaKey, metaValue string) (Refund, error) {
	p := &stripe.RefundParams{PaymentIntent: stripe.String(pi), Reason: stripe.String(string(stripe.RefundReasonRequestedByCustomer))}
	p.Context = ctx
	p.SetIdempotencyKey(key)
	p.AddMetadata(metaKey, metaValue)
	r, err := withKey(ctx, c.key, func(key string) (*stripe.Refund, error) { return (&refund.Client{B: c.backend, Key: key}).New(p) })
	if err != nil {
		var se *stripe.Error
		switch {
		case errors.As(err, &se) && se.Code == stripe.ErrorCodeChargeAlreadyRefunded:
			return Refund{}, fmt.Errorf("refund %s: %w", pi, ErrAlreadyRefunded)
		case errors.As(err, &se) && se.Code == stripe.ErrorCodeResourceMissing:
			return Refund{}, fmt.Errorf("refund %s: Stripe has no such payment with this key (request %s)", pi, se.RequestID)
		}
		return Refund{}, classify(err, "create refund")
	}
	replayed := r.LastResponse != nil && r.LastResponse.Header.Get("Idempotent-Replayed") == "true"
	return Refund{ID: r.ID, Amount: r.Amount, Status: string(r.Status), Replayed: replayed}, nil
}
