// Package condwrite makes DynamoDB conditional writes that recognise their
// own first attempt. The SDK retries a request whose answer was lost (a
// dropped connection, a garbled response); when the first attempt was
// applied, the retry's condition then fails on the state that attempt made,
// and a plain conditional write would report a lost race for a change it
// made itself: a stuck lease, a verdict without its email, a skipped alert.
// So each write stores a random token of its own, and a failed check whose
// item (ReturnValuesOnConditionCheckFailure ALL_OLD) still carries that
// token counts as applied.
package condwrite

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// writeID is the attribute in which Update and Put store their token.
const writeID = "write_id"

// placeholder is the expression value that holds the token.
const placeholder = ":wid"

var mentionsPlaceholder = regexp.MustCompile(placeholder + `\b`)

// Updater is what Update needs of a DynamoDB client.
type Updater interface {
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
}

// Putter is what Put needs of a DynamoDB client.
type Putter interface {
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
}

// Result is what a conditional write did.
type Result struct {
	// Applied reports whether the write took effect, through this request
	// or through an earlier attempt of it whose answer was lost.
	Applied bool
	// Token is the write's token when Applied: the write_id it stored, or
	// the lease UpdateLease took.
	Token string
	// Current is the item as the write left or found it. Applied by this
	// request: UpdateItem's Attributes (what in.ReturnValues asked for), or
	// Put's item. Applied by an earlier attempt: the whole item, as the
	// retry's failed check returned it. Not applied: the item that failed
	// the condition, nil when there is none.
	Current map[string]types.AttributeValue
}

// Token returns a random 128-bit token in hex, for write ids and leases.
func Token() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("random token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// Update makes the conditional update in with a fresh token, which it puts
// in in.ExpressionAttributeValues[":wid"]; the caller's UpdateExpression
// must set write_id = :wid (Update fails when it does not mention :wid).
// It asks for the old item on a failed check. A failed check is not an
// error: the Result says whether the write was applied. Any other error is
// returned as it is, for the caller to wrap.
func Update(ctx context.Context, db Updater, in *dynamodb.UpdateItemInput) (Result, error) {
	return update(ctx, db, in, writeID)
}

// UpdateLease is Update for a write that takes a lease: the token is the
// lease, which the UpdateExpression stores in attr (attr = :wid, where attr
// may be written through a name placeholder) instead of write_id, and which
// an Applied Result returns as its Token.
func UpdateLease(ctx context.Context, db Updater, in *dynamodb.UpdateItemInput, attr string) (Result, error) {
	return update(ctx, db, in, attr)
}

func update(ctx context.Context, db Updater, in *dynamodb.UpdateItemInput, attr string) (Result, error) {
	if !mentionsPlaceholder.MatchString(aws.ToString(in.UpdateExpression)) {
		return Result{}, fmt.Errorf("condwrite: the update expression does not set %s = %s", attr, placeholder)
	}
	if _, ok := in.ExpressionAttributeValues[placeholder]; ok {
		return Result{}, fmt.Errorf("condwrite: %s is the write's token, set by condwrite", placeholder)
	}
	token, err := Token()
	if err != nil {
		return Result{}, err
	}
	if in.ExpressionAttributeValues == nil {
		in.ExpressionAttributeValues = map[string]types.AttributeValue{}
	}
	in.ExpressionAttributeValues[placeholder] = &types.AttributeValueMemberS{Value: token}
	in.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
	out, err := db.UpdateItem(ctx, in)
	if err != nil {
		return settle(err, attr, token)
	}
	return Result{Applied: true, Token: token, Current: out.Attributes}, nil
}

// Put makes the conditional put in with a fresh token, which it adds to
// in.Item as write_id (in.Item must not hold one). It asks for the old item
// on a failed check; the Result and errors are as for Update.
func Put(ctx context.Context, db Putter, in *dynamodb.PutItemInput) (Result, error) {
	if _, ok := in.Item[writeID]; ok {
		return Result{}, fmt.Errorf("condwrite: %s is the write's token, set by condwrite", writeID)
	}
	token, err := Token()
	if err != nil {
		return Result{}, err
	}
	if in.Item == nil {
		in.Item = map[string]types.AttributeValue{}
	}
	in.Item[writeID] = &types.AttributeValueMemberS{Value: token}
	in.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
	if _, err := db.PutItem(ctx, in); err != nil {
		return settle(err, writeID, token)
	}
	return Result{Applied: true, Token: token, Current: in.Item}, nil
}

// settle judges a failed write: a failed check whose item carries token in
// attr met this very write, already applied by an attempt whose answer was
// lost; any other failed check met a state the condition rules out.
func settle(err error, attr, token string) (Result, error) {
	item, ok := Failed(err)
	if !ok {
		return Result{}, err
	}
	if v, mine := item[attr].(*types.AttributeValueMemberS); mine && v.Value == token {
		return Result{Applied: true, Token: token, Current: item}, nil
	}
	return Result{Current: item}, nil
}

// ConditionFailed reports whether err is a failed condition check.
func ConditionFailed(err error) bool {
	_, ok := Failed(err)
	return ok
}

// Failed returns the item a failed condition check returned (nil when the
// write did not ask for it, or there is no item); ok is false when err is
// not a failed condition check.
func Failed(err error) (item map[string]types.AttributeValue, ok bool) {
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		return nil, false
	}
	return ccf.Item, true
}
