package store

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// AuthorizationKey is the Ledger key of one EIP-3009 authorization, by its
// canonical id (x402.AuthorizationID: the token contract on its network,
// the payer and the payer's nonce, which the contract lets settle once).
func AuthorizationKey(id string) string { return "x402auth#" + id }

// ClaimAuthorization records that the authorization under key pays for
// order, before anything about it costs money: of concurrent or replayed
// requests carrying one authorization exactly one claims it (first), and
// the others learn the order it was claimed for (owner). The claim is kept
// for ttl, longer than any authorization stays valid, so a replay is
// refused for as long as it could be settled.
func (l *Ledger) ClaimAuthorization(ctx context.Context, key, order string, ttl time.Duration) (owner string, first bool, err error) {
	first, err = l.putOnce(ctx, key, map[string]types.AttributeValue{
		"order_id":   &types.AttributeValueMemberS{Value: order},
		"created_at": &types.AttributeValueMemberS{Value: l.now().UTC().Format(time.RFC3339Nano)},
	}, ttl)
	if err != nil {
		return "", false, fmt.Errorf("claim the authorization: %w", err)
	}
	if first {
		return order, true, nil
	}
	out, err := l.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(l.table),
		Key:            map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: key}},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return "", false, fmt.Errorf("read the authorization's claim: %w", err)
	}
	if v, ok := out.Item["order_id"].(*types.AttributeValueMemberS); ok {
		owner = v.Value
	}
	return owner, false, nil
}
