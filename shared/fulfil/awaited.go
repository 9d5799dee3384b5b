package fulfil

import (
	"context"
	"time"

	"42sisters.ai/oracle/shared/oracle"
)

// Awaiter moves on an order its caller made AWAITING_PAYMENT itself
// (store.Orders).
type Awaiter interface {
	ClaimAwaited(ctx context.Context, want oracle.Order, lease time.Duration) (oracle.Claim, error)
}

// ClaimAwaited is ClaimPaid for an order its caller made AWAITING_PAYMENT
// itself, at want.CreatedAt (an agent's, written before its settlement):
// a claims it PAID in one conditional write, where ClaimPaid's claim first
// tries to create it and is refused. The order becomes PAID once however
// many callers race, and the one that claims it enqueues its single
// generation job, as ClaimPaid.
func (f *Service) ClaimAwaited(ctx context.Context, a Awaiter, want oracle.Order) (Result, error) {
	return f.claimPaid(ctx, want, a.ClaimAwaited)
}
