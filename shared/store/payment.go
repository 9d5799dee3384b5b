package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// PaymentIntentIndex is the Orders table's index by payment intent (keys
// only): Stripe's charge events name the payment intent, not the session.
const PaymentIntentIndex = "by_payment_intent"

// ErrPaymentIntentShared says two orders claim one payment intent, which
// Stripe never makes: an order written by something else than a claim.
var ErrPaymentIntentShared = errors.New("more than one order has this payment intent")

// SessionOfPaymentIntent returns the session whose order was paid with the
// payment intent pi. The index is eventually consistent: an order claimed
// a moment ago may not be found yet, and the caller's trigger is retried.
func (o *OrderIndex) SessionOfPaymentIntent(ctx context.Context, pi string) (sessionID string, found bool, err error) {
	if pi == "" {
		return "", false, nil
	}
	out, err := o.db.Query(ctx, &dynamodb.QueryInput{
		TableName:                 aws.String(o.table),
		IndexName:                 aws.String(PaymentIntentIndex),
		KeyConditionExpression:    aws.String("payment_intent = :pi"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pi": &types.AttributeValueMemberS{Value: pi}},
		Limit:                     aws.Int32(2),
	})
	if err != nil {
		return "", false, fmt.Errorf("find the order of payment intent %s: %w", pi, err)
	}
	switch len(out.Items) {
	case 0:
		return "", false, nil
	case 1:
		v, ok := out.Items[0]["session_id"].(*types.AttributeValueMemberS)
		if !ok {
			return "", false, fmt.Errorf("find the order of payment intent %s: an index item without its session", pi)
		}
		return v.Value, true, nil
	}
	return "", false, fmt.Errorf("payment intent %s: %w", pi, ErrPaymentIntentShared)
}
