package store

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The suppression list: addresses, as keyed hashes, that complained about
// an email and are not emailed again. Its records do not expire.

// suppressionKey is the Ledger key of an address's keyed hash.
func suppressionKey(emailHash string) string { return "suppress#" + emailHash }

// Suppress puts the address whose keyed hash is emailHash on the
// suppression list, saying why; first is false when it was already there.
func (l *Ledger) Suppress(ctx context.Context, emailHash, reason string) (first bool, err error) {
	first, err = l.putOnce(ctx, suppressionKey(emailHash), map[string]types.AttributeValue{
		"reason":     &types.AttributeValueMemberS{Value: reason},
		"created_at": &types.AttributeValueMemberS{Value: l.now().UTC().Format(time.RFC3339Nano)},
	}, 0)
	if err != nil {
		return false, fmt.Errorf("suppress an address: %w", err)
	}
	return first, nil
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
