package chat

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"42sisters.ai/oracle/shared/mailaddr"
)

// AccountOf is the name of the account of an address: the keyed hash of
// its canonical form, as every keyed hash of an address is.
func (s *Store) AccountOf(email string) string { return s.hasher.Email(email) }

// SignUp makes sure the account of email exists, and returns its name;
// created reports whether this call made it. The account holds the
// address's canonical form (mailaddr.Canonical), the only one its email
// goes to, and the name of its trial; a request of no one signed in never
// changes an account's address. An address without a canonical form is
// refused.
func (s *Store) SignUp(ctx context.Context, email string) (account string, created bool, err error) {
	canonical, err := mailaddr.Canonical(email)
	if err != nil {
		return "", false, fmt.Errorf("sign up: %w", err)
	}
	account = s.AccountOf(canonical)
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:        aws.String(s.table),
		Key:              key(accountPK(account), skAccount),
		UpdateExpression: aws.String("SET email = if_not_exists(email, :e), trial = if_not_exists(trial, :trial), created_at = if_not_exists(created_at, :now)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":e":     str(canonical),
			":trial": str(s.trialOf(canonical)),
			":now":   str(s.now().UTC().Format(time.RFC3339Nano)),
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
// grants) and its trial's, reporting whether there was an account: the
// smoke test's cleanup, so that its next run starts with a whole trial.
// Its messages are forgotten apart (Conversation.Forget) and its sign-in
// tokens expire on their own. A person's erasure keeps the trial's item:
// that is what stops a new account from buying three more exchanges.
func (s *Store) RemoveAccount(ctx context.Context, account string) (removed bool, err error) {
	if account == "" {
		return false, fmt.Errorf("remove account: no account named")
	}
	got, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.table), Key: key(accountPK(account), skAccount), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return false, fmt.Errorf("remove account: %w", err)
	}
	// The trial first: a removal that fails between the two deletes is
	// run again on an account that still names its trial.
	trial := stringOf(got.Item, "trial")
	if trial == "" {
		trial = s.trialOf(stringOf(got.Item, "email"))
	}
	if trial != "" {
		if _, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(s.table), Key: key(trial, skTrial)}); err != nil {
			return false, fmt.Errorf("remove account: its trial: %w", err)
		}
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
