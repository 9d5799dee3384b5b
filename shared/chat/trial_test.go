package chat_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"42sisters.ai/oracle/shared/chat"
)

// spendTrial signs addr up and takes every exchange its trial still gives,
// returning how many it got.
func spendTrial(t *testing.T, s *chat.Store, addr string) int {
	t.Helper()
	ctx := context.Background()
	account, _, err := s.SignUp(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	for range chat.TrialExchanges + 1 {
		sp, err := takeFor(ctx, s, account, false, 100)
		if errors.Is(err, chat.ErrTrialUsed) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Settle(ctx, sp); err != nil {
			t.Fatal(err)
		}
		got++
	}
	return got
}

// Issue 38's fifth finding: one person's addresses (+tags, Gmail's dots
// and its two domains, letter case) share one trial; another person's
// does not.
func TestOneTrialPerPerson(t *testing.T) {
	cases := []struct {
		name  string
		addrs []string
	}{
		{"plus tags", []string{"ana@example.com", "ana+1@example.com", "Ana+2@Example.com"}},
		{"Gmail's dots and domains", []string{"a.n.a@gmail.com", "ana@googlemail.com", "an.a+x@gmail.com"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, _, _, _ := newStore(t)
			if got := spendTrial(t, s, c.addrs[0]); got != chat.TrialExchanges {
				t.Fatalf("%s: %d exchanges, want the whole trial", c.addrs[0], got)
			}
			for _, addr := range c.addrs[1:] {
				if got := spendTrial(t, s, addr); got != 0 {
					t.Errorf("%s: %d free exchanges after %s used the trial", addr, got, c.addrs[0])
				}
				u, err := s.Usage(context.Background(), s.AccountOf(addr))
				if err != nil || u.FreeLeft != 0 {
					t.Errorf("%s: usage %+v %v, want nothing free", addr, u, err)
				}
			}
			// Dots outside Gmail name other mailboxes, so other people.
			if got := spendTrial(t, s, "a.n.a@example.org"); got != chat.TrialExchanges {
				t.Errorf("another person: %d exchanges, want a whole trial", got)
			}
		})
	}
}

// The trial's item holds no address and is shared: an account that
// counted its trial before trials had an item keeps that count.
func TestTrialStartsFromAnAccountsEarlierCount(t *testing.T) {
	ctx := context.Background()
	s, _, db, table := newStore(t)
	account, _, err := s.SignUp(ctx, "ana@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(table), Key: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: "acct#" + account}, "sk": &types.AttributeValueMemberS{Value: "account"}},
		UpdateExpression:          aws.String("SET trial_used = :n REMOVE trial"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":n": &types.AttributeValueMemberN{Value: "2"}},
	}); err != nil {
		t.Fatal(err)
	}
	if u, err := s.Usage(ctx, account); err != nil || u.FreeLeft != 1 || u.TrialStarted {
		t.Fatalf("usage of an earlier account: %+v %v, want 1 left", u, err)
	}
	if got := spendTrial(t, s, "ana@example.com"); got != 1 {
		t.Fatalf("%d exchanges, want the one left", got)
	}
	out, err := db.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	for _, item := range out.Items {
		if sk := item["sk"].(*types.AttributeValueMemberS).Value; sk == "trial" {
			if _, ok := item["email"]; ok || len(item) > 6 {
				t.Fatalf("the trial item holds more than its count: %v", item)
			}
		}
	}
}

// The service-wide cap on trials started each UTC day: once reached, a
// new trial is refused (ErrTrialsPaused) while trials already started go
// on and nothing is spent; the next day starts a new count.
func TestNewTrialsPerDayCap(t *testing.T) {
	ctx := context.Background()
	s, clock, _, _ := newStore(t)
	policy := chat.Policy{NewTrialsPerDay: 2, DailyCap: 10}
	take := func(addr string) (chat.Spent, error) {
		t.Helper()
		account, _, err := s.SignUp(ctx, addr)
		if err != nil {
			t.Fatal(err)
		}
		u, err := s.Usage(ctx, account)
		if err != nil {
			t.Fatal(err)
		}
		return s.TakeExchange(ctx, u, policy)
	}
	for _, addr := range []string{"one@example.com", "two@example.com"} {
		if sp, err := take(addr); err != nil || sp.Plan != chat.PlanTrial {
			t.Fatalf("%s: %+v %v, want a trial exchange", addr, sp, err)
		}
	}
	if _, err := take("three@example.com"); !errors.Is(err, chat.ErrTrialsPaused) {
		t.Fatalf("a third new trial: %v, want ErrTrialsPaused", err)
	}
	if u, _ := s.Usage(ctx, s.AccountOf("three@example.com")); u.TrialStarted || u.FreeLeft != chat.TrialExchanges {
		t.Fatalf("the refused trial: %+v, want it whole and unstarted", u)
	}
	if sp, err := take("one@example.com"); err != nil || sp.Plan != chat.PlanTrial {
		t.Fatalf("a started trial: %+v %v, want its second exchange", sp, err)
	}
	// A subscriber whose trial cannot start is served from the day's
	// allowance.
	policy.Subscribed = true
	if sp, err := take("three@example.com"); err != nil || sp.Plan != chat.PlanSubscriber {
		t.Fatalf("a subscriber: %+v %v", sp, err)
	}
	policy.Subscribed = false
	clock.Add(24 * time.Hour)
	if sp, err := take("three@example.com"); err != nil || sp.Plan != chat.PlanTrial {
		t.Fatalf("the next day: %+v %v, want the trial", sp, err)
	}
}

// Ten concurrent first messages of one new trial take ten exchanges of
// nothing more than the trial and start it once.
func TestConcurrentFirstMessagesStartOneTrial(t *testing.T) {
	ctx := context.Background()
	s, _, _, _ := newStore(t)
	account, _, err := s.SignUp(ctx, "ana@example.com")
	if err != nil {
		t.Fatal(err)
	}
	u, err := s.Usage(ctx, account)
	if err != nil {
		t.Fatal(err)
	}
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		trials int
	)
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sp, err := s.TakeExchange(ctx, u, chat.Policy{NewTrialsPerDay: 1000})
			if err != nil && !errors.Is(err, chat.ErrTrialUsed) {
				t.Error(err)
			}
			if err == nil && sp.Plan == chat.PlanTrial {
				mu.Lock()
				trials++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if trials != chat.TrialExchanges {
		t.Fatalf("%d trial exchanges taken, want %d", trials, chat.TrialExchanges)
	}
}
