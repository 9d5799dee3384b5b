package store

import (
	"context"
	"time"

	"42sisters.ai/oracle/shared/condwrite"
	"42sisters.ai/oracle/shared/oracle"
)

// ClaimAwaited is ClaimOrder for an order its caller made AWAITING_PAYMENT
// itself, at want.CreatedAt (an agent's, written before its settlement):
// want replaces it in one conditional write, the order still awaiting
// payment its condition, with no create tried first that the caller knows
// would be refused. Whatever else is found (another state, no order) goes
// to ClaimOrder, which decides as ever; so does a want without its
// CreatedAt.
func (o *Orders) ClaimAwaited(ctx context.Context, want oracle.Order, lease time.Duration) (oracle.Claim, error) {
	if want.CreatedAt.IsZero() || want.Status == oracle.StatusAwaitingPayment {
		return o.ClaimOrder(ctx, want, lease)
	}
	now := o.now().UTC()
	want.UpdatedAt = now
	row := storedOf(want)
	if want.OwesJob() {
		token, err := condwrite.Token()
		if err != nil {
			return oracle.Claim{}, err
		}
		row.JobLeaseUntil, row.JobLease = now.Add(lease).UnixMilli(), token
	}
	c, ok, err := o.advance(ctx, want, row)
	if err != nil || ok {
		return c, err
	}
	return o.ClaimOrder(ctx, want, lease)
}
