// Package store keeps orders and the ledger in DynamoDB. Every state change
// is a conditional write naming the state it expects, so concurrent
// duplicates (Stripe retries, the landing path racing the webhook) resolve to
// exactly one winner.
package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"42sisters.ai/oracle/shared/oracle"
)

// Orders is the orders table.
type Orders struct {
	db    *dynamodb.Client
	table string
	now   func() time.Time
}

// NewOrders uses table through db; now is the clock (time.Now when nil).
func NewOrders(db *dynamodb.Client, table string, now func() time.Time) *Orders {
	if now == nil {
		now = time.Now
	}
	return &Orders{db: db, table: table, now: now}
}

// Outcome says what a claim found and what its caller must do next.
type Outcome int

// Claim outcomes.
const (
	// Claimed: this call recorded the order's state first; if the state owes
	// a job, the caller holds the job lease and must enqueue it.
	Claimed Outcome = iota + 1
	// Resumed: the state was recorded before but its job was never
	// enqueued (an earlier attempt failed); this call took the job lease and
	// must enqueue it.
	Resumed
	// InFlight: another attempt holds a live job lease; nothing was done.
	InFlight
	// Done: the state was recorded and nothing is owed; a duplicate.
	Done
)

func (o Outcome) String() string {
	return [...]string{"unknown", "claimed", "resumed", "in_flight", "done"}[o]
}

// Claim is the result of ClaimOrder.
type Claim struct {
	Outcome Outcome
	Order   oracle.Order // the order as stored after the claim
}

// MustEnqueue reports whether the caller now owes the order's job.
func (c Claim) MustEnqueue() bool {
	return (c.Outcome == Claimed || c.Outcome == Resumed) && c.Order.Status.OwesJob()
}

// Get returns an order; found is false when there is none.
func (o *Orders) Get(ctx context.Context, sessionID string) (oracle.Order, bool, error) {
	out, err := o.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(o.table),
		Key:            key(sessionID),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return oracle.Order{}, false, fmt.Errorf("get order %s: %w", oracle.ShortID(sessionID), err)
	}
	if out.Item == nil {
		return oracle.Order{}, false, nil
	}
	ord, err := decode(out.Item)
	return ord, err == nil, err
}

// ClaimOrder records want (an order in the state a payment event implies)
// exactly once across concurrent callers:
//   - no order yet: want is created (Claimed);
//   - AWAITING_PAYMENT and want is a later state: it moves there (Claimed);
//   - a state that owes a job not yet enqueued: the job lease is taken if
//     free (Resumed), else InFlight;
//   - anything else: Done. A paid order never moves back.
//
// When the resulting state owes a job, the lease lasts for lease.
func (o *Orders) ClaimOrder(ctx context.Context, want oracle.Order, lease time.Duration) (Claim, error) {
	now := o.now().UTC()
	want.CreatedAt, want.UpdatedAt = now, now
	if want.Status.OwesJob() {
		want.JobLeaseUntil = now.Add(lease).UnixMilli()
	}
	item, err := attributevalue.MarshalMap(want)
	if err != nil {
		return Claim{}, fmt.Errorf("encode order: %w", err)
	}
	_, err = o.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                           aws.String(o.table),
		Item:                                item,
		ConditionExpression:                 aws.String("attribute_not_exists(session_id)"),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err == nil {
		return Claim{Outcome: Claimed, Order: want}, nil
	}
	existing, err := conditionFailedItem(err)
	if err != nil {
		return Claim{}, fmt.Errorf("claim order %s: %w", oracle.ShortID(want.SessionID), err)
	}
	if existing.Status == oracle.StatusAwaitingPayment && want.Status != oracle.StatusAwaitingPayment {
		c, ok, err := o.advance(ctx, existing, want, now)
		if err != nil || ok {
			return c, err
		}
		if existing, _, err = o.Get(ctx, want.SessionID); err != nil {
			return Claim{}, err
		}
	}
	return o.resume(ctx, existing, now, lease)
}

// advance moves an AWAITING_PAYMENT order to want's state; ok is false when
// another caller changed it first.
func (o *Orders) advance(ctx context.Context, existing, want oracle.Order, now time.Time) (Claim, bool, error) {
	want.CreatedAt = existing.CreatedAt
	item, err := attributevalue.MarshalMap(want)
	if err != nil {
		return Claim{}, false, fmt.Errorf("encode order: %w", err)
	}
	_, err = o.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:           aws.String(o.table),
		Item:                item,
		ConditionExpression: aws.String("#s = :awaiting"),
		ExpressionAttributeNames: map[string]string{
			"#s": "status",
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":awaiting": &types.AttributeValueMemberS{Value: string(oracle.StatusAwaitingPayment)},
		},
	})
	if err == nil {
		return Claim{Outcome: Claimed, Order: want}, true, nil
	}
	if isConditionFailed(err) {
		return Claim{}, false, nil
	}
	return Claim{}, false, fmt.Errorf("advance order %s: %w", oracle.ShortID(want.SessionID), err)
}

// resume takes the job lease of an order whose job was never enqueued.
func (o *Orders) resume(ctx context.Context, existing oracle.Order, now time.Time, lease time.Duration) (Claim, error) {
	if !existing.Status.OwesJob() || existing.JobEnqueuedAt != nil {
		return Claim{Outcome: Done, Order: existing}, nil
	}
	until := now.Add(lease).UnixMilli()
	out, err := o.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           aws.String(o.table),
		Key:                 key(existing.SessionID),
		UpdateExpression:    aws.String("SET job_lease_until = :until, updated_at = :now"),
		ConditionExpression: aws.String("#s = :status AND attribute_not_exists(job_enqueued_at) AND (attribute_not_exists(job_lease_until) OR job_lease_until < :nowms)"),
		ExpressionAttributeNames: map[string]string{
			"#s": "status",
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":until":  &types.AttributeValueMemberN{Value: fmt.Sprint(until)},
			":nowms":  &types.AttributeValueMemberN{Value: fmt.Sprint(now.UnixMilli())},
			":now":    &types.AttributeValueMemberS{Value: now.Format(time.RFC3339Nano)},
			":status": &types.AttributeValueMemberS{Value: string(existing.Status)},
		},
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err == nil {
		ord, err := decode(out.Attributes)
		if err != nil {
			return Claim{}, err
		}
		return Claim{Outcome: Resumed, Order: ord}, nil
	}
	current, cerr := conditionFailedItem(err)
	if cerr != nil {
		return Claim{}, fmt.Errorf("take job lease %s: %w", oracle.ShortID(existing.SessionID), cerr)
	}
	if current.Status.OwesJob() && current.JobEnqueuedAt == nil && current.Status == existing.Status {
		return Claim{Outcome: InFlight, Order: current}, nil
	}
	return Claim{Outcome: Done, Order: current}, nil
}

// JobEnqueued records that the order's job is on its queue and frees the lease.
func (o *Orders) JobEnqueued(ctx context.Context, sessionID string) error {
	now := o.now().UTC()
	_, err := o.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           aws.String(o.table),
		Key:                 key(sessionID),
		UpdateExpression:    aws.String("SET job_enqueued_at = :now, updated_at = :now REMOVE job_lease_until"),
		ConditionExpression: aws.String("attribute_exists(session_id)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":now": &types.AttributeValueMemberS{Value: now.Format(time.RFC3339Nano)},
		},
	})
	if err != nil {
		return fmt.Errorf("record job enqueued for %s: %w", oracle.ShortID(sessionID), err)
	}
	return nil
}

// ReleaseJobLease frees the job lease after a failed enqueue, so that the
// next attempt (a Stripe retry, the landing path) need not wait for it.
func (o *Orders) ReleaseJobLease(ctx context.Context, sessionID string) error {
	_, err := o.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           aws.String(o.table),
		Key:                 key(sessionID),
		UpdateExpression:    aws.String("REMOVE job_lease_until"),
		ConditionExpression: aws.String("attribute_exists(session_id) AND attribute_not_exists(job_enqueued_at)"),
	})
	if err != nil && !isConditionFailed(err) {
		return fmt.Errorf("release job lease for %s: %w", oracle.ShortID(sessionID), err)
	}
	return nil
}

func key(sessionID string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"session_id": &types.AttributeValueMemberS{Value: sessionID}}
}

func decode(item map[string]types.AttributeValue) (oracle.Order, error) {
	var ord oracle.Order
	if err := attributevalue.UnmarshalMap(item, &ord); err != nil {
		return oracle.Order{}, fmt.Errorf("decode order: %w", err)
	}
	return ord, nil
}

func isConditionFailed(err error) bool {
	var ccf *types.ConditionalCheckFailedException
	return errors.As(err, &ccf)
}

// conditionFailedItem returns the item a failed condition check reported, or
// err itself when the failure was something else.
func conditionFailedItem(err error) (oracle.Order, error) {
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		return oracle.Order{}, err
	}
	if ccf.Item == nil {
		return oracle.Order{}, fmt.Errorf("condition failed without the current item: %w", err)
	}
	return decode(ccf.Item)
}
