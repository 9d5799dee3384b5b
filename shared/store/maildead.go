package store

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"42sisters.ai/oracle/shared/oracle"
)

// MailDeadLetter is the record of an email given up on: everything the
// operator's resend needs (the session and the kind: the email is rendered
// again from the stored order) and why, never the address or the message.
type MailDeadLetter struct {
	SessionID string          `dynamodbav:"session_id"`
	Kind      oracle.MailKind `dynamodbav:"mail_kind"`
	Transport string          `dynamodbav:"transport"`
	// Class is the last failure's class: transient when every attempt of
	// the schedule failed, permanent when the message was refused for good.
	Class    string    `dynamodbav:"class"`
	Livemode bool      `dynamodbav:"livemode"`
	Tries    []Try     `dynamodbav:"tries"`
	DeadAt   time.Time `dynamodbav:"dead_at"`
}

// MailDeadLetterKey is the Ledger key of the session's dead letter of kind.
func MailDeadLetterKey(sessionID string, kind oracle.MailKind) string {
	return "maildead#" + sessionID + "#" + string(kind)
}

// RecordMailDeadLetter writes d once, kept for ttl; first is false when
// the record was already there (a redelivered job), so that the caller
// alerts once.
func (l *Ledger) RecordMailDeadLetter(ctx context.Context, d MailDeadLetter, ttl time.Duration) (first bool, err error) {
	item, err := attributevalue.MarshalMap(d)
	if err != nil {
		return false, fmt.Errorf("encode mail dead letter of %s: %w", oracle.ShortID(d.SessionID), err)
	}
	first, err = l.putOnce(ctx, MailDeadLetterKey(d.SessionID, d.Kind), item, ttl)
	if err != nil {
		return false, fmt.Errorf("record mail dead letter of %s: %w", oracle.ShortID(d.SessionID), err)
	}
	return first, nil
}

// MailDeadLetter reads the session's dead letter of kind.
func (l *Ledger) MailDeadLetter(ctx context.Context, sessionID string, kind oracle.MailKind) (MailDeadLetter, bool, error) {
	out, err := l.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(l.table),
		Key:            map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: MailDeadLetterKey(sessionID, kind)}},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return MailDeadLetter{}, false, fmt.Errorf("read mail dead letter of %s: %w", oracle.ShortID(sessionID), err)
	}
	if out.Item == nil {
		return MailDeadLetter{}, false, nil
	}
	var d MailDeadLetter
	if err := attributevalue.UnmarshalMap(out.Item, &d); err != nil {
		return MailDeadLetter{}, false, fmt.Errorf("decode mail dead letter of %s: %w", oracle.ShortID(sessionID), err)
	}
	return d, true, nil
}
