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

// The suppression list: addresses, as keyed hashes, that complained about
// an email and are not emailed again. Its records do not expire.

// suppressionKey is the Ledger key of an address's keyed hash.
func suppressionKey(emailHash string) string { return "suppress#" + emailHash }

// Suppress puts the address whose keyed hash is emailHash on the
// suppression list, saying why; first is false when it was already there.
func (l *Ledger) Suppress(ctx context.Context, emailHash, reason string) (first bool, err error) {
	r, err := condwrite.Put(ctx, l.db, &dynamodb.PutItemInput{
		TableName: aws.String(l.table),
		Item: map[string]types.AttributeValue{
			"pk":         &types.AttributeValueMemberS{Value: suppressionKey(emailHash)},
			"reason":     &types.AttributeValueMemberS{Value: reason},
			"created_at": &types.AttributeValueMemberS{Value: l.now().UTC().Format(time.RFC3339Nano)},
		},
		ConditionExpression: aws.String("attribute_not_exists(pk)"),
	})
	if err != nil {
		return false, fmt.Errorf("suppress an address: %w", err)
	}
	return r.Applied, nil
}

// Suppressed reports whether the address whose keyed hash is emailHash is
// on the suppression list.
func (l *Ledger) Suppressed(ctx context.Context, emailHash string) (bool, error) {
	ok, err := l.Seen(ctx, suppressionKey(emailHash))
	if err != nil {
		return false, fmt.Errorf("read the suppression list: %w", err)
	}
	return ok, nil
}
