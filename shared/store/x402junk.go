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

// PaymentJunk is a kind of x402 payment header that is no payment to
// record: anyone can send one at will, so each is counted, not audited.
type PaymentJunk string

// The kinds counted.
const (
	// JunkUndecodable: PAYMENT-SIGNATURE is not base64 of a JSON payment.
	JunkUndecodable PaymentJunk = "undecodable"
	// JunkMalformed: it decodes, but as no well-formed payment (a version,
	// scheme or field this service cannot read: x402.Malformed).
	JunkMalformed PaymentJunk = "malformed"
)

// JunkKinds are the kinds, in the order figures list them.
var JunkKinds = []PaymentJunk{JunkUndecodable, JunkMalformed}

// junkKeep is how long a day's count is kept: the health job reads today's
// and yesterday's.
const junkKeep = 8 * 24 * time.Hour

// junkKey is the Ledger key of kind's count on day (UTC): one item per kind
// and day, however many headers arrive.
func junkKey(kind PaymentJunk, day time.Time) string {
	return "x402junk#" + string(kind) + "#" + day.UTC().Format(time.DateOnly)
}

// CountPaymentJunk adds one to today's count of kind: one conditional
// update of the day's item, whose condition only a retry of this very
// write fails (condwrite), so a retried request is counted once.
func (l *Ledger) CountPaymentJunk(ctx context.Context, kind PaymentJunk) error {
	now := l.now()
	_, err := condwrite.Update(ctx, l.db, &dynamodb.UpdateItemInput{
		TableName:           aws.String(l.table),
		Key:                 map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: junkKey(kind, now)}},
		UpdateExpression:    aws.String("ADD n :one SET write_id = :wid, expires_at = if_not_exists(expires_at, :exp)"),
		ConditionExpression: aws.String("attribute_not_exists(write_id) OR write_id <> :wid"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":one": number(1),
			":exp": number(now.Add(junkKeep).Unix()),
		},
	})
	if err != nil {
		return fmt.Errorf("count the %s x402 payment: %w", kind, err)
	}
	return nil
}

// PaymentJunk returns each kind's count on day (UTC), zero for none.
func (l *Ledger) PaymentJunk(ctx context.Context, day time.Time) (map[PaymentJunk]int64, error) {
	out := make(map[PaymentJunk]int64, len(JunkKinds))
	for _, kind := range JunkKinds {
		got, err := l.db.GetItem(ctx, &dynamodb.GetItemInput{
			TableName:      aws.String(l.table),
			Key:            map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: junkKey(kind, day)}},
			ConsistentRead: aws.Bool(true),
		})
		if err != nil {
			return nil, fmt.Errorf("read the count of %s x402 payments: %w", kind, err)
		}
		out[kind] = intAttr(got.Item, "n")
	}
	return out, nil
}
