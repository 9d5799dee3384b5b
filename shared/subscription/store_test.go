package subscription_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/chat"
	"42sisters.ai/oracle/shared/subscription"
)

// newStore returns the subscription store on a fresh chat table in moto,
// and an account signed up there.
func newStore(t *testing.T) (*subscription.Store, string, *chat.Store) {
	t.Helper()
	f := provision.ForTest(t, nil)
	h, err := audit.NewHasher("a pepper of sixteen bytes or more")
	if err != nil {
		t.Fatal(err)
	}
	db := awsenv.NewTables(f.AWS)
	accounts := chat.NewStore(db, f.Ref("ChatTable"), h, nil)
	account, _, err := accounts.SignUp(context.Background(), "ana@example.com")
	if err != nil {
		t.Fatal(err)
	}
	return subscription.NewStore(db, f.Ref("ChatTable")), account, accounts
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

func get(t *testing.T, s *subscription.Store, account string) subscription.State {
	t.Helper()
	got, found, err := s.Get(context.Background(), account)
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
		got := get(t, s, account)
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
	if got := get(t, s, account); got.EventID != "evt_pastdue" || got.Status != subscription.PastDue {
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
	if got := get(t, s, account); got.EventID != "evt_race9" || !got.PeriodEnd.Equal(t0.AddDate(0, 10, 0)) {
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
	if got := get(t, s, account); !got.CancelAtPeriodEnd || got.Customer != "cus_life" || got.Status != subscription.Active {
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
	if _, found, _ := s.Get(ctx, other); found {
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
