// Package chat keeps Sisters Chat's accounts in the chat table: the
// account (the address's only copy and what it has used), its sign-in
// tokens and its conversation, each under the address's keyed hash
// (audit.Hasher.Email), which is the account's name everywhere else.
package chat

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"42sisters.ai/oracle/shared/audit"
)

// Tables is what the store needs of DynamoDB (awsenv.Tables).
type Tables interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
}

// Store is the chat table.
type Store struct {
	db     Tables
	table  string
	hasher *audit.Hasher
	now    func() time.Time
}

// NewStore uses table through db, naming accounts with hasher; now is the
// clock (time.Now when nil).
func NewStore(db Tables, table string, hasher *audit.Hasher, now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{db: db, table: table, hasher: hasher, now: now}
}

// ErrNoAccount: no account has that name.
var ErrNoAccount = errors.New("chat: no such account")

// Item keys: every item of an account shares its partition, apart from
// its sign-in tokens (keyed by the token's hash, so that a link finds its
// item), which an index partition of their own lists, and its rate windows.
const (
	skAccount = "account"
	skSignIn  = "signin"
)

func accountPK(account string) string { return "acct#" + account }

// signInIndexPK is the partition that lists account's sign-in tokens, one
// item per token (its sort key the token item's key), so that an erasure
// finds them. It starts with signin# as the token items do: the mailer,
// which mints tokens, may write only there.
func signInIndexPK(account string) string { return "signin#acct#" + account }

// UnconfirmedTTL is how long an account whose sign-in link was never used
// is kept after its latest sign-in request: the table's TTL (expires_at)
// then forgets the address. The first sign-in removes it.
const UnconfirmedTTL = 24 * time.Hour

// expired reports whether item has an expiry (expires_at, the table's TTL)
// at or before now: DynamoDB removes such an item lazily, up to days
// later, and until then every reader treats it as absent.
func expired(item map[string]types.AttributeValue, now time.Time) bool {
	v, ok := item["expires_at"].(*types.AttributeValueMemberN)
	if !ok {
		return false
	}
	at, err := strconv.ParseInt(v.Value, 10, 64)
	return err == nil && at <= now.Unix()
}

func unix(t time.Time) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(t.Unix(), 10)}
}

func key(pk, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: pk},
		"sk": &types.AttributeValueMemberS{Value: sk},
	}
}

func str(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }

func stringOf(item map[string]types.AttributeValue, name string) string {
	if v, ok := item[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}
