package subscription_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/chat"
	"42sisters.ai/oracle/shared/subscription"
)

// fixture is the subscription store on a fresh chat table in moto, and
// the chat's accounts there.
type fixture struct {
	subs     *subscription.Store
	accounts *chat.Store
	db       *awsenv.Tables
	table    string
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	f := provision.ForTest(t, nil)
	h, err := audit.NewHasher("a pepper of sixteen bytes or more")
	if err != nil {
		t.Fatal(err)
	}
	db := awsenv.NewTables(f.AWS)
	return fixture{subs: subscription.NewStore(db, awsenv.NewQueries(f.AWS), f.Ref("ChatTable")),
		accounts: chat.NewStore(db, f.Ref("ChatTable"), h, nil), db: db, table: f.Ref("ChatTable")}
}

// signUp makes the account of addr.
func (x fixture) signUp(t *testing.T, addr string) string {
	t.Helper()
	account, _, err := x.accounts.SignUp(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	return account
}

// newStore returns the subscription store on a fresh chat table in moto,
// and an account signed up there.
func newStore(t *testing.T) (*subscription.Store, string, *chat.Store) {
	t.Helper()
	x := newFixture(t)
	return x.subs, x.signUp(t, "ana@example.com"), x.accounts
}

var t0 = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

// life is one subscription's events as Stripe makes them, oldest first:
// created and paid, renewed, a renewal's payment failing (past_due), the
// cancellation scheduled, and the end. Several share a second.
func life(account string) []subscription.State {
	p1, p2 := t0.AddDate(0, 1, 0), t0.AddDate(0, 2, 0)
	st := func(sec int64, id, status string, end time.Time, cancel bool) subscription.State {
		return subscription.State{Account: account, ID: "sub_life", Customer: "cus_life", Status: status, PeriodEnd: end,
			CancelAtPeriodEnd: cancel, EventCreated: t0.Add(time.Duration(sec) * time.Second), EventID: id}
	}
	renewal := p1.Sub(t0) / time.Second
	return []subscription.State{
		st(0, "evt_created", subscription.Active, p1, false),
		st(0, "evt_paid", subscription.Active, p1, false),
		st(int64(renewal), "evt_renewed", subscription.Active, p2, false),
		st(int64(renewal)+3600, "evt_failed", subscription.PastDue, p2, false),
		st(int64(renewal)+3600, "evt_pastdue", subscription.PastDue, p2, false),
		st(int64(renewal)+7200, "evt_cancel", subscription.PastDue, p2, true),
		st(int64(renewal)+7200+60, "evt_deleted", subscription.Canceled, p2, true),
	}
}

func get(t *testing.T, s *subscription.Store, account, id string) subscription.State {
	t.Helper()
	got, found, err := s.Get(context.Background(), account, id)
	if err != nil || !found {
		t.Fatalf("Get: found=%v %v", found, err)
	}
	return got
}

// Whatever order the events arrive in, and however often, the stored
// state is the newest event's.
func TestApplyKeepsTheNewestInAnyOrder(t *testing.T) {
	ctx := context.Background()
	s, account, _ := newStore(t)
	events := life(account)
	newest := events[len(events)-1]
	r := rand.New(rand.NewPCG(29, 2))
	for round := range 5 {
		order := r.Perm(len(events))
		if round == 0 {
			order = []int{6, 5, 4, 3, 2, 1, 0} // newest first
		}
		for _, i := range order {
			if _, _, err := s.Apply(ctx, events[i]); err != nil {
				t.Fatalf("round %d, event %s: %v", round, events[i].EventID, err)
			}
			// Each one twice: a duplicate delivery.
			if _, applied, err := s.Apply(ctx, events[i]); err != nil || applied {
				t.Fatalf("round %d, %s again: applied=%v %v", round, events[i].EventID, applied, err)
			}
		}
		got := get(t, s, account, "sub_life")
		if got.EventID != newest.EventID || got.Status != subscription.Canceled || !got.PeriodEnd.Equal(newest.PeriodEnd) ||
			!got.CancelAtPeriodEnd || got.Customer != "cus_life" || !got.EventCreated.Equal(newest.EventCreated) {
			t.Fatalf("round %d (order %v): stored %+v, want the newest event's state", round, order, got)
		}
		if acct, found, err := s.AccountOf(ctx, "sub_life"); err != nil || !found || acct != account {
			t.Fatalf("AccountOf = %q %v %v", acct, found, err)
		}
	}
}

// An older event never overwrites a newer one, and reports it was not
// applied; a newer one does.
func TestApplyNeverRegresses(t *testing.T) {
	ctx := context.Background()
	s, account, _ := newStore(t)
	events := life(account)
	if _, applied, err := s.Apply(ctx, events[4]); err != nil || !applied {
		t.Fatalf("past_due: applied=%v %v", applied, err)
	}
	for _, old := range events[:4] {
		stored, applied, err := s.Apply(ctx, old)
		if err != nil || applied || stored.EventID != "evt_pastdue" || stored.Status != subscription.PastDue {
			t.Fatalf("older %s: applied=%v %v, the state after it %+v", old.EventID, applied, err, stored)
		}
	}
	if got := get(t, s, account, "sub_life"); got.EventID != "evt_pastdue" || got.Status != subscription.PastDue {
		t.Fatalf("stored %+v after older events", got)
	}
	if stored, applied, err := s.Apply(ctx, events[5]); err != nil || !applied || stored.EventID != "evt_cancel" || !stored.CancelAtPeriodEnd {
		t.Fatalf("newer: applied=%v %v, the state after it %+v", applied, err, stored)
	}
}

// Ten events of one subscription applied at once, each twice: the newest
// is stored, whatever the interleaving.
func TestConcurrentEventsLeaveTheNewest(t *testing.T) {
	ctx := context.Background()
	s, account, _ := newStore(t)
	var events []subscription.State
	for i := range 10 {
		events = append(events, subscription.State{Account: account, ID: "sub_race", Customer: "cus_race", Status: subscription.Active,
			PeriodEnd: t0.AddDate(0, i+1, 0), EventCreated: t0.AddDate(0, i, 0), EventID: fmt.Sprintf("evt_race%d", i)})
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2*len(events))
	for _, e := range append(events, events...) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, _, err := s.Apply(ctx, e); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := get(t, s, account, "sub_race"); got.EventID != "evt_race9" || !got.PeriodEnd.Equal(t0.AddDate(0, 10, 0)) {
		t.Fatalf("stored %+v, want evt_race9's", got)
	}
}

// A state read from an invoice keeps the stored cancellation and customer.
func TestInvoiceStateKeepsTheCancellation(t *testing.T) {
	ctx := context.Background()
	s, account, _ := newStore(t)
	events := life(account)
	if _, _, err := s.Apply(ctx, events[5]); err != nil { // cancellation scheduled
		t.Fatal(err)
	}
	paid := subscription.State{Account: account, ID: "sub_life", Status: subscription.Active, PeriodEnd: events[5].PeriodEnd,
		CancelUnknown: true, EventCreated: events[5].EventCreated.Add(time.Hour), EventID: "evt_invoicepaid"}
	if stored, applied, err := s.Apply(ctx, paid); err != nil || !applied || !stored.CancelAtPeriodEnd || stored.Customer != "cus_life" {
		t.Fatalf("invoice state: applied=%v %v, the state after it %+v", applied, err, stored)
	}
	if got := get(t, s, account, "sub_life"); !got.CancelAtPeriodEnd || got.Customer != "cus_life" || got.Status != subscription.Active {
		t.Fatalf("stored %+v: the cancellation or the customer was lost", got)
	}
}

// A subscription naming no account there is refused, as is one that
// another account holds, and a state that cannot be stored.
func TestApplyRefusals(t *testing.T) {
	ctx := context.Background()
	s, account, accounts := newStore(t)
	st := life(account)[0]

	stranger := st
	stranger.Account = accounts.AccountOf("nobody@example.com")
	if _, _, err := s.Apply(ctx, stranger); !errors.Is(err, subscription.ErrNoAccount) {
		t.Fatalf("unknown account: %v, want ErrNoAccount", err)
	}
	if _, found, _ := s.AccountOf(ctx, st.ID); found {
		t.Fatal("the unknown account's subscription was linked")
	}

	if _, _, err := s.Apply(ctx, st); err != nil {
		t.Fatal(err)
	}
	other, _, err := accounts.SignUp(ctx, "bea@example.com")
	if err != nil {
		t.Fatal(err)
	}
	theft := life(other)[6]
	if _, _, err := s.Apply(ctx, theft); !errors.Is(err, subscription.ErrOtherAccount) {
		t.Fatalf("another account's subscription: %v, want ErrOtherAccount", err)
	}
	if all, err := s.Subscriptions(ctx, other); err != nil || len(all) != 0 {
		t.Fatal("the other account got a subscription state")
	}

	for name, mutate := range map[string]func(*subscription.State){
		"no account":      func(s *subscription.State) { s.Account = "" },
		"address":         func(s *subscription.State) { s.Account = "ana@example.com" },
		"bad id":          func(s *subscription.State) { s.ID = "cs_test_1" },
		"unknown status":  func(s *subscription.State) { s.Status = "splendid" },
		"no event":        func(s *subscription.State) { s.EventID = "" },
		"no event time":   func(s *subscription.State) { s.EventCreated = time.Time{} },
		"bad customer id": func(s *subscription.State) { s.Customer = "ana" },
	} {
		bad := st
		mutate(&bad)
		if _, _, err := s.Apply(ctx, bad); err == nil {
			t.Errorf("%s: applied", name)
		}
	}
}

// twoSubscriptions is what Stripe's events say of two subscriptions of
// one account: a paid one (A) and a second (B, another Checkout paid
// before A's events came, or opened in another tab), each event the state
// it leaves, oldest first within each subscription.
type twoSubscriptions struct {
	name string
	a, b []subscription.State
	// grants: whether the account has the chat once every event is in;
	// current: the subscription (A or B) the page shows.
	grants  bool
	current string
}

func twoSubscriptionCases(account, a, b string) []twoSubscriptions {
	p1 := t0.AddDate(0, 1, 0)
	st := func(id string, sec int, status string, cancel bool) subscription.State {
		return subscription.State{Account: account, ID: id, Customer: "cus_" + id[len("sub_"):], Status: status, PeriodEnd: p1,
			CancelAtPeriodEnd: cancel, EventCreated: t0.Add(time.Duration(sec) * time.Second), EventID: fmt.Sprintf("evt_%s_%d", id, sec)}
	}
	paid := func(id string, at int) []subscription.State {
		return []subscription.State{st(id, at, subscription.Incomplete, false), st(id, at+1, subscription.Active, false)}
	}
	return []twoSubscriptions{
		{name: "the duplicate cancelled after the paid one is active",
			a: paid(a, 0), b: append(paid(b, 60), st(b, 120, subscription.Canceled, false)), grants: true, current: a},
		{name: "the duplicate never paid, expired",
			a: paid(a, 60), b: []subscription.State{st(b, 0, subscription.Incomplete, false), st(b, 82800, subscription.IncompleteExpired, false)},
			grants: true, current: a},
		{name: "the first ended, the second active",
			a: append(paid(a, 0), st(a, 600, subscription.Canceled, false)), b: paid(b, 60), grants: true, current: b},
		{name: "both active: the one paid furthest ahead",
			a: paid(a, 0), b: append(paid(b, 60), subscription.State{Account: account, ID: b, Customer: "cus_" + b[len("sub_"):],
				Status: subscription.Active, PeriodEnd: p1.AddDate(0, 0, 1), EventCreated: t0.Add(90 * time.Second), EventID: "evt_" + b + "_90"}),
			grants: true, current: b},
		{name: "one cancelled at its period's end, the other canceled",
			a: append(paid(a, 0), st(a, 300, subscription.Active, true)), b: append(paid(b, 60), st(b, 120, subscription.Canceled, false)),
			grants: true, current: a},
		{name: "both canceled: the newest event's",
			a: append(paid(a, 0), st(a, 600, subscription.Canceled, false)), b: append(paid(b, 60), st(b, 120, subscription.Canceled, false)),
			grants: false, current: a},
	}
}

// Two subscriptions of one account, their events in any order of arrival:
// each keeps its own newest state, and the account has the chat while
// either grants it; a cancelled duplicate's events never take a paid
// subscription's access away.
func TestTwoSubscriptionsOfAnAccountInAnyOrder(t *testing.T) {
	ctx := context.Background()
	x := newFixture(t)
	now := t0.Add(24 * time.Hour)
	r := rand.New(rand.NewPCG(38, 9))
	n := 0
	for ci, shape := range twoSubscriptionCases("", "sub_A", "sub_B") {
		events := len(shape.a) + len(shape.b)
		orders := map[string][]int{"as made, A first": nil, "reversed": nil, "interleaved, B first": nil}
		for name := range orders {
			var order []int
			switch name {
			case "as made, A first":
				for i := range events {
					order = append(order, i)
				}
			case "reversed":
				for i := range events {
					order = append(order, events-1-i)
				}
			case "interleaved, B first":
				for i := range max(len(shape.a), len(shape.b)) {
					if i < len(shape.b) {
						order = append(order, len(shape.a)+i)
					}
					if i < len(shape.a) {
						order = append(order, i)
					}
				}
			}
			orders[name] = order
		}
		orders["shuffled"] = r.Perm(events)
		for name, order := range orders {
			n++
			n := n
			t.Run(shape.name+"/"+name, func(t *testing.T) {
				t.Parallel()
				account := x.signUp(t, fmt.Sprintf("ana%d@example.com", n))
				a, b := fmt.Sprintf("sub_A%d", n), fmt.Sprintf("sub_B%d", n)
				c := twoSubscriptionCases(account, a, b)[ci]
				all := append(slices.Clone(c.a), c.b...)
				for _, i := range order {
					if _, _, err := x.subs.Apply(ctx, all[i]); err != nil {
						t.Fatalf("%s: %v", all[i].EventID, err)
					}
				}
				got, err := x.subs.Subscriptions(ctx, account)
				if err != nil || len(got) != 2 {
					t.Fatalf("Subscriptions = %+v, %v; want two", got, err)
				}
				for _, want := range []subscription.State{c.a[len(c.a)-1], c.b[len(c.b)-1]} {
					st, found, err := x.subs.Get(ctx, account, want.ID)
					if err != nil || !found || st.EventID != want.EventID || st.Status != want.Status || !st.PeriodEnd.Equal(want.PeriodEnd) {
						t.Fatalf("%s stored %+v (%v), want its newest event's state %+v", want.ID, st, err, want)
					}
				}
				cur, found := subscription.Current(got, now)
				wantID := map[string]string{"sub_A": a, "sub_B": b}[shape.current]
				if !found || cur.Grants(now) != c.grants || cur.ID != wantID {
					t.Fatalf("order %v: the account's subscription is %+v (grants %t), want %s granting %t", order, cur, cur.Grants(now), wantID, c.grants)
				}
			})
		}
	}
}

// writeLegacy writes an account's one subscription state as the store did
// before issue 38: in the account's item (acct#<account>, subscription),
// with the subscription linked to the account.
func (x fixture) writeLegacy(t *testing.T, st subscription.State) {
	t.Helper()
	ctx := context.Background()
	if err := x.subs.Link(ctx, st.Account, st.ID); err != nil {
		t.Fatal(err)
	}
	n := func(v int64) types.AttributeValue {
		return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
	}
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	_, err := x.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(x.table), Item: map[string]types.AttributeValue{
		"pk": s("acct#" + st.Account), "sk": s("subscription"), "subscription": s(st.ID), "customer": s(st.Customer),
		"status": s(st.Status), "current_period_end": n(st.PeriodEnd.Unix()), "event_created": n(st.EventCreated.Unix()),
		"event_id": s(st.EventID), "event_order": s(subscription.Order(st)), "write_id": s("0123456789abcdef0123456789abcdef"),
		"cancel_at_period_end": &types.AttributeValueMemberBOOL{Value: st.CancelAtPeriodEnd},
	}})
	if err != nil {
		t.Fatal(err)
	}
}

// legacyStored reports whether the account still has its item from
// before issue 38.
func (x fixture) legacyStored(t *testing.T, account string) bool {
	t.Helper()
	out, err := x.db.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(x.table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "acct#" + account}, "sk": &types.AttributeValueMemberS{Value: "subscription"}}})
	if err != nil {
		t.Fatal(err)
	}
	return out.Item != nil
}

// A subscriber whose state the store wrote before issue 38 keeps access on
// the deploy: the account's one item is read as the subscription it names;
// the account's next event moves it to that subscription's own item,
// where an older event still cannot regress it, and a duplicate's
// cancellation does not take it away. An item the previous version writes
// again meanwhile (old and new versions side by side) is read too, the
// newer state of the subscription winning.
func TestStateWrittenBeforeIssue38StillGrants(t *testing.T) {
	ctx := context.Background()
	x := newFixture(t)
	account := x.signUp(t, "ana@example.com")
	now := t0.Add(24 * time.Hour)
	paid := subscription.State{Account: account, ID: "sub_paid", Customer: "cus_paid", Status: subscription.Active,
		PeriodEnd: t0.AddDate(0, 1, 0), EventCreated: t0.Add(10 * time.Second), EventID: "evt_paid"}
	x.writeLegacy(t, paid)

	all, err := x.subs.Subscriptions(ctx, account)
	if cur, found := subscription.Current(all, now); err != nil || len(all) != 1 || !found || cur.ID != "sub_paid" || !cur.Grants(now) || cur.Customer != "cus_paid" {
		t.Fatalf("the former item read as %+v (%v): want sub_paid granting", all, err)
	}

	older := paid
	older.Status, older.EventCreated, older.EventID = subscription.Incomplete, t0, "evt_created"
	if after, applied, err := x.subs.Apply(ctx, older); err != nil || applied || after.EventID != "evt_paid" || after.Status != subscription.Active {
		t.Fatalf("an older event after the deploy: applied=%t %v, the state after it %+v", applied, err, after)
	}
	if x.legacyStored(t, account) {
		t.Fatal("the former item was not moved")
	}
	if st := get(t, x.subs, account, "sub_paid"); st.EventID != "evt_paid" || !st.Grants(now) {
		t.Fatalf("sub_paid after the move: %+v", st)
	}

	dup := []subscription.State{
		{Account: account, ID: "sub_dup", Customer: "cus_dup", Status: subscription.Active, PeriodEnd: t0.AddDate(0, 1, 0), EventCreated: t0.Add(20 * time.Second), EventID: "evt_dup_paid"},
		{Account: account, ID: "sub_dup", Customer: "cus_dup", Status: subscription.Canceled, PeriodEnd: t0.AddDate(0, 1, 0), EventCreated: t0.Add(30 * time.Second), EventID: "evt_dup_deleted"},
	}
	for _, st := range dup {
		if _, _, err := x.subs.Apply(ctx, st); err != nil {
			t.Fatal(err)
		}
	}
	all, err = x.subs.Subscriptions(ctx, account)
	if cur, _ := subscription.Current(all, now); err != nil || len(all) != 2 || cur.ID != "sub_paid" || !cur.Grants(now) {
		t.Fatalf("after the duplicate's cancellation: %+v (%v), the account's %+v", all, err, cur)
	}

	// The previous version, still serving during the deploy, applies the
	// paid subscription's newer event to the former item.
	ended := paid
	ended.Status, ended.EventCreated, ended.EventID = subscription.Canceled, t0.Add(40*time.Second), "evt_paid_deleted"
	x.writeLegacy(t, ended)
	if st := get(t, x.subs, account, "sub_paid"); st.EventID != "evt_paid_deleted" {
		t.Fatalf("sub_paid read as %+v, want the former item's newer state", st)
	}
	if _, _, err := x.subs.Apply(ctx, older); err != nil || x.legacyStored(t, account) {
		t.Fatalf("the second move: %v, former item left %t", err, x.legacyStored(t, account))
	}
	if st := get(t, x.subs, account, "sub_paid"); st.EventID != "evt_paid_deleted" || st.Grants(now) {
		t.Fatalf("sub_paid after the second move: %+v", st)
	}
}
