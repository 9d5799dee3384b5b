package store

import (
	"context"
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

// Ledger is the table of small idempotency and rate records: processed
// Stripe events, alert dedupe windows, regeneration limits, the circuit
// breaker, health counters and first verdicts kept past their orders. Each
// record expires by TTL.
type Ledger struct {
	db    *awsenv.Tables
	table string
	now   func() time.Time
}

// NewLedger uses table through db; now is the clock (time.Now when nil).
func NewLedger(db *awsenv.Tables, table string, now func() time.Time) *Ledger {
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
	return !expired(out.Item, l.now()), nil
}

// Mark records key for ttl; first is false when a live record already
// existed, which makes Mark a "first caller wins" guard (alert dedupe
// windows, event ids).
func (l *Ledger) Mark(ctx context.Context, key string, ttl time.Duration) (first bool, err error) {
	now := l.now()
	// Put adds a write_id, so that a request the SDK retried after its
	// answer was lost recognises its own first mark instead of a live one.
	r, err := condwrite.Put(ctx, l.db, &dynamodb.PutItemInput{
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
	if err != nil {
		return false, fmt.Errorf("write ledger: %w", err)
	}
	return r.Applied, nil
}

// originalKey is the Ledger key of a session's first verdict.
func originalKey(sessionID string) string { return "original#" + sessionID }

// KeepOriginal records the label and hash of a session's first verdict for
// ttl, beyond the order's own retention, so that a verdict generated again
// after the order expired can still be compared with the one emailed
// (REGEN-GAP-02). The first label and hash stand; each call (a later
// regeneration) extends the record's life.
func (l *Ledger) KeepOriginal(ctx context.Context, sessionID string, o oracle.Original, ttl time.Duration) error {
	now := l.now()
	_, err := l.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(l.table),
		Key:       map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: originalKey(sessionID)}},
		UpdateExpression: aws.String("SET verdict = if_not_exists(verdict, :v), verdict_hash = if_not_exists(verdict_hash, :h), " +
			"created_at = if_not_exists(created_at, :now), expires_at = :exp"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":v":   &types.AttributeValueMemberS{Value: string(o.Verdict)},
			":h":   &types.AttributeValueMemberS{Value: o.Hash},
			":now": &types.AttributeValueMemberS{Value: now.UTC().Format(time.RFC3339Nano)},
			":exp": &types.AttributeValueMemberN{Value: fmt.Sprint(now.Add(ttl).Unix())},
		},
	})
	if err != nil {
		return fmt.Errorf("keep the original verdict of %s: %w", oracle.ShortID(sessionID), err)
	}
	return nil
}

// Original returns the session's first verdict as KeepOriginal recorded it,
// if it is kept and has not expired.
func (l *Ledger) Original(ctx context.Context, sessionID string) (oracle.Original, bool, error) {
	out, err := l.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(l.table),
		Key:            map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: originalKey(sessionID)}},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return oracle.Original{}, false, fmt.Errorf("read the original verdict of %s: %w", oracle.ShortID(sessionID), err)
	}
	var rec struct {
		Verdict   oracle.Verdict `dynamodbav:"verdict"`
		Hash      string         `dynamodbav:"verdict_hash"`
		ExpiresAt int64          `dynamodbav:"expires_at"`
	}
	if out.Item == nil {
		return oracle.Original{}, false, nil
	}
	if err := attributevalue.UnmarshalMap(out.Item, &rec); err != nil {
		return oracle.Original{}, false, fmt.Errorf("read the original verdict of %s: %w", oracle.ShortID(sessionID), err)
	}
	if rec.ExpiresAt <= l.now().Unix() {
		return oracle.Original{}, false, nil // TTL deletes lazily
	}
	return oracle.Original{Verdict: rec.Verdict, Hash: rec.Hash}, true, nil
}

// Release deletes key, so that a guard taken by a step that then failed
// does not hold off its retry for the whole window.
func (l *Ledger) Release(ctx context.Context, key string) error {
	_, err := l.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(l.table),
		Key:       map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: key}},
	})
	if err != nil {
		return fmt.Errorf("release ledger mark: %w", err)
	}
	return nil
}

// putOnce writes item under key unless a record is there (first is false
// then), kept for ttl (for good when ttl is 0): the guard that makes a
// record, and what follows it, happen once. The write recognises its own
// first attempt when the SDK retried it.
func (l *Ledger) putOnce(ctx context.Context, key string, item map[string]types.AttributeValue, ttl time.Duration) (first bool, err error) {
	item["pk"] = &types.AttributeValueMemberS{Value: key}
	if ttl > 0 {
		item["expires_at"] = &types.AttributeValueMemberN{Value: fmt.Sprint(l.now().Add(ttl).Unix())}
	}
	r, err := condwrite.Put(ctx, l.db, &dynamodb.PutItemInput{
		TableName:           aws.String(l.table),
		Item:                item,
		ConditionExpression: aws.String("attribute_not_exists(pk)"),
	})
	if err != nil {
		return false, err
	}
	return r.Applied, nil
}
