package subscription

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"42sisters.ai/oracle/shared/condwrite"
)

// Tables is what the store needs of DynamoDB's item operations
// (awsenv.Tables).
type Tables interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
}

// Queries is what the store needs to read an account's subscriptions
// together (awsenv.Queries, chat.Client): a type apart from Tables, so that
// a function links Query only where it reads items together.
type Queries interface {
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

// Store keeps subscriptions in the chat table: each subscription's state
// under its account (acct#<account>, subscription#<id>), so that the events
// of one never overwrite another's (an account may hold two: a second
// Checkout paid before the first's events came), and the account under the
// subscription (sub#<id>, subscription), by which an invoice's event finds
// its account.
//
// Before issue 38 an account held one state, of whichever subscription's
// event was newest (acct#<account>, subscription). Such an item is still
// read, as the state of the subscription it names, and is moved to that
// subscription's own item by the account's next Apply.
type Store struct {
	db    Tables
	q     Queries
	table string
}

// NewStore uses the chat table through db and q.
func NewStore(db Tables, q Queries, table string) *Store { return &Store{db: db, q: q, table: table} }

// Errors Apply and Link return.
var (
	// ErrNoAccount: the account the subscription names has no account item.
	ErrNoAccount = errors.New("subscription: no such chat account")
	// ErrOtherAccount: the subscription already belongs to another account.
	ErrOtherAccount = errors.New("subscription: the subscription belongs to another account")
)

const (
	// skSubscription is the sort key of a subscription's link to its
	// account, and of an account's state item before issue 38 (legacy).
	skSubscription = "subscription"
	// skState prefixes a subscription's state item under its account.
	skState = skSubscription + "#"
)

func stateKey(account, id string) map[string]types.AttributeValue {
	return key("acct#"+account, skState+id)
}

func legacyKey(account string) map[string]types.AttributeValue {
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

// Subscriptions returns every subscription of the account, each as its
// newest applied event left it, the newest event's first; none when it has
// none. A state item written before issue 38 counts as the subscription it
// names, unless that subscription's own item holds a newer state.
func (s *Store) Subscriptions(ctx context.Context, account string) ([]State, error) {
	newest := map[string]stored{}
	in := &dynamodb.QueryInput{
		TableName:              aws.String(s.table),
		KeyConditionExpression: aws.String("pk = :pk AND begins_with(sk, :sk)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": str("acct#" + account), ":sk": str(skSubscription),
		},
		ConsistentRead: aws.Bool(true),
	}
	for {
		out, err := s.q.Query(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("read subscriptions: %w", err)
		}
		for _, item := range out.Items {
			st, err := decode(account, item)
			if err != nil {
				return nil, err
			}
			if old, ok := newest[st.ID]; !ok || old.order < st.order {
				newest[st.ID] = st
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
	all := make([]stored, 0, len(newest))
	for _, st := range newest {
		all = append(all, st)
	}
	slices.SortFunc(all, func(a, b stored) int { return strings.Compare(b.order, a.order) })
	states := make([]State, len(all))
	for i, st := range all {
		states[i] = st.State
	}
	return states, nil
}

// Get returns subscription id of the account as last applied; found is
// false when no event of it has been applied.
func (s *Store) Get(ctx context.Context, account, id string) (st State, found bool, err error) {
	all, err := s.Subscriptions(ctx, account)
	if err != nil {
		return State{}, false, err
	}
	for _, st := range all {
		if st.ID == id {
			return st, true, nil
		}
	}
	return State{}, false, nil
}

// stored is a state as an item holds it, with the order of the event that
// wrote it (State.order when it was applied).
type stored struct {
	State
	order string
}

func decode(account string, item map[string]types.AttributeValue) (stored, error) {
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
		return stored{}, fmt.Errorf("read subscription %s: %w", st.ID, err)
	}
	st.PeriodEnd, st.EventCreated = time.Unix(end, 0).UTC(), time.Unix(created, 0).UTC()
	if v, ok := item["cancel_at_period_end"].(*types.AttributeValueMemberBOOL); ok {
		st.CancelAtPeriodEnd = v.Value
	}
	return stored{State: st, order: stringOf(item, "event_order")}, nil
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

// Apply stores st in its subscription's item when it comes from a newer
// event than the state stored there (see State.order: the event's created
// second, then the documented order of states), and reports whether it
// did, with the subscription's state as it stands after the write: st's,
// or the newer one that refused it. An older event, or one applied
// already (a duplicate delivery), changes nothing: the stored state never
// regresses. Another subscription's state is never touched. The
// subscription is linked to st.Account first (Link), and the account's
// state item from before issue 38, if any, moved to its subscription's
// own item (migrate), so that the rule holds across the move too.
//
// The write is conditional on the stored order, so that concurrent events
// leave the newest whatever the interleaving; a retried request whose
// first attempt was applied is recognised by its write token and reported
// applied.
func (s *Store) Apply(ctx context.Context, st State) (after State, applied bool, err error) {
	if err := st.Validate(); err != nil {
		return State{}, false, err
	}
	if err := s.Link(ctx, st.Account, st.ID); err != nil {
		return State{}, false, err
	}
	if err := s.migrate(ctx, st.Account); err != nil {
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
		Key:                       stateKey(st.Account, st.ID),
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
	now, err := decode(st.Account, r.Current)
	return now.State, r.Applied, err
}

// migrate moves the account's state item from before issue 38 to the
// item of the subscription it names: copied there unless that item holds a
// newer state, then deleted while it still holds what was copied. Each
// step is conditional, so a crash between them, a retry or a concurrent
// move leaves the newest state of each subscription where Subscriptions
// finds it; an item the previous code writes again meanwhile (a deploy's
// old and new versions side by side) stays, and is read, until the next
// move.
func (s *Store) migrate(ctx context.Context, account string) error {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.table),
		Key:            legacyKey(account),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return fmt.Errorf("read the account's former subscription item: %w", err)
	}
	if out.Item == nil {
		return nil
	}
	old, err := decode(account, out.Item)
	if err != nil {
		return err
	}
	if !ValidID(old.ID) {
		return fmt.Errorf("the account's former subscription item names no subscription")
	}
	item := maps.Clone(out.Item)
	delete(item, "write_id")
	maps.Copy(item, stateKey(account, old.ID))
	order := map[string]types.AttributeValue{":o": str(old.order)}
	if _, err := condwrite.Put(ctx, s.db, &dynamodb.PutItemInput{
		TableName:                 aws.String(s.table),
		Item:                      item,
		ConditionExpression:       aws.String("attribute_not_exists(event_order) OR event_order < :o"),
		ExpressionAttributeValues: order,
	}); err != nil {
		return fmt.Errorf("move subscription %s to its own item: %w", old.ID, err)
	}
	_, err = s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                 aws.String(s.table),
		Key:                       legacyKey(account),
		ConditionExpression:       aws.String("event_order = :o"),
		ExpressionAttributeValues: order,
	})
	if err != nil && !condwrite.ConditionFailed(err) {
		return fmt.Errorf("delete the account's former subscription item: %w", err)
	}
	return nil
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
