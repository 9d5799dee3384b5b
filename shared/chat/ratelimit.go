package chat

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Window is a rate limit: at most Limit requests in each fixed window of
// length Per.
type Window struct {
	Limit int
	Per   time.Duration
}

// The sign-in link's rate limits: per account (an inbox is not flooded)
// and per client (one client does not mail many inboxes).
var (
	SignInPerAccount = Window{Limit: 5, Per: time.Hour}
	SignInPerClient  = Window{Limit: 20, Per: time.Hour}
)

// GiveBacksPerDay bounds the exchanges given back to one account in a UTC
// day when the person got the apology instead of a reply: each cost four
// model calls, so past it the exchange counts.
var GiveBacksPerDay = Window{Limit: 3, Per: 24 * time.Hour}

const skLimit = "limit"

// SignInAccountLimit is the name under which an account's sign-in
// requests are counted (Allow with SignInPerAccount): its windows are the
// account's, and its erasure deletes them.
func SignInAccountLimit(account string) string { return "signin-acct#" + account }

// GiveBackLimit names an account's give-backs window (GiveBacksPerDay).
func GiveBackLimit(account string) string { return "giveback#" + account }

// limitKey is the key of name's window that starts at start.
func limitKey(name string, start time.Time) map[string]types.AttributeValue {
	return key("limit#"+name+"#"+strconv.FormatInt(start.Unix(), 10), skLimit)
}

// Allow counts one request against the window w of name (an account's or
// a client's keyed hash, with what it is for) and reports whether it is
// within the limit: one conditional update on the window's item, which
// expires with the window. A refused request is not counted.
func (s *Store) Allow(ctx context.Context, name string, w Window) (bool, error) {
	if w.Limit < 1 || w.Per <= 0 {
		return false, fmt.Errorf("rate limit %s: invalid window %+v", name, w)
	}
	now := s.now()
	start := now.Truncate(w.Per)
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           aws.String(s.table),
		Key:                 limitKey(name, start),
		UpdateExpression:    aws.String("ADD n :one SET expires_at = :exp"),
		ConditionExpression: aws.String("attribute_not_exists(n) OR n < :limit"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":one":   num(1),
			":limit": num(w.Limit),
			":exp":   &types.AttributeValueMemberN{Value: strconv.FormatInt(start.Add(w.Per).Unix(), 10)},
		},
	})
	var failed *types.ConditionalCheckFailedException
	if errors.As(err, &failed) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("rate limit: %w", err)
	}
	return true, nil
}
