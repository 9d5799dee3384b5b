package subscription

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"42sisters.ai/oracle/shared/condwrite"
)

// Tables is what the store needs of DynamoDB (awsenv.Tables).
type Tables interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
}

// Store keeps subscriptions in the chat table: the state under its account
// (acct#<account>, subscription) and the account under the subscription
// (sub#<id>, subscription), by which an invoice's event finds its account.
type Store struct {
	db    Tables
	table string
}

// NewStore uses the chat table through db.
func NewStore(db Tables, table string) *Store { return &Store{db: db, table: table} }

// Errors Apply and Link return.
var (
	// ErrNoAccount: the account the subscription names has no account item.
	ErrNoAccount = errors.New("subscription: no such chat account")
	// ErrOtherAccount: the subscription already belongs to another account.
	ErrOtherAccount = errors.New("subscription: the subscription belongs to another account")
)

const skSubscription = "subscription"

func accountKey(account string) map[string]types.AttributeValue {
	return key("acct#"+account, skSubscription)
}

func subKey(id string) map[string]types.AttributeValue { return key("sub#"+id, skSubscription) }

func key(pk, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": str(pk), "sk": str(sk)}
}

func str(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }

func num(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

// Get returns the account's subscription as last applied; found is false
// when it has none.
func (s *Store) Get(ctx context.Context, account string) (st State, found bool, err error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.table),
		Key:            accountKey(account),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return State{}, false, fmt.Errorf("read subscription: %w", err)
	}
	if out.Item == nil {
		return State{}, false, nil
	}
	st, err = decode(account, out.Item)
	return st, err == nil, err
}

func decode(account string, item map[string]types.AttributeValue) (State, error) {
	st := State{
		Account:  account,
		ID:       stringOf(item, "subscription"),
		Customer: stringOf(item, "customer"),
		Status:   stringOf(item, "status"),
		EventID:  stringOf(item, "event_id"),
	}
	end, err1 := numberOf(item, "current_period_end")
	created, err2 := numberOf(item, "event_created")
	if err := errors.Join(err1, err2); err != nil {
		return State{}, fmt.Errorf("read subscription %s: %w", st.ID, err)
	}
	st.PeriodEnd, st.EventCreated = time.Unix(end, 0).UTC(), time.Unix(created, 0).UTC()
	if v, ok := item["cancel_at_period_end"].(*types.AttributeValueMemberBOOL); ok {
		st.CancelAtPeriodEnd = v.Value
	}
	return st, nil
}

// AccountOf returns the account a subscription belongs to; found is false
// when no event has linked it to one yet.
func (s *Store) AccountOf(ctx context.Context, id string) (account string, found bool, err error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:            aws.String(s.table),
		Key:                  subKey(id),
		ConsistentRead:       aws.Bool(true),
		ProjectionExpression: aws.String("account"),
	})
	if err != nil {
		return "", false, fmt.Errorf("read the account of subscription %s: %w", id, err)
	}
	account = stringOf(out.Item, "account")
	return account, account != "", nil
}

// Link records that subscription id belongs to account, which must exist
// (ErrNoAccount): Checkout's completion says so before the subscription's
// own events may. A subscription belongs to one account for ever
// (ErrOtherAccount); linking it again to its own is a no-op.
func (s *Store) Link(ctx context.Context, account, id string) error {
	if !ValidAccount(account) || !ValidID(id) {
		return fmt.Errorf("link subscription: invalid account or subscription id")
	}
	if err := s.accountExists(ctx, account); err != nil {
		return err
	}
	r, err := condwrite.Put(ctx, s.db, &dynamodb.PutItemInput{
		TableName: aws.String(s.table),
		Item: map[string]types.AttributeValue{
			"pk": str("sub#" + id), "sk": str(skSubscription), "account": str(account),
		},
		ConditionExpression:       aws.String("attribute_not_exists(pk) OR account = :a"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":a": str(account)},
	})
	if err != nil {
		return fmt.Errorf("link subscription %s: %w", id, err)
	}
	if !r.Applied {
		return fmt.Errorf("link subscription %s: %w", id, ErrOtherAccount)
	}
	return nil
}

// accountExists is nil when account has its account item (shared/chat's,
// which only this read touches), ErrNoAccount when not.
func (s *Store) accountExists(ctx context.Context, account string) error {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:            aws.String(s.table),
		Key:                  key("acct#"+account, "account"),
		ConsistentRead:       aws.Bool(true),
		ProjectionExpression: aws.String("pk"),
	})
	if err != nil {
		return fmt.Errorf("read chat account: %w", err)
	}
	if out.Item == nil {
		return ErrNoAccount
	}
	return nil
}

// Apply stores st when it comes from a newer event than the stored state
// (see State.order: the event's created second, then the documented order
// of states), and reports whether it did, with the account's state as it
// stands after the write: st's, or the newer one that refused it. An
// older event, or one applied already (a duplicate delivery), changes
// nothing: the stored state never regresses. The subscription is linked to
// st.Account first (Link).
//
// The write is conditional on the stored order, so that concurrent events
// leave the newest whatever the interleaving; a retried request whose
// first attempt was applied is recognised by its write token and reported
// applied.
func (s *Store) Apply(ctx context.Context, st State) (stored State, applied bool, err error) {
	if err := st.Validate(); err != nil {
		return State{}, false, err
	}
	if err := s.Link(ctx, st.Account, st.ID); err != nil {
		return State{}, false, err
	}
	set := "SET subscription = :id, customer = :cus, #status = :st, current_period_end = :end, event_created = :c, event_id = :ev, event_order = :o, write_id = :wid"
	values := map[string]types.AttributeValue{
		":id":  str(st.ID),
		":cus": str(st.Customer),
		":st":  str(st.Status),
		":end": num(max(st.PeriodEnd.Unix(), 0)),
		":c":   num(st.EventCreated.Unix()),
		":ev":  str(st.EventID),
		":o":   str(st.order()),
		":k":   &types.AttributeValueMemberBOOL{Value: st.CancelAtPeriodEnd},
	}
	if st.CancelUnknown {
		set += ", cancel_at_period_end = if_not_exists(cancel_at_period_end, :k)"
		values[":k"] = &types.AttributeValueMemberBOOL{Value: false}
	} else {
		set += ", cancel_at_period_end = :k"
	}
	if st.Customer == "" {
		// An event that does not name the customer keeps the one known.
		set = strings.Replace(set, "customer = :cus", "customer = if_not_exists(customer, :cus)", 1)
	}
	r, err := condwrite.Update(ctx, s.db, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       accountKey(st.Account),
		UpdateExpression:          aws.String(set),
		ConditionExpression:       aws.String("attribute_not_exists(event_order) OR event_order < :o"),
		ExpressionAttributeNames:  map[string]string{"#status": "status"},
		ExpressionAttributeValues: values,
		ReturnValues:              types.ReturnValueAllNew,
	})
	if err != nil {
		return State{}, false, fmt.Errorf("apply subscription %s: %w", st.ID, err)
	}
	if r.Current == nil {
		return st, r.Applied, nil
	}
	stored, err = decode(st.Account, r.Current)
	return stored, r.Applied, err
}

func stringOf(item map[string]types.AttributeValue, name string) string {
	if v, ok := item[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func numberOf(item map[string]types.AttributeValue, name string) (int64, error) {
	v, ok := item[name].(*types.AttributeValueMemberN)
	if !ok {
		return 0, fmt.Errorf("%s is missing", name)
	}
	n, err := strconv.ParseInt(v.Value, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	return n, nil
}
