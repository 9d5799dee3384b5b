package chat

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// AccountOf is the name of the account of an address: its keyed hash,
// trimmed and lower-cased as every keyed hash of an address is.
func (s *Store) AccountOf(email string) string { return s.hasher.Email(email) }

// SignUp makes sure the account of email exists and holds the address as
// the person last wrote it, and returns the account's name; created
// reports whether this call made it. An account starts with its whole
// trial.
func (s *Store) SignUp(ctx context.Context, email string) (account string, created bool, err error) {
	account = s.AccountOf(email)
	if account == "" {
		return "", false, fmt.Errorf("sign up: empty address")
	}
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:        aws.String(s.table),
		Key:              key(accountPK(account), skAccount),
		UpdateExpression: aws.String("SET email = :e, created_at = if_not_exists(created_at, :now), trial_used = if_not_exists(trial_used, :zero)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":e":    str(email),
			":now":  str(s.now().UTC().Format(time.RFC3339Nano)),
			":zero": &types.AttributeValueMemberN{Value: "0"},
		},
		ReturnValues: types.ReturnValueAllOld,
	})
	if err != nil {
		return "", false, fmt.Errorf("sign up: %w", err)
	}
	// A retried request whose first attempt was applied sees its own
	// created_at here and says "not created": only a welcome would differ.
	_, existed := out.Attributes["created_at"]
	return account, !existed, nil
}

// Address is the account's address, for its sign-in links and billing
// notices: ErrNoAccount when there is no such account.
func (s *Store) Address(ctx context.Context, account string) (string, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:            aws.String(s.table),
		Key:                  key(accountPK(account), skAccount),
		ConsistentRead:       aws.Bool(true),
		ProjectionExpression: aws.String("email"),
	})
	if err != nil {
		return "", fmt.Errorf("read account: %w", err)
	}
	email := stringOf(out.Item, "email")
	if email == "" {
		return "", ErrNoAccount
	}
	return email, nil
}

// RemoveAccount deletes the account's item (its address, counts and
// grants), reporting whether there was one: the smoke test's cleanup, so
// that its next run starts with a whole trial. Its messages are forgotten
// apart (Conversation.Forget) and its sign-in tokens expire on their own.
func (s *Store) RemoveAccount(ctx context.Context, account string) (removed bool, err error) {
	if account == "" {
		return false, fmt.Errorf("remove account: no account named")
	}
	out, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:    aws.String(s.table),
		Key:          key(accountPK(account), skAccount),
		ReturnValues: types.ReturnValueAllOld,
	})
	if err != nil {
		return false, fmt.Errorf("remove account: %w", err)
	}
	return len(out.Attributes) > 0, nil
}
