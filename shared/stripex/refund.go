package stripex

import (
	"context"
	"errors"
	"fmt"

	"github.com/stripe/stripe-go/v76"
)

// ErrAlreadyRefunded means the payment was refunded before, in full.
var ErrAlreadyRefunded = errors.New("the payment is already refunded")

// Refund is a refund Stripe made.
type Refund struct {
	ID     string
	Amount int64
	Status string
}

// RefundKey is the idempotency key of the full refund of a session: the
// same refund asked twice (a retried action, an operator's double run)
// is made once. Stripe keeps a key for 24 hours; later, a second request
// is refused as already refunded.
func RefundKey(sessionID string) string { return "oracle-refund-" + sessionID }

// RefundSession refunds the whole payment of the session, whose payment
// intent is pi. It returns ErrAlreadyRefunded when nothing is left to
// refund.
func (c *Client) RefundSession(ctx context.Context, sessionID, pi string) (Refund, error) {
	p := &stripe.RefundParams{PaymentIntent: stripe.String(pi), Reason: stripe.String(string(stripe.RefundReasonRequestedByCustomer))}
	p.Context = ctx
	p.SetIdempotencyKey(RefundKey(sessionID))
	p.AddMetadata("session_id", sessionID)
	r, err := c.refunds.New(p)
	if err != nil {
		var se *stripe.Error
		if errors.As(err, &se) && se.Code == stripe.ErrorCodeChargeAlreadyRefunded {
			return Refund{}, fmt.Errorf("refund %s: %w", pi, ErrAlreadyRefunded)
		}
		return Refund{}, classify(err, "create refund")
	}
	return Refund{ID: r.ID, Amount: r.Amount, Status: string(r.Status)}, nil
}
