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

	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/condwrite"
	"42sisters.ai/oracle/shared/oracle"
)

// Orders is the orders table.
type Orders struct {
	db    *awsenv.Tables
	table string
	now   func() time.Time
}

// NewOrders uses table through db; now is the clock (time.Now when nil).
func NewOrders(db *awsenv.Tables, table string, now func() time.Time) *Orders {
	if now == nil {
		now = time.Now
	}
	return &Orders{db: db, table: table, now: now}
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
	if err != nil {
		return oracle.Order{}, false, fmt.Errorf("get order %s: %w", oracle.ShortID(sessionID), err)
	}
	return ord, true, nil
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
func (o *Orders) ClaimOrder(ctx context.Context, want oracle.Order, lease time.Duration) (oracle.Claim, error) {
	now := o.now().UTC()
	want.CreatedAt, want.UpdatedAt = now, now
	row := storedOf(want)
	if want.OwesJob() {
		token, err := condwrite.Token()
		if err != nil {
			return oracle.Claim{}, err
		}
		row.JobLeaseUntil, row.JobLease = now.Add(lease).UnixMilli(), token
	}
	item, err := attributevalue.MarshalMap(row)
	if err != nil {
		return oracle.Claim{}, fmt.Errorf("encode order: %w", err)
	}
	_, err = o.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                           aws.String(o.table),
		Item:                                item,
		ConditionExpression:                 aws.String("attribute_not_exists(session_id)"),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err == nil {
		return oracle.Claim{Outcome: oracle.Claimed, Order: want, Lease: row.JobLease}, nil
	}
	old, err := conditionFailedItem(err)
	if err != nil {
		return oracle.Claim{}, fmt.Errorf("claim order %s: %w", oracle.ShortID(want.SessionID), err)
	}
	existing := old.order()
	if row.JobLease != "" && old.JobLease == row.JobLease {
		// A retried request whose first attempt created the order.
		return oracle.Claim{Outcome: oracle.Claimed, Order: existing, Lease: row.JobLease}, nil
	}
	if existing.Status == oracle.StatusAwaitingPayment && want.Status != oracle.StatusAwaitingPayment {
		c, ok, err := o.advance(ctx, existing, row)
		if err != nil || ok {
			return c, err
		}
		var found bool
		if existing, found, err = o.Get(ctx, want.SessionID); err != nil {
			return oracle.Claim{}, err
		} else if !found {
			return oracle.Claim{}, fmt.Errorf("claim order %s: the order vanished during the claim", oracle.ShortID(want.SessionID))
		}
	}
	c, err := o.resume(ctx, existing, now, lease)
	if err == nil && c.Outcome == oracle.InFlight && want.Status == oracle.StatusAwaitingPayment {
		// An unpaid session's event, the order already past it: its job is
		// the paid event's, whose holder sends it (and whose claims answer
		// for it), not this event's to wait for.
		c.Outcome = oracle.Done
	}
	return c, err
}

// advance moves an AWAITING_PAYMENT order to want's state; ok is false when
// another caller changed it first.
func (o *Orders) advance(ctx context.Context, existing oracle.Order, want stored) (oracle.Claim, bool, error) {
	want.CreatedAt = existing.CreatedAt
	item, err := attributevalue.MarshalMap(want)
	if err != nil {
		return oracle.Claim{}, false, fmt.Errorf("encode order: %w", err)
	}
	r, err := condwrite.Put(ctx, o.db, &dynamodb.PutItemInput{
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
	if err != nil {
		return oracle.Claim{}, false, fmt.Errorf("advance order %s: %w", oracle.ShortID(want.SessionID), err)
	}
	if !r.Applied {
		return oracle.Claim{}, false, nil
	}
	return oracle.Claim{Outcome: oracle.Claimed, Order: want.order(), Lease: want.JobLease}, true, nil
}

// resume takes the job lease of an order whose job was never enqueued.
func (o *Orders) resume(ctx context.Context, existing oracle.Order, now time.Time, lease time.Duration) (oracle.Claim, error) {
	if !existing.OwesJob() || existing.JobEnqueuedAt != nil {
		return oracle.Claim{Outcome: oracle.Done, Order: existing}, nil
	}
	// The token is the lease, so a retried request whose first attempt took
	// it still holds it instead of finding the order in flight.
	r, err := condwrite.UpdateLease(ctx, o.db, &dynamodb.UpdateItemInput{
		TableName:           aws.String(o.table),
		Key:                 key(existing.SessionID),
		UpdateExpression:    aws.String("SET job_lease_until = :until, job_lease = :wid, updated_at = :now"),
		ConditionExpression: aws.String("#s = :status AND attribute_not_exists(job_enqueued_at) AND (attribute_not_exists(job_lease_until) OR job_lease_until < :nowms)"),
		ExpressionAttributeNames: map[string]string{
			"#s": "status",
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":until":  &types.AttributeValueMemberN{Value: fmt.Sprint(now.Add(lease).UnixMilli())},
			":nowms":  &types.AttributeValueMemberN{Value: fmt.Sprint(now.UnixMilli())},
			":now":    &types.AttributeValueMemberS{Value: now.Format(time.RFC3339Nano)},
			":status": &types.AttributeValueMemberS{Value: string(existing.Status)},
		},
		ReturnValues: types.ReturnValueAllNew,
	}, "job_lease")
	if err != nil {
		return oracle.Claim{}, fmt.Errorf("take job lease %s: %w", oracle.ShortID(existing.SessionID), err)
	}
	if r.Current == nil {
		return oracle.Claim{}, fmt.Errorf("take job lease %s: the order vanished during the claim", oracle.ShortID(existing.SessionID))
	}
	current, err := decode(r.Current)
	if err != nil {
		return oracle.Claim{}, fmt.Errorf("take job lease %s: %w", oracle.ShortID(existing.SessionID), err)
	}
	if r.Applied {
		return oracle.Claim{Outcome: oracle.Resumed, Order: current, Lease: r.Token}, nil
	}
	if current.OwesJob() && current.JobEnqueuedAt == nil && current.Status == existing.Status {
		return oracle.Claim{Outcome: oracle.InFlight, Order: current}, nil
	}
	return oracle.Claim{Outcome: oracle.Done, Order: current}, nil
}

// JobEnqueued records that the order's job is on its queue and frees the
// lease. It fails with ErrLeaseLost when lease is no longer the order's.
func (o *Orders) JobEnqueued(ctx context.Context, sessionID, lease string) error {
	now := o.now().UTC()
	_, err := o.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           aws.String(o.table),
		Key:                 key(sessionID),
		UpdateExpression:    aws.String("SET job_enqueued_at = :now, updated_at = :now REMOVE job_lease_until, job_lease"),
		ConditionExpression: aws.String("job_lease = :lease"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":now":   &types.AttributeValueMemberS{Value: now.Format(time.RFC3339Nano)},
			":lease": &types.AttributeValueMemberS{Value: lease},
		},
	})
	if condwrite.ConditionFailed(err) {
		return fmt.Errorf("record job enqueued for %s: %w", oracle.ShortID(sessionID), ErrLeaseLost)
	}
	if err != nil {
		return fmt.Errorf("record job enqueued for %s: %w", oracle.ShortID(sessionID), err)
	}
	return nil
}

// ReleaseJobLease frees the job lease after a failed enqueue, so that the
// next attempt (a Stripe retry, the landing path) need not wait for it. A
// lease that is no longer the caller's is left alone.
func (o *Orders) ReleaseJobLease(ctx context.Context, sessionID, lease string) error {
	_, err := o.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           aws.String(o.table),
		Key:                 key(sessionID),
		UpdateExpression:    aws.String("REMOVE job_lease_until, job_lease"),
		ConditionExpression: aws.String("job_lease = :lease AND attribute_not_exists(job_enqueued_at)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":lease": &types.AttributeValueMemberS{Value: lease},
		},
	})
	if err != nil && !condwrite.ConditionFailed(err) {
		return fmt.Errorf("release job lease for %s: %w", oracle.ShortID(sessionID), err)
	}
	return nil
}

// ErrLeaseLost means another attempt took over the order's job lease.
var ErrLeaseLost = errors.New("the job lease was taken over by another attempt")

func key(sessionID string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"session_id": &types.AttributeValueMemberS{Value: sessionID}}
}

func decode(item map[string]types.AttributeValue) (oracle.Order, error) {
	row, err := decodeStored(item)
	o := row.order()
	o.Mail = mailStates(item)
	return o, err
}

func decodeStored(item map[string]types.AttributeValue) (stored, error) {
	var row stored
	if err := attributevalue.UnmarshalMap(item, &row); err != nil {
		return stored{}, fmt.Errorf("decode order: %w", err)
	}
	return row, nil
}

// conditionFailedItem returns the order a failed condition check reported, or
// err itself when the failure was something else.
func conditionFailedItem(err error) (stored, error) {
	item, ok := condwrite.Failed(err)
	if !ok {
		return stored{}, err
	}
	if item == nil {
		return stored{}, fmt.Errorf("condition failed without the current item: %w", err)
	}
	return decodeStored(item)
}
