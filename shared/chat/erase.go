package chat

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/condwrite"
)

// Erased is what an erasure deleted, counted: never a word of it.
type Erased struct {
	// Account: the account item, the address's only copy, was there.
	Account bool `json:"account"`
	// Messages are the conversation's messages.
	Messages int `json:"messages"`
	// Tokens are sign-in tokens (each with its index item).
	Tokens int `json:"signin_tokens"`
	// RateEntries are the account's sign-in rate windows.
	RateEntries int `json:"rate_entries"`
	// Other are the partition's other items: the subscription's state.
	Other int `json:"other_items"`
}

// Any reports whether anything was erased.
func (e Erased) Any() bool {
	return e.Account || e.Messages+e.Tokens+e.RateEntries+e.Other > 0
}

// Erase forgets account: its sign-in tokens, its rate windows (the
// sign-in requests', signIn's current and previous, and the give-backs'
// of today and yesterday), and every item of its partition (the
// conversation, the subscription's state, the account item with the
// address). The trial's count, kept under the trial identity's keyed hash
// apart from the account, stays: erasing buys no new trial. The account
// item goes last, so that a failure part way leaves the person signed in
// to ask again; the partition is then read once more, for what a request
// in flight wrote meanwhile (an exchange's messages, a subscription
// event's state). Erasing again erases nothing more, and is no error.
// Stripe is the caller's to settle first: Erase knows no subscription.
func (c *Conversation) Erase(ctx context.Context, account string, signIn Window) (Erased, error) {
	var out Erased
	if !strings.HasPrefix(account, audit.HashPrefix) {
		return out, fmt.Errorf("erase: not an account's name")
	}
	if signIn.Per <= 0 {
		return out, fmt.Errorf("erase: invalid sign-in window %+v", signIn)
	}
	if err := c.eraseTokens(ctx, account, &out); err != nil {
		return out, fmt.Errorf("erase the sign-in tokens: %w", err)
	}
	for _, w := range []struct {
		name string
		per  time.Duration
	}{{SignInAccountLimit(account), signIn.Per}, {GiveBackLimit(account), GiveBacksPerDay.Per}} {
		start := c.store.now().Truncate(w.per)
		for _, back := range []time.Duration{0, w.per} {
			gone, err := c.deleteItem(ctx, limitKey(w.name, start.Add(-back)))
			if err != nil {
				return out, fmt.Errorf("erase the rate windows: %w", err)
			}
			if gone {
				out.RateEntries++
			}
		}
	}
	if err := c.erasePartition(ctx, account, &out); err != nil {
		return out, fmt.Errorf("erase the account's items: %w", err)
	}
	gone, err := c.deleteItem(ctx, key(accountPK(account), skAccount))
	if err != nil {
		return out, fmt.Errorf("erase the account: %w", err)
	}
	out.Account = gone
	if err := c.erasePartition(ctx, account, &out); err != nil {
		return out, fmt.Errorf("erase the account's items: %w", err)
	}
	return out, nil
}

// eraseTokens deletes every token the account's sign-in index lists, then
// the index's items.
func (c *Conversation) eraseTokens(ctx context.Context, account string, out *Erased) error {
	var reqs []types.WriteRequest
	err := c.eachItem(ctx, signInIndexPK(account), func(it map[string]types.AttributeValue) {
		reqs = append(reqs,
			deleteRequest(stringOf(it, "sk"), skSignIn),
			deleteRequest(stringOf(it, "pk"), stringOf(it, "sk")))
		out.Tokens++
	})
	if err != nil {
		return err
	}
	return c.write(ctx, reqs)
}

// erasePartition deletes the items of the account's partition but its
// account item, counting them into out, and the link from each
// subscription they name back to the account (shared/subscription's
// sub#<id>, which only that account's link is deleted).
func (c *Conversation) erasePartition(ctx context.Context, account string, out *Erased) error {
	var (
		reqs []types.WriteRequest
		subs []string
	)
	err := c.eachItem(ctx, accountPK(account), func(it map[string]types.AttributeValue) {
		sk := stringOf(it, "sk")
		switch {
		case sk == skAccount:
			return
		case strings.HasPrefix(sk, skMessage):
			out.Messages++
		default:
			out.Other++
		}
		if id := stringOf(it, "subscription"); id != "" {
			subs = append(subs, id)
		}
		reqs = append(reqs, deleteRequest(stringOf(it, "pk"), sk))
	})
	if err != nil {
		return err
	}
	for _, id := range subs {
		if err := c.unlink(ctx, account, id); err != nil {
			return err
		}
	}
	return c.write(ctx, reqs)
}

// unlink deletes subscription id's link to account, if it is account's.
func (c *Conversation) unlink(ctx context.Context, account, id string) error {
	_, err := c.store.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                 aws.String(c.store.table),
		Key:                       key("sub#"+id, skSubscriptionLink),
		ConditionExpression:       aws.String("attribute_not_exists(pk) OR account = :a"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":a": str(account)},
	})
	if condwrite.ConditionFailed(err) {
		return nil // another account's: not this erasure's
	}
	return err
}

// skSubscriptionLink is the sort key of shared/subscription's link from a
// subscription to its account.
const skSubscriptionLink = "subscription"

// eachItem calls fn with the key, and the subscription it names, of every
// item of partition pk, page after page.
func (c *Conversation) eachItem(ctx context.Context, pk string, fn func(map[string]types.AttributeValue)) error {
	return c.each(ctx, &dynamodb.QueryInput{
		TableName:                 aws.String(c.store.table),
		KeyConditionExpression:    aws.String("pk = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(pk)},
		ProjectionExpression:      aws.String("pk, sk, subscription"),
		ConsistentRead:            aws.Bool(true),
	}, fn)
}

// deleteItem deletes one item, reporting whether there was one.
func (c *Conversation) deleteItem(ctx context.Context, k map[string]types.AttributeValue) (bool, error) {
	out, err := c.store.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:    aws.String(c.store.table),
		Key:          k,
		ReturnValues: types.ReturnValueAllOld,
	})
	if err != nil {
		return false, err
	}
	return len(out.Attributes) > 0, nil
}

func deleteRequest(pk, sk string) types.WriteRequest {
	return types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: key(pk, sk)}}
}
