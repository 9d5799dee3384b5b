package store

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/condwrite"
	"42sisters.ai/oracle/shared/oracle"
)

// delivery is the state of one email's delivery on one item: an order's
// attributes for one mail kind, or an autoresponse's Ledger record. Every
// email, whatever it answers, is claimed, retried and closed the same way.
type delivery struct {
	db    *awsenv.Tables
	table string
	key   map[string]types.AttributeValue
	// mustExist names an attribute the item must already have (an order's
	// key); empty when the first claim creates the item.
	mustExist string
	a         mailAttrs
	// ttl, when set, is how long an item the claim creates is kept.
	ttl time.Duration
	// indexed, when set, is the attribute a sent email's message id is
	// also written to, for an index to find the item by it (SentMessages).
	indexed string
	name    string // what errors call the delivery
	now     func() time.Time
}

// claim is ClaimMail for d.
func (d delivery) claim(ctx context.Context, attempt int, lease time.Duration) (string, error) {
	token, _, err := d.claimSince(ctx, attempt, lease)
	return token, err
}

// claimSince is claim, also returning when the item's first claim created
// it (zero for an item that keeps no created_at): the same on every
// attempt, so the records of a delivery that names no order share it.
func (d delivery) claimSince(ctx context.Context, attempt int, lease time.Duration) (string, time.Time, error) {
	r, err := d.conditionalClaim(ctx, attempt, lease, false, "", nil, nil)
	if err != nil {
		return "", time.Time{}, err
	}
	if r.Applied {
		var created time.Time
		if v, ok := r.Current["created_at"].(*types.AttributeValueMemberS); ok {
			created, _ = time.Parse(time.RFC3339Nano, v.Value)
		}
		return r.Token, created, nil
	}
	if r.Current == nil {
		return "", time.Time{}, fmt.Errorf("claim %s: no such order", d.name)
	}
	return "", time.Time{}, d.refusal(r.Current, attempt)
}

// conditionalClaim makes the claim's write, with also (when not "") added
// to its condition, naming names and values. A granted claim returns the
// item it left when whole is set, or when the item is a small record of
// its own (ttl); a refused one the item that refused it. The Result says
// whether the claim was granted.
func (d delivery) conditionalClaim(ctx context.Context, attempt int, lease time.Duration, whole bool, also string,
	names map[string]string, values map[string]types.AttributeValue) (condwrite.Result, error) {
	a := d.a
	now := d.now().UTC()
	cond := "attribute_not_exists(#sent) AND (attribute_not_exists(#until) OR #until < :nowms) AND (attribute_not_exists(#next) OR #next <= :attempt)"
	if d.mustExist != "" {
		cond = "attribute_exists(" + d.mustExist + ") AND " + cond
	}
	if also != "" {
		cond += " AND " + also
	}
	set := "SET #until = :until, #tok = :wid"
	if values == nil {
		values = map[string]types.AttributeValue{}
	}
	values[":until"] = number(now.Add(lease).UnixMilli())
	values[":nowms"] = number(now.UnixMilli())
	values[":attempt"] = number(int64(attempt))
	if d.ttl > 0 {
		set += ", expires_at = if_not_exists(expires_at, :exp), created_at = if_not_exists(created_at, :now)"
		values[":exp"] = number(now.Add(d.ttl).Unix())
		values[":now"] = &types.AttributeValueMemberS{Value: now.Format(time.RFC3339Nano)}
	}
	if names == nil {
		names = map[string]string{}
	}
	names["#sent"], names["#until"], names["#tok"], names["#next"] = a.sent, a.leaseUntil, a.lease, a.nextAttempt
	// The token is the claim's lease, so a retried request whose first
	// attempt took the claim still gets it.
	in := &dynamodb.UpdateItemInput{
		TableName:                 aws.String(d.table),
		Key:                       d.key,
		UpdateExpression:          aws.String(set),
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	}
	if d.ttl > 0 || whole {
		in.ReturnValues = types.ReturnValueAllNew
	}
	r, err := condwrite.UpdateLease(ctx, d.db, in, a.lease)
	if err != nil {
		return condwrite.Result{}, fmt.Errorf("claim %s: %w", d.name, err)
	}
	return r, nil
}

// refusal is why the item refused a claim of attempt, its delivery's
// condition alone considered: ErrAlreadySent, ErrAttemptSpent or
// ErrMailInFlight.
func (d delivery) refusal(item map[string]types.AttributeValue, attempt int) error {
	if _, done := item[d.a.sent]; done {
		return ErrAlreadySent
	}
	if d.next(item) > attempt {
		return ErrAttemptSpent
	}
	return ErrMailInFlight
}

// next is the lowest attempt the item's delivery still has to make.
func (d delivery) next(item map[string]types.AttributeValue) int {
	if v, ok := item[d.a.nextAttempt].(*types.AttributeValueMemberN); ok {
		if n, err := strconv.Atoi(v.Value); err == nil {
			return n
		}
	}
	return 0
}

// sent is MailSent for d.
func (d delivery) sent(ctx context.Context, token, result string, state oracle.MailState) error {
	a := d.a
	now := d.now().UTC()
	set := "SET #sent = :now, #msg = :msg, updated_at = :now"
	values := map[string]types.AttributeValue{
		":now":   &types.AttributeValueMemberS{Value: now.Format(time.RFC3339Nano)},
		":msg":   &types.AttributeValueMemberS{Value: result},
		":token": &types.AttributeValueMemberS{Value: token},
	}
	names := map[string]string{"#sent": a.sent, "#until": a.leaseUntil, "#tok": a.lease, "#msg": a.messageID, "#nextat": a.nextAt}
	if state != "" {
		set += ", #state = :state"
		names["#state"] = a.state
		values[":state"] = &types.AttributeValueMemberS{Value: string(state)}
	}
	if state == oracle.MailSent && d.indexed != "" && result != "" {
		// Only a message that left: result is then the transport's id
		// (an index's key cannot be empty).
		set += ", #idx = :msg"
		names["#idx"] = d.indexed
	}
	_, err := d.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(d.table),
		Key:                       d.key,
		UpdateExpression:          aws.String(set + " REMOVE #until, #tok, #nextat"),
		ConditionExpression:       aws.String("#tok = :token"),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	})
	if condwrite.ConditionFailed(err) {
		return fmt.Errorf("record %s: %w", d.name, ErrLeaseLost)
	}
	if err != nil {
		return fmt.Errorf("record %s: %w", d.name, err)
	}
	return nil
}

// failed is MailFailed for d.
func (d delivery) failed(ctx context.Context, token string, try Try, nextAt time.Time) ([]Try, error) {
	a := d.a
	now := d.now().UTC()
	entry, err := attributevalue.MarshalMap(try)
	if err != nil {
		return nil, fmt.Errorf("record failed %s: %w", d.name, err)
	}
	names := map[string]string{"#until": a.leaseUntil, "#tok": a.lease, "#next": a.nextAttempt, "#tries": a.tries, "#nextat": a.nextAt}
	values := map[string]types.AttributeValue{
		":now":   &types.AttributeValueMemberS{Value: now.Format(time.RFC3339Nano)},
		":token": &types.AttributeValueMemberS{Value: token},
		":next":  number(int64(try.Attempt + 1)),
		":try":   &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberM{Value: entry}}},
		":none":  &types.AttributeValueMemberL{Value: []types.AttributeValue{}},
	}
	set := "SET #next = :next, #tries = list_append(if_not_exists(#tries, :none), :try), updated_at = :now, write_id = :wid"
	remove := " REMOVE #until, #tok"
	if nextAt.IsZero() {
		set += ", #sent = :now, #msg = :dead, #state = :undeliverable"
		remove += ", #nextat"
		names["#sent"], names["#msg"], names["#state"] = a.sent, a.messageID, a.state
		values[":dead"] = &types.AttributeValueMemberS{Value: "undeliverable"}
		values[":undeliverable"] = &types.AttributeValueMemberS{Value: string(oracle.MailUndeliverable)}
	} else {
		set += ", #nextat = :nextat"
		values[":nextat"] = &types.AttributeValueMemberS{Value: nextAt.UTC().Format(time.RFC3339Nano)}
	}
	r, err := condwrite.Update(ctx, d.db, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(d.table),
		Key:                       d.key,
		UpdateExpression:          aws.String(set + remove),
		ConditionExpression:       aws.String("#tok = :token"),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
		ReturnValues:              types.ReturnValueAllNew,
	})
	if err != nil {
		return nil, fmt.Errorf("record failed %s: %w", d.name, err)
	}
	if !r.Applied {
		return nil, fmt.Errorf("record failed %s: %w", d.name, ErrLeaseLost)
	}
	var tries []Try
	if err := attributevalue.Unmarshal(r.Current[a.tries], &tries); err != nil {
		return nil, fmt.Errorf("read failed attempts of %s: %w", d.name, err)
	}
	return tries, nil
}

// release is ReleaseMail for d.
func (d delivery) release(ctx context.Context, token string) error {
	a := d.a
	_, err := d.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(d.table),
		Key:                      d.key,
		UpdateExpression:         aws.String("REMOVE #until, #tok"),
		ConditionExpression:      aws.String("#tok = :token"),
		ExpressionAttributeNames: map[string]string{"#until": a.leaseUntil, "#tok": a.lease},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":token": &types.AttributeValueMemberS{Value: token},
		},
	})
	if err != nil && !condwrite.ConditionFailed(err) {
		return fmt.Errorf("release %s: %w", d.name, err)
	}
	return nil
}
