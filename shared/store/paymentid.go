package store

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"42sisters.ai/oracle/shared/condwrite"
)

// PaymentUse is what an x402 payment identifier was first used for: the
// payment (its authorization's Ledger key and its signature's digest), the
// request it paid (a keyed hash of the tier and the query) and the order
// it made. A retry that brings the same three gets that order's answer; a
// retry that differs in any is another purchase under a used identifier.
type PaymentUse struct {
	Authorization string
	Signature     string
	Request       string
	Order         string
}

// Same reports whether u and v are one purchase: the same payment for the
// same request (the order is the first use's, whatever v says).
func (u PaymentUse) Same(v PaymentUse) bool {
	return u.Authorization == v.Authorization && u.Signature == v.Signature && u.Request == v.Request
}

// paymentIDKey is the Ledger key of one payment identifier: the client's
// id as sent (16 to 128 of [A-Za-z0-9_-], checked by x402.PaymentIdentifier).
func paymentIDKey(id string) string { return "x402pid#" + id }

// ClaimPaymentID records use under the payment identifier id, kept for
// ttl (the order's retention), in one conditional write: of concurrent
// requests carrying id exactly one claims it (first), and the others learn
// the use it was claimed for, read in the same round trip.
func (l *Ledger) ClaimPaymentID(ctx context.Context, id string, use PaymentUse, ttl time.Duration) (claimed PaymentUse, first bool, err error) {
	item := map[string]types.AttributeValue{
		"pk":            &types.AttributeValueMemberS{Value: paymentIDKey(id)},
		"authorization": &types.AttributeValueMemberS{Value: use.Authorization},
		"signature":     &types.AttributeValueMemberS{Value: use.Signature},
		"request":       &types.AttributeValueMemberS{Value: use.Request},
		"order_id":      &types.AttributeValueMemberS{Value: use.Order},
		"created_at":    &types.AttributeValueMemberS{Value: l.now().UTC().Format(time.RFC3339Nano)},
		"expires_at":    &types.AttributeValueMemberN{Value: fmt.Sprint(l.now().Add(ttl).Unix())},
	}
	r, err := condwrite.Put(ctx, l.db, &dynamodb.PutItemInput{
		TableName:           aws.String(l.table),
		Item:                item,
		ConditionExpression: aws.String("attribute_not_exists(pk)"),
	})
	if err != nil {
		return PaymentUse{}, false, fmt.Errorf("claim the payment identifier: %w", err)
	}
	if r.Applied {
		return use, true, nil
	}
	str := func(name string) string {
		if v, ok := r.Current[name].(*types.AttributeValueMemberS); ok {
			return v.Value
		}
		return ""
	}
	return PaymentUse{Authorization: str("authorization"), Signature: str("signature"), Request: str("request"), Order: str("order_id")}, false, nil
}

// ReleasePaymentID lets id be used again when its claim is still order's:
// the purchase it named ended with no money moved, and a retry under the
// same id is a fresh attempt.
func (l *Ledger) ReleasePaymentID(ctx context.Context, id, order string) error {
	_, err := l.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                 aws.String(l.table),
		Key:                       map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: paymentIDKey(id)}},
		ConditionExpression:       aws.String("order_id = :order"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":order": &types.AttributeValueMemberS{Value: order}},
	})
	if err != nil && !condwrite.ConditionFailed(err) {
		return fmt.Errorf("release the payment identifier: %w", err)
	}
	return nil
}
