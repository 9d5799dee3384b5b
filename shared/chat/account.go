package chat

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"42sisters.ai/oracle/shared/condwrite"
	"42sisters.ai/oracle/shared/mailaddr"
)

// AccountOf is the name of the account of an address: the keyed hash of
// its canonical form, as every keyed hash of an address is.
func (s *Store) AccountOf(email string) string { return s.hasher.Email(email) }

// SignUp makes sure the account of email exists, and returns the
// account's name; created reports whether this call made it. The account
// holds the address's canonical form (mailaddr.Canonical), the only one
// its email goes to, and the name of its trial; an address without a
// canonical form is refused. A sign-in request proves nothing of who sent
// it, so SignUp never changes an existing account's address. An account
// whose link was never used (unconfirmed: it has an expires_at) is
// forgotten UnconfirmedTTL after its latest request; one whose time has
// passed, which the table has not yet removed, is made afresh. A
// confirmed account (its first sign-in, ConsumeSignIn) keeps no expiry,
// and SignUp writes nothing to it.
func (s *Store) SignUp(ctx context.Context, email string) (account string, created bool, err error) {
	canonical, err := mailaddr.Canonical(email)
	if err != nil {
		return "", false, fmt.Errorf("sign up: %w", err)
	}
	account = s.AccountOf(canonical)
	now := s.now()
	exp := now.Add(UnconfirmedTTL)
	// Two writes race here only with another request of the same address,
	// a sign-in or an erasure: each round sees a state the last one left.
	for range signUpRounds {
		// condwrite: a retried attempt whose first was applied is still
		// "created".
		r, err := condwrite.Update(ctx, s.db, &dynamodb.UpdateItemInput{
			TableName:           aws.String(s.table),
			Key:                 key(accountPK(account), skAccount),
			UpdateExpression:    aws.String("SET email = :e, #trial = :trial, created_at = :now, expires_at = :exp, write_id = :wid"),
			ConditionExpression: aws.String("attribute_not_exists(pk) OR expires_at <= :unix"),
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":e":     str(canonical),
				":trial": str(s.trialOf(canonical)),
				":now":   str(now.UTC().Format(time.RFC3339Nano)),
				":exp":   unix(exp),
				":unix":  unix(now),
			},
			ExpressionAttributeNames: map[string]string{"#trial": "trial"},
		})
		if err != nil {
			return "", false, fmt.Errorf("sign up: %w", err)
		}
		if r.Applied {
			return account, true, nil
		}
		if _, unconfirmed := r.Current["expires_at"]; !unconfirmed {
			return account, false, nil
		}
		// Not yet confirmed: its time starts again from this request.
		r, err = condwrite.Update(ctx, s.db, &dynamodb.UpdateItemInput{
			TableName:           aws.String(s.table),
			Key:                 key(accountPK(account), skAccount),
			UpdateExpression:    aws.String("SET expires_at = :exp, write_id = :wid"),
			ConditionExpression: aws.String("expires_at > :unix"),
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":exp":  unix(exp),
				":unix": unix(now),
			},
		})
		if err != nil {
			return "", false, fmt.Errorf("sign up: %w", err)
		}
		if _, unconfirmed := r.Current["expires_at"]; r.Applied || (r.Current != nil && !unconfirmed) {
			return account, false, nil
		}
		// Erased or expired meanwhile: made afresh in the next round.
	}
	return "", false, fmt.Errorf("sign up: the account kept changing")
}

// signUpRounds bounds SignUp's races.
const signUpRounds = 3

// Address is the account's address, for its sign-in links and billing
// notices: ErrNoAccount when there is no such account (or only one whose
// time has passed).
func (s *Store) Address(ctx context.Context, account string) (string, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:            aws.String(s.table),
		Key:                  key(accountPK(account), skAccount),
		ConsistentRead:       aws.Bool(true),
		ProjectionExpression: aws.String("email, expires_at"),
	})
	if err != nil {
		return "", fmt.Errorf("read account: %w", err)
	}
	email := stringOf(out.Item, "email")
	if email == "" || expired(out.Item, s.now()) {
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
