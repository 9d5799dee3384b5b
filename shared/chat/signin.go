package chat

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"42sisters.ai/oracle/shared/chatsession"
	"42sisters.ai/oracle/shared/condwrite"
	"42sisters.ai/oracle/shared/oracle"
)

// SignInTTL is how long a sign-in link works.
const SignInTTL = 15 * time.Minute

// Why a sign-in link is refused.
var (
	// ErrSignInInvalid: not a token this service could have minted, or
	// none it did.
	ErrSignInInvalid = errors.New("chat: sign-in link is not valid")
	ErrSignInUsed    = errors.New("chat: sign-in link was already used")
	ErrSignInExpired = errors.New("chat: sign-in link has expired")
)

// signInPK names a token's item by the token's SHA-256: the table never
// holds a working token, so reading it signs no one in.
func signInPK(token string) string {
	sum := sha256.Sum256([]byte(token))
	return "signin#" + hex.EncodeToString(sum[:])
}

// IssueSignIn mints a single-use sign-in token for account, valid for
// SignInTTL: the mailer calls it as it sends the link, so that each email
// carries its own. The token is listed under its account first (an item
// of the account's sign-in index, expiring with it), so that no token of
// an account escapes its erasure.
func (s *Store) IssueSignIn(ctx context.Context, account string) (token string, expires time.Time, err error) {
	token, err = oracle.RandomBase62(rand.Reader, chatsession.TokenLen)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("mint sign-in token: %w", err)
	}
	now := s.now()
	expires = now.Add(SignInTTL)
	pk := signInPK(token)
	// Written again by a retry, the same item: no condition needed.
	if _, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(s.table),
		Item: map[string]types.AttributeValue{
			"pk":         str(signInIndexPK(account)),
			"sk":         str(pk),
			"expires_at": unix(expires),
		},
	}); err != nil {
		return "", time.Time{}, fmt.Errorf("list sign-in token: %w", err)
	}
	r, err := condwrite.Put(ctx, s.db, &dynamodb.PutItemInput{
		TableName: aws.String(s.table),
		Item: map[string]types.AttributeValue{
			"pk":         str(pk),
			"sk":         str(skSignIn),
			"account":    str(account),
			"created_at": str(now.UTC().Format(time.RFC3339Nano)),
			"expires_at": unix(expires),
		},
		ConditionExpression: aws.String("attribute_not_exists(pk)"),
	})
	if err != nil {
		return "", time.Time{}, fmt.Errorf("store sign-in token: %w", err)
	}
	if !r.Applied {
		return "", time.Time{}, fmt.Errorf("store sign-in token: a token collided")
	}
	return token, expires, nil
}

// ConsumeSignIn spends token and returns its account: once only (a
// conditional write), and only before it expires. The first sign-in
// confirms the account: its expiry (UnconfirmedTTL) is removed in the same
// call, so that a confirmed account never keeps one. A refusal is
// ErrSignInInvalid (also when the account is gone: erased, or forgotten
// unconfirmed), ErrSignInUsed or ErrSignInExpired.
func (s *Store) ConsumeSignIn(ctx context.Context, token string) (account string, err error) {
	if !chatsession.WellFormed(token) {
		return "", ErrSignInInvalid
	}
	now := s.now()
	r, err := condwrite.Update(ctx, s.db, &dynamodb.UpdateItemInput{
		TableName:           aws.String(s.table),
		Key:                 key(signInPK(token), skSignIn),
		UpdateExpression:    aws.String("SET used_at = :now, write_id = :wid"),
		ConditionExpression: aws.String("attribute_exists(pk) AND attribute_not_exists(used_at) AND expires_at > :unix"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":now":  str(now.UTC().Format(time.RFC3339Nano)),
			":unix": unix(now),
		},
		ReturnValues: types.ReturnValueAllNew,
	})
	if err != nil {
		return "", fmt.Errorf("spend sign-in token: %w", err)
	}
	if r.Applied {
		account = stringOf(r.Current, "account")
		if err := s.confirm(ctx, account, now); err != nil {
			return "", err
		}
		return account, nil
	}
	switch {
	case r.Current == nil:
		return "", ErrSignInInvalid
	case stringOf(r.Current, "used_at") != "":
		return "", ErrSignInUsed
	default:
		return "", ErrSignInExpired
	}
}

// confirm marks account as signed in once (confirmed_at, kept from the
// first) and removes its expiry: ErrSignInInvalid when it has no account
// item, or only one whose time has passed.
func (s *Store) confirm(ctx context.Context, account string, now time.Time) error {
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           aws.String(s.table),
		Key:                 key(accountPK(account), skAccount),
		UpdateExpression:    aws.String("SET confirmed_at = if_not_exists(confirmed_at, :now) REMOVE expires_at"),
		ConditionExpression: aws.String("attribute_exists(pk) AND (attribute_not_exists(expires_at) OR expires_at > :unix)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":now":  str(now.UTC().Format(time.RFC3339Nano)),
			":unix": unix(now),
		},
	})
	if condwrite.ConditionFailed(err) {
		return ErrSignInInvalid
	}
	if err != nil {
		return fmt.Errorf("confirm the account: %w", err)
	}
	return nil
}
