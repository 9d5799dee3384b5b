// Package chat keeps Sisters Chat's accounts in the chat table: the
// account (the address's only copy and what it has used), its sign-in
// tokens and its conversation, each under the address's keyed hash
// (audit.Hasher.Email), which is the account's name everywhere else.
package chat

import (
	"context"
	"errors"
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

// Item keys: every item of an account shares its partition.
const (
	skAccount = "account"
	skSignIn  = "signin"
)

func accountPK(account string) string { return "acct#" + account }

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
