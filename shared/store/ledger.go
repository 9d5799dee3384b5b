package store

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Ledger is the table of small idempotency and rate records: processed
// Stripe events, alert dedupe windows, and later regeneration limits, the
// circuit breaker and health counters. Each record expires by TTL.
type Ledger struct {
	db    *dynamodb.Client
	table string
	now   func() time.Time
}

// NewLedger uses table through db; now is the clock (time.Now when nil).
func NewLedger(db *dynamodb.Client, table string, now func() time.Time) *Ledger {
	if now == nil {
		now = time.Now
	}
	return &Ledger{db: db, table: table, now: now}
}

// Seen reports whether key is recorded and has not expired. DynamoDB's TTL
// deletes lazily, so expiry is checked here too.
func (l *Ledger) Seen(ctx context.Context, key string) (bool, error) {
	out, err := l.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(l.table),
		Key:            map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: key}},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return false, fmt.Errorf("read ledger: %w", err)
	}
	if out.Item == nil {
		return false, nil
	}
	exp, ok := out.Item["expires_at"].(*types.AttributeValueMemberN)
	if !ok {
		return true, nil
	}
	var sec int64
	if _, err := fmt.Sscan(exp.Value, &sec); err != nil {
		return true, nil
	}
	return sec > l.now().Unix(), nil
}

// Mark records key for ttl; first is false when a live record already
// existed, which makes Mark a "first caller wins" guard (alert dedupe
// windows, event ids).
func (l *Ledger) Mark(ctx context.Context, key string, ttl time.Duration) (first bool, err error) {
	now := l.now()
	_, err = l.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(l.table),
		Item: map[string]types.AttributeValue{
			"pk":         &types.AttributeValueMemberS{Value: key},
			"created_at": &types.AttributeValueMemberS{Value: now.UTC().Format(time.RFC3339Nano)},
			"expires_at": &types.AttributeValueMemberN{Value: fmt.Sprint(now.Add(ttl).Unix())},
		},
		ConditionExpression: aws.String("attribute_not_exists(pk) OR expires_at <= :now"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":now": &types.AttributeValueMemberN{Value: fmt.Sprint(now.Unix())},
		},
	})
	if err == nil {
		return true, nil
	}
	if isConditionFailed(err) {
		return false, nil
	}
	return false, fmt.Errorf("write ledger: %w", err)
}
