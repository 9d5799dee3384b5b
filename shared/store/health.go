package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"42sisters.ai/oracle/shared/health"
)

// The health job's Ledger keys: the latest run's record, each run's record
// for a short history, and each check's state between runs.
const (
	healthLatestKey = "health#latest"
	healthRunPrefix = "health#run#"
	healthCheckKey  = "health#check#"
)

// PutHealth keeps rec as the latest run and, for history, under its own
// key for keep.
func (l *Ledger) PutHealth(ctx context.Context, rec health.Record, keep time.Duration) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("encode the health record: %w", err)
	}
	at := rec.At.UTC().Format(time.RFC3339Nano)
	for _, k := range []string{healthRunPrefix + at, healthLatestKey} {
		item := map[string]types.AttributeValue{
			"pk":         &types.AttributeValueMemberS{Value: k},
			"record":     &types.AttributeValueMemberS{Value: string(b)},
			"at":         &types.AttributeValueMemberS{Value: at},
			"expires_at": number(l.now().Add(keep).Unix()),
		}
		if k == healthLatestKey {
			// The latest outlives the history, so a stopped job reads as
			// stale rather than as no record at all.
			item["expires_at"] = number(l.now().Add(30 * 24 * time.Hour).Unix())
		}
		if _, err := l.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(l.table), Item: item}); err != nil {
			return fmt.Errorf("write the health record: %w", err)
		}
	}
	return nil
}

// LatestHealth returns the latest run's record; found is false before the
// first run.
func (l *Ledger) LatestHealth(ctx context.Context) (rec health.Record, found bool, err error) {
	out, err := l.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(l.table),
		Key:            map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: healthLatestKey}},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return health.Record{}, false, fmt.Errorf("read the health record: %w", err)
	}
	s, ok := out.Item["record"].(*types.AttributeValueMemberS)
	if !ok {
		return health.Record{}, false, nil
	}
	if err := json.Unmarshal([]byte(s.Value), &rec); err != nil {
		return health.Record{}, false, fmt.Errorf("read the health record: %w", err)
	}
	return rec, true, nil
}

// CheckStates returns the kept state of each named check (the zero state
// for a check never kept).
func (l *Ledger) CheckStates(ctx context.Context, names []string) (map[string]health.CheckState, error) {
	states := make(map[string]health.CheckState, len(names))
	for _, name := range names {
		out, err := l.db.GetItem(ctx, &dynamodb.GetItemInput{
			TableName:      aws.String(l.table),
			Key:            map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: healthCheckKey + name}},
			ConsistentRead: aws.Bool(true),
		})
		if err != nil {
			return nil, fmt.Errorf("read the state of check %s: %w", name, err)
		}
		var st health.CheckState
		if out.Item != nil {
			if err := attributevalue.UnmarshalMap(out.Item, &st); err != nil {
				return nil, fmt.Errorf("read the state of check %s: %w", name, err)
			}
		}
		states[name] = st
	}
	return states, nil
}

// PutCheckState keeps a check's state for keep (a check no longer run
// is forgotten).
func (l *Ledger) PutCheckState(ctx context.Context, name string, st health.CheckState, keep time.Duration) error {
	item, err := attributevalue.MarshalMap(st)
	if err != nil {
		return fmt.Errorf("encode the state of check %s: %w", name, err)
	}
	item["pk"] = &types.AttributeValueMemberS{Value: healthCheckKey + name}
	item["expires_at"] = number(l.now().Add(keep).Unix())
	if _, err := l.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(l.table), Item: item}); err != nil {
		return fmt.Errorf("keep the state of check %s: %w", name, err)
	}
	return nil
}

// deadLetterCountKey counts the dead letters recorded from one queue.
func deadLetterCountKey(queue string) string { return "deadletter-count#" + queue }

// countDeadLetter adds one to the queue's dead-letter count.
func (l *Ledger) countDeadLetter(ctx context.Context, queue string) error {
	_, err := l.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(l.table),
		Key:                       map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: deadLetterCountKey(queue)}},
		UpdateExpression:          aws.String("ADD recorded :one"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":one": number(1)},
	})
	if err != nil {
		return fmt.Errorf("count the dead letter from %s: %w", queue, err)
	}
	return nil
}

// NewDeadLetters returns how many dead letters were recorded from queue
// since the last call, and marks them seen.
func (l *Ledger) NewDeadLetters(ctx context.Context, queue string) (int64, error) {
	out, err := l.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(l.table),
		Key:                       map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: deadLetterCountKey(queue)}},
		UpdateExpression:          aws.String("SET seen = if_not_exists(recorded, :zero)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":zero": number(0)},
		ReturnValues:              types.ReturnValueAllOld,
	})
	if err != nil {
		return 0, fmt.Errorf("read the dead letters from %s: %w", queue, err)
	}
	return intAttr(out.Attributes, "recorded") - intAttr(out.Attributes, "seen"), nil
}

func intAttr(item map[string]types.AttributeValue, name string) int64 {
	n, ok := item[name].(*types.AttributeValueMemberN)
	if !ok {
		return 0
	}
	v, _ := strconv.ParseInt(n.Value, 10, 64)
	return v
}
