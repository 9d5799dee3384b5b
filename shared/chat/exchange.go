package chat

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"42sisters.ai/oracle/shared/condwrite"
)

// TrialExchanges is the free trial: this many exchanges (a message
// answered) per account, counted on the account item, never by the client.
const TrialExchanges = 3

// Plan is what paid for an exchange (the audit record's chat plan).
type Plan string

// The plans, in the order an exchange is taken from them.
const (
	PlanTrial      Plan = "trial"
	PlanGranted    Plan = "granted"
	PlanSubscriber Plan = "subscriber"
)

// Why an exchange is refused.
var (
	// ErrTrialUsed: no trial or granted exchange left and no subscription
	// that grants access.
	ErrTrialUsed = errors.New("chat: the free exchanges are used")
	// ErrDailyCap: a subscriber has had today's (UTC) fair-use cap.
	ErrDailyCap = errors.New("chat: the daily cap is reached")
)

// Spent is one exchange taken, to be settled once answered or given back
// once when it was not.
type Spent struct {
	Account string
	Plan    Plan
	// Day is the UTC day a subscriber's exchange counts against.
	Day string
	// Trial names the trial item a trial exchange was taken from.
	Trial string
	// Token names the spend on its item (the pending set of the trial's,
	// or of the account's) until it is settled or given back, so that each
	// happens at most once.
	Token string
	// Left is what remains after this one: free exchanges (trial and
	// granted) for those plans, today's exchanges for a subscriber.
	Left int
}

// Usage is what an account has used and has left.
type Usage struct {
	// Account is the account's name; Address the address it holds, for
	// the page and Stripe's Checkout (read with the counts, not again).
	Account string
	Address string
	// Trial names the account's trial (trialPK): the trial identity of its
	// address, which every address of one person shares.
	Trial string
	// TrialStarted: the trial has its own item (an exchange was taken
	// from it); until then TrialUsed is what the account counted before
	// trials had one (legacyTrialUsed), usually none.
	TrialStarted bool
	// FreeLeft is the trial's exchanges left plus the operator's grants.
	FreeLeft  int
	TrialUsed int
	Granted   int
	// DayUsed is today's (UTC) subscriber exchanges.
	DayUsed int
	// SignedOutAt is when the person last signed out: a session cookie
	// issued no later is refused.
	SignedOutAt time.Time
	// Created is when the account was made (its first sign-in request).
	Created time.Time
}

// day is the UTC day of t as the account item keeps it.
func day(t time.Time) string { return t.UTC().Format(time.DateOnly) }

func num(n int) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.Itoa(n)}
}

func intOf(item map[string]types.AttributeValue, name string) int {
	if v, ok := item[name].(*types.AttributeValueMemberN); ok {
		n, _ := strconv.Atoi(v.Value)
		return n
	}
	return 0
}

func holds(item map[string]types.AttributeValue, set, token string) bool {
	v, ok := item[set].(*types.AttributeValueMemberSS)
	return ok && slices.Contains(v.Value, token)
}

// usageOf reads an account item; the trial's count is the account's own
// until the trial item is read (withTrial).
func usageOf(item map[string]types.AttributeValue, today string) Usage {
	u := Usage{TrialUsed: intOf(item, legacyTrialUsed), Granted: intOf(item, "granted")}
	u.FreeLeft = max(TrialExchanges-u.TrialUsed, 0) + max(u.Granted, 0)
	if stringOf(item, "day") == today {
		u.DayUsed = intOf(item, "day_used")
	}
	if ms := intOf(item, "signed_out_at"); ms > 0 {
		u.SignedOutAt = time.UnixMilli(int64(ms)).UTC()
	}
	if t, err := time.Parse(time.RFC3339Nano, stringOf(item, "created_at")); err == nil {
		u.Created = t.UTC()
	}
	return u
}

// Usage reads the account's counts and its trial's: ErrNoAccount when
// there is no account, or only one whose time has passed (an unconfirmed
// account's expires_at).
func (s *Store) Usage(ctx context.Context, account string) (Usage, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.table),
		Key:            key(accountPK(account), skAccount),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return Usage{}, fmt.Errorf("read account: %w", err)
	}
	now := s.now()
	if out.Item == nil || expired(out.Item, now) {
		return Usage{}, ErrNoAccount
	}
	u := usageOf(out.Item, day(now))
	u.Account, u.Address = account, stringOf(out.Item, "email")
	if u.Trial = stringOf(out.Item, "trial"); u.Trial == "" {
		u.Trial = s.trialOf(stringOf(out.Item, "email"))
	}
	if err := s.readTrial(ctx, &u); err != nil {
		return Usage{}, err
	}
	return u, nil
}

// spend is one conditional update that takes an exchange: cond must hold
// for it to apply; it also adds the spend's token to the pending set, and
// refuses a token already there, so that a retried request whose first
// attempt was applied counts once.
func (s *Store) spend(ctx context.Context, account, token, set, cond string, values map[string]types.AttributeValue) (applied bool, item map[string]types.AttributeValue, err error) {
	values[":tok"] = str(token)
	values[":toks"] = &types.AttributeValueMemberSS{Value: []string{token}}
	r, err := condwrite.Update(ctx, s.db, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       key(accountPK(account), skAccount),
		UpdateExpression:          aws.String("SET " + set + ", write_id = :wid ADD pending :toks"),
		ConditionExpression:       aws.String("attribute_exists(pk) AND NOT contains(pending, :tok) AND (" + cond + ")"),
		ExpressionAttributeNames:  names(set+cond, "#d", "day"),
		ExpressionAttributeValues: values,
		ReturnValues:              types.ReturnValueAllNew,
	})
	if err != nil {
		return false, nil, fmt.Errorf("take an exchange: %w", err)
	}
	if !r.Applied && holds(r.Current, "pending", token) {
		return true, r.Current, nil // an earlier attempt of this request took it
	}
	if !r.Applied && r.Current == nil {
		return false, nil, ErrNoAccount
	}
	return r.Applied, r.Current, nil
}

// Policy is what an exchange may be taken from beyond the free ones.
type Policy struct {
	// Subscribed: the account's subscription grants access now.
	Subscribed bool
	// DailyCap is a subscriber's exchanges per UTC day.
	DailyCap int
	// NewTrialsPerDay bounds the trials started service-wide each UTC day.
	NewTrialsPerDay int
}

// TakeExchange spends one exchange of the account u read before the model
// is called: from its trial first, then the operator's grants, then, when
// subscribed, today's fair-use allowance of p.DailyCap. Each is one
// conditional update, so concurrent messages can never take more than
// there is. It refuses with ErrTrialUsed (nothing free left, no
// subscription), ErrTrialsPaused (a trial would start, and today's new
// trials are all taken), ErrDailyCap or ErrNoAccount.
func (s *Store) TakeExchange(ctx context.Context, u Usage, p Policy) (Spent, error) {
	token, err := condwrite.Token()
	if err != nil {
		return Spent{}, err
	}
	account := u.Account
	sp := Spent{Account: account, Token: token}
	trialLeft := 0
	paused := false
	if u.TrialUsed < TrialExchanges {
		taken, err := s.takeTrial(ctx, u, p.NewTrialsPerDay, sp)
		switch {
		case err == nil:
			taken.Left += max(u.Granted, 0)
			return taken, nil
		case errors.Is(err, ErrTrialsPaused):
			paused, trialLeft = true, TrialExchanges-u.TrialUsed
		case !errors.Is(err, ErrTrialUsed):
			return Spent{}, err
		}
	}
	// The read's grants say whether asking for one can apply: without, it
	// is a write that cannot, which every subscriber's exchange would pay
	// for.
	if u.Granted > 0 {
		ok, current, err := s.spend(ctx, account, token, "granted = granted - :one", "granted > :zero",
			map[string]types.AttributeValue{":zero": num(0), ":one": num(1)})
		if err != nil {
			return Spent{}, err
		}
		if ok {
			sp.Plan, sp.Left = PlanGranted, trialLeft+max(intOf(current, "granted"), 0)
			return sp, nil
		}
	}
	switch {
	case p.Subscribed && p.DailyCap < 1:
		return Spent{}, ErrDailyCap
	case p.Subscribed:
	case paused:
		return Spent{}, ErrTrialsPaused
	default:
		return Spent{}, ErrTrialUsed
	}
	dailyCap := p.DailyCap
	today := day(s.now())
	sp.Plan, sp.Day = PlanSubscriber, today
	// Today's count goes up while its day is today; the first exchange of
	// a day starts the count again. Between two concurrent first
	// exchanges, the one that loses the second race counts on the first.
	for range 3 {
		ok, item, err := s.spend(ctx, account, token, "day_used = day_used + :one", "#d = :today AND day_used < :cap",
			map[string]types.AttributeValue{":one": num(1), ":today": str(today), ":cap": num(dailyCap)})
		if err != nil {
			return Spent{}, err
		}
		if ok {
			sp.Left = dailyCap - intOf(item, "day_used")
			return sp, nil
		}
		if stringOf(item, "day") == today {
			return Spent{}, ErrDailyCap
		}
		ok, item, err = s.spend(ctx, account, token, "#d = :today, day_used = :one", "attribute_not_exists(#d) OR #d <> :today",
			map[string]types.AttributeValue{":one": num(1), ":today": str(today)})
		if err != nil {
			return Spent{}, err
		}
		if ok {
			sp.Left = dailyCap - intOf(item, "day_used")
			return sp, nil
		}
	}
	return Spent{}, fmt.Errorf("take an exchange: today's count kept changing")
}

// settle removes the spend's token from the pending set, with update
// (which may give the exchange back) when cond holds too.
func (s *Store) settle(ctx context.Context, sp Spent, set, cond string, values map[string]types.AttributeValue) (applied bool, item map[string]types.AttributeValue, err error) {
	values[":tok"] = str(sp.Token)
	values[":toks"] = &types.AttributeValueMemberSS{Value: []string{sp.Token}}
	expr := "SET write_id = :wid"
	if set != "" {
		expr += ", " + set
	}
	if cond != "" {
		cond = " AND (" + cond + ")"
	}
	r, err := condwrite.Update(ctx, s.db, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       sp.key(),
		UpdateExpression:          aws.String(expr + " DELETE pending :toks"),
		ConditionExpression:       aws.String("contains(pending, :tok)" + cond),
		ExpressionAttributeNames:  names(set+cond, "#d", "day"),
		ExpressionAttributeValues: values,
	})
	if err != nil {
		return false, nil, err
	}
	return r.Applied, r.Current, nil
}

// key is the item the spend was taken from.
func (sp Spent) key() map[string]types.AttributeValue {
	if sp.Plan == PlanTrial {
		return key(sp.Trial, skTrial)
	}
	return key(accountPK(sp.Account), skAccount)
}

// names is {placeholder: name} when expr uses placeholder, else nil:
// DynamoDB refuses names an expression does not use.
func names(expr, placeholder, name string) map[string]string {
	if strings.Contains(expr, placeholder) {
		return map[string]string{placeholder: name}
	}
	return nil
}

// Settle marks an answered exchange as kept: it can no longer be given
// back. Only the pending token changes; a spend settled already is not an
// error. ErrNoAccount means the account was erased while the exchange was
// answered: what the exchange stored is then the caller's to forget.
func (s *Store) Settle(ctx context.Context, sp Spent) error {
	applied, item, err := s.settle(ctx, sp, "", "", map[string]types.AttributeValue{})
	if err != nil {
		return fmt.Errorf("settle an exchange: %w", err)
	}
	if !applied && item == nil {
		return ErrNoAccount
	}
	if sp.Plan == PlanTrial {
		// The trial's item outlives the account: ask the account itself.
		return s.exists(ctx, sp.Account)
	}
	return nil
}

// exists is nil when account exists (and has not expired), else
// ErrNoAccount.
func (s *Store) exists(ctx context.Context, account string) error {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:            aws.String(s.table),
		Key:                  key(accountPK(account), skAccount),
		ConsistentRead:       aws.Bool(true),
		ProjectionExpression: aws.String("pk, expires_at"),
	})
	if err != nil {
		return fmt.Errorf("settle an exchange: %w", err)
	}
	if out.Item == nil || expired(out.Item, s.now()) {
		return ErrNoAccount
	}
	return nil
}

// GiveBack returns an exchange the person did not get (the model failed,
// or the reply was replaced by the apology): once only, since it needs the
// spend still pending. given reports whether this call gave it back. A
// subscriber's exchange of a day now past is settled without changing
// today's count.
func (s *Store) GiveBack(ctx context.Context, sp Spent) (given bool, err error) {
	var set, cond string
	values := map[string]types.AttributeValue{":one": num(1)}
	switch sp.Plan {
	case PlanTrial:
		set, cond = "used = used - :one", "used > :zero"
		values[":zero"] = num(0)
	case PlanGranted:
		set = "granted = granted + :one"
	case PlanSubscriber:
		set, cond = "day_used = day_used - :one", "#d = :day AND day_used > :zero"
		values[":day"], values[":zero"] = str(sp.Day), num(0)
	default:
		return false, fmt.Errorf("give back an exchange: unknown plan %q", sp.Plan)
	}
	ok, item, err := s.settle(ctx, sp, set, cond, values)
	if err != nil {
		return false, fmt.Errorf("give back an exchange: %w", err)
	}
	if !ok && cond != "" && holds(item, "pending", sp.Token) {
		// Still pending, but its count moved on (a new day): nothing to
		// give back, only the token to clear.
		if _, _, err := s.settle(ctx, sp, "", "", map[string]types.AttributeValue{}); err != nil {
			return false, fmt.Errorf("give back an exchange: %w", err)
		}
		return false, nil
	}
	return ok, nil
}

// MaxGrant bounds one operator grant.
const MaxGrant = 1000

// Grant gives account n free exchanges more (the operator's, through make
// ops), returning how many granted exchanges it now has: once per call,
// even when the SDK retries it. ErrNoAccount when there is none.
func (s *Store) Grant(ctx context.Context, account string, n int) (int, error) {
	id, err := condwrite.Token()
	if err != nil {
		return 0, err
	}
	granted, _, err := s.GrantOnce(ctx, account, n, id)
	return granted, err
}

// GrantOnce is Grant named by id: the grant of one id is made once, however
// often it is asked (the operator's request run again), and made reports
// whether this call made it.
func (s *Store) GrantOnce(ctx context.Context, account string, n int, id string) (granted int, made bool, err error) {
	if n < 1 || n > MaxGrant {
		return 0, false, fmt.Errorf("grant: %d exchanges: between 1 and %d", n, MaxGrant)
	}
	if id == "" {
		return 0, false, fmt.Errorf("grant: no id")
	}
	r, err := condwrite.Update(ctx, s.db, &dynamodb.UpdateItemInput{
		TableName:           aws.String(s.table),
		Key:                 key(accountPK(account), skAccount),
		UpdateExpression:    aws.String("SET granted = if_not_exists(granted, :zero) + :n, write_id = :wid ADD grant_ids :ids"),
		ConditionExpression: aws.String("attribute_exists(pk) AND NOT contains(grant_ids, :id)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":zero": num(0), ":n": num(n), ":id": str(id),
			":ids": &types.AttributeValueMemberSS{Value: []string{id}},
		},
		ReturnValues: types.ReturnValueAllNew,
	})
	switch {
	case err != nil:
		return 0, false, fmt.Errorf("grant: %w", err)
	case r.Applied || holds(r.Current, "grant_ids", id):
		return intOf(r.Current, "granted"), r.Applied, nil
	default:
		return 0, false, ErrNoAccount
	}
}

// SignOut ends every session of account issued until now: the cookies
// issued before are refused from then on.
func (s *Store) SignOut(ctx context.Context, account string) error {
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           aws.String(s.table),
		Key:                 key(accountPK(account), skAccount),
		UpdateExpression:    aws.String("SET signed_out_at = :t"),
		ConditionExpression: aws.String("attribute_exists(pk)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":t": &types.AttributeValueMemberN{Value: strconv.FormatInt(s.now().UnixMilli(), 10)},
		},
	})
	var failed *types.ConditionalCheckFailedException
	if errors.As(err, &failed) {
		return ErrNoAccount
	}
	if err != nil {
		return fmt.Errorf("sign out: %w", err)
	}
	return nil
}
