package chat_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/chat"
)

// takeFor spends one exchange of account as the chat does: its usage read,
// then taken under a policy with room for every new trial.
func takeFor(ctx context.Context, s *chat.Store, account string, subscribed bool, dailyCap int) (chat.Spent, error) {
	u, err := s.Usage(ctx, account)
	if err != nil {
		return chat.Spent{}, err
	}
	return s.TakeExchange(ctx, u, chat.Policy{Subscribed: subscribed, DailyCap: dailyCap, NewTrialsPerDay: 1000})
}

// take spends one exchange, failing the test on anything but a refusal.
func take(t *testing.T, s *chat.Store, account string, subscribed bool, dailyCap int) (chat.Spent, error) {
	t.Helper()
	sp, err := takeFor(context.Background(), s, account, subscribed, dailyCap)
	if err != nil && !errors.Is(err, chat.ErrTrialUsed) && !errors.Is(err, chat.ErrDailyCap) {
		t.Fatalf("TakeExchange: %v", err)
	}
	return sp, err
}

func TestTrialIsThreeExchangesThenRefused(t *testing.T) {
	ctx := context.Background()
	s, _, _, _ := newStore(t)
	account, _, err := s.SignUp(ctx, "ana@example.com")
	if err != nil {
		t.Fatal(err)
	}
	for i := range chat.TrialExchanges {
		sp, err := take(t, s, account, false, 100)
		if err != nil || sp.Plan != chat.PlanTrial || sp.Left != chat.TrialExchanges-1-i {
			t.Fatalf("exchange %d: %+v %v, want trial with %d left", i+1, sp, err, chat.TrialExchanges-1-i)
		}
		if err := s.Settle(ctx, sp); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := take(t, s, account, false, 100); !errors.Is(err, chat.ErrTrialUsed) {
		t.Fatalf("fourth exchange: %v, want ErrTrialUsed", err)
	}
	// Signing up again (a new sign-in link) does not reset the count.
	if _, _, err := s.SignUp(ctx, "ANA@example.com"); err != nil {
		t.Fatal(err)
	}
	if _, err := take(t, s, account, false, 100); !errors.Is(err, chat.ErrTrialUsed) {
		t.Fatalf("after signing up again: %v, want ErrTrialUsed", err)
	}
	if u, err := s.Usage(ctx, account); err != nil || u.FreeLeft != 0 || u.TrialUsed != chat.TrialExchanges {
		t.Fatalf("Usage = %+v %v", u, err)
	}
	if _, err := takeFor(ctx, s, s.AccountOf("nobody@example.com"), true, 100); !errors.Is(err, chat.ErrNoAccount) {
		t.Fatalf("unknown account: %v, want ErrNoAccount", err)
	}
}

// INV-9, FM-10: ten concurrent messages with one free exchange left: one
// takes it, nine are refused.
func TestTenConcurrentMessagesTakeTheLastTrialExchangeOnce(t *testing.T) {
	ctx := context.Background()
	s, _, _, _ := newStore(t)
	account, _, err := s.SignUp(ctx, "ana@example.com")
	if err != nil {
		t.Fatal(err)
	}
	for range chat.TrialExchanges - 1 {
		if _, err := take(t, s, account, false, 100); err != nil {
			t.Fatal(err)
		}
	}
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		taken    int
		refused  int
		problems []error
	)
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := takeFor(ctx, s, account, false, 100)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				taken++
			case errors.Is(err, chat.ErrTrialUsed):
				refused++
			default:
				problems = append(problems, err)
			}
		}()
	}
	wg.Wait()
	if taken != 1 || refused != 9 || len(problems) > 0 {
		t.Fatalf("taken %d, refused %d, errors %v: want 1 and 9", taken, refused, problems)
	}
	if u, err := s.Usage(ctx, account); err != nil || u.TrialUsed != chat.TrialExchanges {
		t.Fatalf("trial used %+v %v, want %d", u, err, chat.TrialExchanges)
	}
}

func TestGiveBackReturnsAnExchangeOnce(t *testing.T) {
	ctx := context.Background()
	s, _, _, _ := newStore(t)
	account, _, err := s.SignUp(ctx, "ana@example.com")
	if err != nil {
		t.Fatal(err)
	}
	sp, err := take(t, s, account, false, 100)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{true, false} {
		if given, err := s.GiveBack(ctx, sp); err != nil || given != want {
			t.Fatalf("GiveBack %d: %v %v, want %v", i+1, given, err, want)
		}
	}
	if u, _ := s.Usage(ctx, account); u.FreeLeft != chat.TrialExchanges {
		t.Fatalf("free left %d after the give-back, want %d", u.FreeLeft, chat.TrialExchanges)
	}
	// A settled exchange cannot be given back.
	sp, _ = take(t, s, account, false, 100)
	if err := s.Settle(ctx, sp); err != nil {
		t.Fatal(err)
	}
	if given, err := s.GiveBack(ctx, sp); err != nil || given {
		t.Fatalf("GiveBack after Settle: %v %v, want nothing given", given, err)
	}
	if u, _ := s.Usage(ctx, account); u.FreeLeft != chat.TrialExchanges-1 {
		t.Fatalf("free left %d, want %d", u.FreeLeft, chat.TrialExchanges-1)
	}
}

func TestGrantedExchangesFollowTheTrial(t *testing.T) {
	ctx := context.Background()
	s, _, _, _ := newStore(t)
	account, _, err := s.SignUp(ctx, "ana@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Grant(ctx, s.AccountOf("nobody@example.com"), 2); !errors.Is(err, chat.ErrNoAccount) {
		t.Fatalf("grant to no account: %v", err)
	}
	for _, n := range []int{0, -1, chat.MaxGrant + 1} {
		if _, err := s.Grant(ctx, account, n); err == nil {
			t.Fatalf("grant of %d accepted", n)
		}
	}
	if g, err := s.Grant(ctx, account, 2); err != nil || g != 2 {
		t.Fatalf("Grant = %d %v, want 2", g, err)
	}
	plans := []chat.Plan{}
	for range chat.TrialExchanges + 2 {
		sp, err := take(t, s, account, false, 100)
		if err != nil {
			t.Fatalf("after %v: %v", plans, err)
		}
		plans = append(plans, sp.Plan)
		if sp.Plan == chat.PlanGranted {
			// A granted exchange given back is granted again.
			if given, err := s.GiveBack(ctx, sp); err != nil || !given {
				t.Fatalf("give back a granted exchange: %v %v", given, err)
			}
			if sp, err = take(t, s, account, false, 100); err != nil || sp.Plan != chat.PlanGranted {
				t.Fatalf("granted exchange again: %+v %v", sp, err)
			}
		}
	}
	want := "[trial trial trial granted granted]"
	if fmt.Sprint(plans) != want {
		t.Fatalf("plans %v, want %s", plans, want)
	}
	if _, err := take(t, s, account, false, 100); !errors.Is(err, chat.ErrTrialUsed) {
		t.Fatalf("after the grants: %v, want ErrTrialUsed", err)
	}
}

// The subscriber's fair use: dailyCap exchanges a UTC day, counted again
// the next day; a give-back of yesterday's exchange leaves today's count.
func TestDailyCapForSubscribers(t *testing.T) {
	ctx := context.Background()
	s, clock, _, _ := newStore(t)
	// Signed in: a day on, an account that never was would be forgotten.
	account := signedIn(t, s, "ana@example.com")
	var err error
	for range chat.TrialExchanges {
		if _, err := take(t, s, account, true, 2); err != nil {
			t.Fatal(err)
		}
	}
	var last chat.Spent
	for i := range 2 {
		sp, err := take(t, s, account, true, 2)
		if err != nil || sp.Plan != chat.PlanSubscriber || sp.Left != 1-i {
			t.Fatalf("subscriber exchange %d: %+v %v", i+1, sp, err)
		}
		last = sp
	}
	if _, err := take(t, s, account, true, 2); !errors.Is(err, chat.ErrDailyCap) {
		t.Fatalf("over the cap: %v, want ErrDailyCap", err)
	}
	if _, err := take(t, s, account, false, 2); !errors.Is(err, chat.ErrTrialUsed) {
		t.Fatalf("subscription ended: %v, want ErrTrialUsed", err)
	}
	// Given back the same day: one more today.
	if given, err := s.GiveBack(ctx, last); err != nil || !given {
		t.Fatalf("GiveBack: %v %v", given, err)
	}
	last, err = take(t, s, account, true, 2)
	if err != nil {
		t.Fatal(err)
	}
	clock.Add(24 * time.Hour)
	if sp, err := take(t, s, account, true, 2); err != nil || sp.Left != 1 {
		t.Fatalf("next day, first exchange: %+v %v", sp, err)
	}
	if given, err := s.GiveBack(ctx, last); err != nil || given {
		t.Fatalf("GiveBack of yesterday's: %v %v, want nothing given", given, err)
	}
	if sp, err := take(t, s, account, true, 2); err != nil || sp.Left != 0 {
		t.Fatalf("next day, second exchange: %+v %v", sp, err)
	}
	if _, err := take(t, s, account, true, 2); !errors.Is(err, chat.ErrDailyCap) {
		t.Fatalf("over the next day's cap: %v, want ErrDailyCap", err)
	}
	if u, _ := s.Usage(ctx, account); u.DayUsed != 2 {
		t.Fatalf("day used %d, want 2", u.DayUsed)
	}
}

// Concurrent subscriber messages at the cap: exactly the cap's worth.
func TestDailyCapHoldsUnderConcurrentMessages(t *testing.T) {
	ctx := context.Background()
	s, _, _, _ := newStore(t)
	account, _, err := s.SignUp(ctx, "ana@example.com")
	if err != nil {
		t.Fatal(err)
	}
	for range chat.TrialExchanges {
		if _, err := take(t, s, account, true, 3); err != nil {
			t.Fatal(err)
		}
	}
	var (
		wg            sync.WaitGroup
		mu            sync.Mutex
		taken, capped int
	)
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := takeFor(ctx, s, account, true, 3)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				taken++
			case errors.Is(err, chat.ErrDailyCap):
				capped++
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if taken != 3 || capped != 7 {
		t.Fatalf("taken %d, capped %d: want 3 and 7", taken, capped)
	}
}

func TestConversationKeepsTheLatestWithinTheBoundAndForgets(t *testing.T) {
	ctx := context.Background()
	s, clock, db, table := newStore(t)
	conv := s.Conversation(db, 30*24*time.Hour)
	account, _, err := s.SignUp(ctx, "ana@example.com")
	if err != nil {
		t.Fatal(err)
	}
	other, _, _ := s.SignUp(ctx, "bo@example.com")
	if err := conv.Append(ctx, other, "not yours", "nor this", clock.Now()); err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		clock.Add(time.Minute)
		if err := conv.Append(ctx, account, fmt.Sprintf("question %02d", i), fmt.Sprintf("answer %02d", i), clock.Now()); err != nil {
			t.Fatal(err)
		}
	}
	all, err := conv.Recent(ctx, account, 1<<20)
	if err != nil || len(all) != 60 || all[0].Text != "question 00" || all[59].Text != "answer 29" || all[1].Role != chat.RoleAether {
		t.Fatalf("whole conversation: %d turns %v", len(all), err)
	}
	// 11 characters each: 45 hold four turns, the latest two exchanges.
	got, err := conv.Recent(ctx, account, 45)
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, turn := range got {
		texts = append(texts, turn.Role+":"+turn.Text)
	}
	if want := "user:question 28 aether:answer 28 user:question 29 aether:answer 29"; strings.Join(texts, " ") != want {
		t.Fatalf("bounded: %q, want %q", strings.Join(texts, " "), want)
	}
	// 35 hold three turns: the reply without its message is left out.
	if got, _ := conv.Recent(ctx, account, 35); len(got) != 2 || got[0].Role != chat.RoleUser {
		t.Fatalf("bounded to 35: %+v", got)
	}

	// Every message expires with the retention; until the table removes
	// it, it is not read.
	out, err := db.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(table),
		KeyConditionExpression: aws.String("pk = :pk AND begins_with(sk, :m)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": &types.AttributeValueMemberS{Value: "acct#" + account}, ":m": &types.AttributeValueMemberS{Value: "msg#"}}})
	if err != nil || len(out.Items) != 60 {
		t.Fatalf("items %d %v", len(out.Items), err)
	}
	for _, it := range out.Items {
		if _, ok := it["expires_at"].(*types.AttributeValueMemberN); !ok {
			t.Fatalf("message without expires_at: %v", it["sk"])
		}
	}
	clock.Add(31 * 24 * time.Hour)
	if got, err := conv.Recent(ctx, account, 1<<20); err != nil || len(got) != 0 {
		t.Fatalf("after the retention: %d turns %v", len(got), err)
	}
	clock.Add(-31 * 24 * time.Hour)

	n, err := conv.Forget(ctx, account)
	if err != nil || n != 60 {
		t.Fatalf("Forget = %d %v, want 60", n, err)
	}
	if got, _ := conv.Recent(ctx, account, 1<<20); len(got) != 0 {
		t.Fatalf("after Forget: %d turns", len(got))
	}
	if got, _ := conv.Recent(ctx, other, 1<<20); len(got) != 2 {
		t.Fatalf("another account's conversation: %d turns, want 2", len(got))
	}
	if _, err := s.Address(ctx, account); err != nil {
		t.Fatalf("the account after Forget: %v", err)
	}

	// Two exchanges at the same instant (two tabs) keep all four turns,
	// each message before its reply.
	for _, m := range []string{"tab one", "tab two"} {
		if err := conv.Append(ctx, account, m, "re: "+m, clock.Now()); err != nil {
			t.Fatal(err)
		}
	}
	texts = nil
	got, _ = conv.Recent(ctx, account, 1<<20)
	for _, turn := range got {
		texts = append(texts, turn.Text)
	}
	if want := "tab one|re: tab one|tab two|re: tab two"; strings.Join(texts, "|") != want {
		t.Fatalf("same-instant exchanges: %q, want %q", strings.Join(texts, "|"), want)
	}
}

func TestSignInRateWindows(t *testing.T) {
	ctx := context.Background()
	s, clock, _, _ := newStore(t)
	w := chat.Window{Limit: 3, Per: time.Hour}
	for i := range 3 {
		if ok, err := s.Allow(ctx, "signin-acct#a", w); err != nil || !ok {
			t.Fatalf("request %d: %v %v", i+1, ok, err)
		}
	}
	if ok, err := s.Allow(ctx, "signin-acct#a", w); err != nil || ok {
		t.Fatalf("fourth request: %v %v, want refused", ok, err)
	}
	if ok, _ := s.Allow(ctx, "signin-acct#b", w); !ok {
		t.Fatal("another name shares the window")
	}
	clock.Add(time.Hour)
	if ok, err := s.Allow(ctx, "signin-acct#a", w); err != nil || !ok {
		t.Fatalf("next window: %v %v", ok, err)
	}
}

func TestSignOutIsRecorded(t *testing.T) {
	ctx := context.Background()
	s, clock, _, _ := newStore(t)
	account, _, _ := s.SignUp(ctx, "ana@example.com")
	if err := s.SignOut(ctx, account); err != nil {
		t.Fatal(err)
	}
	if u, err := s.Usage(ctx, account); err != nil || !u.SignedOutAt.Equal(clock.Now()) {
		t.Fatalf("signed out at %v %v, want %v", u.SignedOutAt, err, clock.Now())
	}
	if err := s.SignOut(ctx, s.AccountOf("nobody@example.com")); !errors.Is(err, chat.ErrNoAccount) {
		t.Fatalf("sign out of no account: %v", err)
	}
}

// A grant named by an id is made once however often it is asked; another
// id grants again.
func TestGrantOnceGrantsOncePerID(t *testing.T) {
	ctx := context.Background()
	s, _, _, _ := newStore(t)
	account, _, err := s.SignUp(ctx, "ana@example.com")
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []struct {
		id      string
		granted int
		made    bool
	}{{"req-1", 3, true}, {"req-1", 3, false}, {"req-2", 6, true}, {"req-1", 6, false}} {
		g, made, err := s.GrantOnce(ctx, account, 3, want.id)
		if err != nil || g != want.granted || made != want.made {
			t.Fatalf("grant %d (%s) = %d %v %v, want %d %v", i, want.id, g, made, err, want.granted, want.made)
		}
	}
	if _, _, err := s.GrantOnce(ctx, account, 3, ""); err == nil {
		t.Fatal("a grant without an id was made")
	}
	if u, err := s.Usage(ctx, account); err != nil || u.Granted != 6 || u.Created.IsZero() {
		t.Fatalf("usage %+v, %v", u, err)
	}
}

// countingSpans counts the messages the conversation's queries read.
type countingSpans struct {
	chat.Spans
	mu    sync.Mutex
	items int
}

func (c *countingSpans) Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	out, err := c.Spans.Query(ctx, in, optFns...)
	if err == nil {
		c.mu.Lock()
		c.items += len(out.Items)
		c.mu.Unlock()
	}
	return out, err
}

// The model's history is read without reading the whole conversation:
// a consistent read is paid for by the size of the items it reads.
func TestRecentReadsLittleMoreThanTheBound(t *testing.T) {
	ctx := context.Background()
	s, clock, db, _ := newStore(t)
	spans := &countingSpans{Spans: db}
	conv := s.Conversation(spans, 30*24*time.Hour)
	account, _, err := s.SignUp(ctx, "ana@example.com")
	if err != nil {
		t.Fatal(err)
	}
	turn := strings.Repeat("x", 1000)
	for range 20 {
		clock.Add(time.Minute)
		if err := conv.Append(ctx, account, turn, turn, clock.Now()); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ bound, turns, mostRead int }{
		{8000, 8, 9},    // the first page holds them; one more shows the bound
		{12500, 12, 13}, // a second page sized by the first
		{1 << 20, 40, 40},
	} {
		spans.items = 0
		got, err := conv.Recent(ctx, account, c.bound)
		if err != nil || len(got) != c.turns {
			t.Fatalf("Recent(%d): %d turns %v, want %d", c.bound, len(got), err, c.turns)
		}
		if spans.items > c.mostRead {
			t.Errorf("Recent(%d) read %d messages for %d turns, want at most %d", c.bound, spans.items, c.turns, c.mostRead)
		}
	}
}

// countingTables counts the conditional updates the store makes.
type countingTables struct {
	chat.Tables
	mu      sync.Mutex
	updates int
}

func (c *countingTables) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	c.mu.Lock()
	c.updates++
	c.mu.Unlock()
	return c.Tables.UpdateItem(ctx, in, optFns...)
}

// A subscriber whose trial is used and who has no grant spends an exchange
// in one update (the day's count): the usage read says the trial and the
// grants have nothing to ask for. With a grant, the grant is taken first.
func TestSubscriberExchangeSkipsTheGrantItHasNot(t *testing.T) {
	ctx := context.Background()
	f := provision.ForTest(t, nil)
	h, err := audit.NewHasher("a pepper of sixteen bytes or more")
	if err != nil {
		t.Fatal(err)
	}
	db := &countingTables{Tables: awsenv.NewTables(f.AWS)}
	s := chat.NewStore(db, f.Ref("ChatTable"), h, testkit.NewClock(time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)).Now)
	account, _, err := s.SignUp(ctx, "ana@example.com")
	if err != nil {
		t.Fatal(err)
	}
	for range chat.TrialExchanges + 1 { // the trial, then the day's first
		if _, err := takeFor(ctx, s, account, true, 10); err != nil {
			t.Fatal(err)
		}
	}
	db.updates = 0
	if sp, err := takeFor(ctx, s, account, true, 10); err != nil || sp.Plan != chat.PlanSubscriber || db.updates != 1 {
		t.Fatalf("a subscriber's exchange: %+v %v in %d updates, want 1", sp, err, db.updates)
	}
	if _, err := s.Grant(ctx, account, 1); err != nil {
		t.Fatal(err)
	}
	if sp, err := takeFor(ctx, s, account, true, 10); err != nil || sp.Plan != chat.PlanGranted {
		t.Fatalf("with a grant: %+v %v, want the grant taken", sp, err)
	}
}
