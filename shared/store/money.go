package store

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"42sisters.ai/oracle/shared/oracle"
)

// Refund is a full refund of an order's payment, as Stripe made it.
type Refund struct {
	ID     string // Stripe's refund id (re_...) or, from a charge event, the charge's
	Amount int64  // in the currency's smallest unit
	By     string // RefundedByOperator or RefundedInStripe
}

// Who refunded: the operator's ops action, or someone in Stripe's
// Dashboard.
const (
	RefundedByOperator = "operator"
	RefundedInStripe   = "stripe"
)

// refundable are the states a full refund may close: every paid state.
// A refund during generation takes the generator's lease away, so the
// verdict it may still produce is never stored over the refund.
var refundable = []oracle.Status{oracle.StatusPaid, oracle.StatusGenerating, oracle.StatusReady, oracle.StatusDropped,
	oracle.StatusHeld, oracle.StatusQuarantined, oracle.StatusFailed}

// MarkRefunded records a full refund: the order becomes REFUNDED, from any
// paid state, once. It reports whether this call made the change; false
// also when the order is already refunded or was never paid (the caller
// reads the order to tell which).
func (o *Orders) MarkRefunded(ctx context.Context, sessionID string, r Refund) (bool, error) {
	values := map[string]types.AttributeValue{
		":refunded": &types.AttributeValueMemberS{Value: string(oracle.StatusRefunded)},
		":rid":      &types.AttributeValueMemberS{Value: r.ID},
		":amount":   number(r.Amount),
		":by":       &types.AttributeValueMemberS{Value: r.By},
	}
	cond := "#s IN ("
	for i, s := range refundable {
		name := fmt.Sprintf(":r%d", i)
		values[name] = &types.AttributeValueMemberS{Value: string(s)}
		if i > 0 {
			cond += ", "
		}
		cond += name
	}
	cond += ")"
	return o.transition(ctx, "mark refunded", sessionID,
		"#s = :refunded, refund_id = :rid, refunded_amount = :amount, refunded_by = :by, refunded_at = :now "+
			"REMOVE gen_lease_until, gen_lease, parked_since, job_due_at",
		cond, values)
}

// MarkDisputed records that the cardholder disputed the order's payment:
// the dispute's id and when it was opened, once per dispute. It reports
// whether this call recorded it.
func (o *Orders) MarkDisputed(ctx context.Context, sessionID, disputeID string, opened time.Time) (bool, error) {
	return o.transition(ctx, "mark disputed", sessionID,
		"dispute_id = :d, disputed_at = :at",
		"attribute_exists(#s) AND (attribute_not_exists(dispute_id) OR dispute_id <> :d)",
		map[string]types.AttributeValue{
			":d":  &types.AttributeValueMemberS{Value: disputeID},
			":at": &types.AttributeValueMemberS{Value: opened.UTC().Format(time.RFC3339Nano)},
		})
}
