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

// newStore returns the chat store on a fresh table, with a settable clock,
// and the table for reading items directly.
func newStore(t *testing.T) (*chat.Store, *testkit.Clock, *dynamodb.Client, string) {
	t.Helper()
	f := provision.ForTest(t, nil)
	h, err := audit.NewHasher("a pepper of sixteen bytes or more")
	if err != nil {
		t.Fatal(err)
	}
	c := testkit.NewClock(time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC))
	table := f.Ref("ChatTable")
	return chat.NewStore(awsenv.NewTables(f.AWS), table, h, c.Now), c, dynamodb.NewFromConfig(f.AWS), table
}

// signedIn makes the account of addr and signs it in once (confirmed).
func signedIn(t *testing.T, s *chat.Store, addr string) string {
	t.Helper()
	ctx := context.Background()
	account, _, err := s.SignUp(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	token, _, err := s.IssueSignIn(ctx, account)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ConsumeSignIn(ctx, token); err != nil {
		t.Fatal(err)
	}
	return account
}

func TestSignUpKeepsOneAccountPerAddress(t *testing.T) {
	ctx := context.Background()
	s, _, _, _ := newStore(t)
	if _, err := s.Address(ctx, s.AccountOf("ana@example.com")); !errors.Is(err, chat.ErrNoAccount) {
		t.Fatalf("Address before sign-up: %v, want ErrNoAccount", err)
	}
	first, created, err := s.SignUp(ctx, "Ana@Example.com")
	if err != nil || !created {
		t.Fatalf("first SignUp: created=%v %v", created, err)
	}
	if !strings.HasPrefix(first, audit.HashPrefix) || strings.Contains(first, "example") {
		t.Fatalf("account %q is not a keyed hash", first)
	}
	again, created, err := s.SignUp(ctx, " ana@example.com ")
	if err != nil || created || again != first {
		t.Fatalf("second SignUp: %q created=%v %v, want %q not created", again, created, err, first)
	}
	if addr, err := s.Address(ctx, first); err != nil || addr != "ana@example.com" {
		t.Fatalf("Address = %q, %v: want its canonical form", addr, err)
	}
}

// Issue 38's first finding: a look-alike of a person's address neither
// names their account nor changes the address it holds, and an account's
// address is never changed by a sign-up, whatever it holds.
func TestSignUpRefusesALookalikeAndKeepsAnEarlierAddress(t *testing.T) {
	ctx := context.Background()
	s, _, db, table := newStore(t)
	victim, _, err := s.SignUp(ctx, "kate@gmail.com")
	if err != nil {
		t.Fatal(err)
	}
	for _, lookalike := range []string{"kate@gmaİl.com", "\u212Aate@gmail.com"} {
		if account, _, err := s.SignUp(ctx, lookalike); err == nil {
			t.Errorf("SignUp(%q) made account %q, want a refusal", lookalike, account)
		}
	}
	// An account written before addresses were canonical holds another
	// spelling: a sign-up of its canonical form leaves it as it is.
	if _, err := db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(table), Key: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: "acct#" + victim}, "sk": &types.AttributeValueMemberS{Value: "account"}},
		UpdateExpression:          aws.String("SET email = :e"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":e": &types.AttributeValueMemberS{Value: "Kate@Gmail.com"}},
	}); err != nil {
		t.Fatal(err)
	}
	if again, created, err := s.SignUp(ctx, "KATE@gmail.com"); err != nil || created || again != victim {
		t.Fatalf("SignUp of the canonical form: %q created=%v %v", again, created, err)
	}
	if addr, err := s.Address(ctx, victim); err != nil || addr != "Kate@Gmail.com" {
		t.Fatalf("Address = %q, %v: a sign-up changed it", addr, err)
	}
}

func TestSignInLinkIsSingleUseAndExpires(t *testing.T) {
	ctx := context.Background()
	s, clock, db, table := newStore(t)
	account, _, err := s.SignUp(ctx, "ana@example.com")
	if err != nil {
		t.Fatal(err)
	}
	token, expires, err := s.IssueSignIn(ctx, account)
	if err != nil {
		t.Fatal(err)
	}
	if got := expires.Sub(clock.Now()); got != chat.SignInTTL {
		t.Fatalf("expires in %v, want %v", got, chat.SignInTTL)
	}
	// The table keeps only the token's hash: reading it signs no one in.
	items, err := db.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range items.Items {
		for name, v := range it {
			if strings.Contains(fmt.Sprint(v), token) {
				t.Fatalf("the table holds the working token in %s", name)
			}
		}
	}
	if got, err := s.ConsumeSignIn(ctx, token); err != nil || got != account {
		t.Fatalf("first use: %q %v, want %q", got, err, account)
	}
	if _, err := s.ConsumeSignIn(ctx, token); !errors.Is(err, chat.ErrSignInUsed) {
		t.Fatalf("replayed link: %v, want ErrSignInUsed", err)
	}

	late, _, err := s.IssueSignIn(ctx, account)
	if err != nil {
		t.Fatal(err)
	}
	clock.Add(chat.SignInTTL)
	if _, err := s.ConsumeSignIn(ctx, late); !errors.Is(err, chat.ErrSignInExpired) {
		t.Fatalf("link used at its expiry: %v, want ErrSignInExpired", err)
	}

	forged := []string{
		"",
		"not a token",
		strings.Repeat("A", 43), // well formed, never minted
		token[:42],
		token + "A",
		strings.Replace(token, token[:1], "!", 1),
	}
	for _, f := range forged {
		if _, err := s.ConsumeSignIn(ctx, f); !errors.Is(err, chat.ErrSignInInvalid) {
			t.Errorf("forged link %q: %v, want ErrSignInInvalid", f, err)
		}
	}
}

// Ten tabs opening the same link at once sign in once.
func TestSignInLinkOpenedTenTimesAtOnceSignsInOnce(t *testing.T) {
	ctx := context.Background()
	s, _, _, _ := newStore(t)
	account, _, err := s.SignUp(ctx, "ana@example.com")
	if err != nil {
		t.Fatal(err)
	}
	token, _, err := s.IssueSignIn(ctx, account)
	if err != nil {
		t.Fatal(err)
	}
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		signedIn  int
		refusals  int
		otherErrs []error
	)
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.ConsumeSignIn(ctx, token)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				signedIn++
			case errors.Is(err, chat.ErrSignInUsed):
				refusals++
			default:
				otherErrs = append(otherErrs, err)
			}
		}()
	}
	wg.Wait()
	if signedIn != 1 || refusals != 9 || len(otherErrs) > 0 {
		t.Fatalf("signed in %d times, refused %d, errors %v: want 1 and 9", signedIn, refusals, otherErrs)
	}
}

// TestRemoveAccountStartsTheTrialAfresh: a removed account is gone (its
// address with it) and signs up again with its whole trial; removing it
// twice says there was nothing the second time, and another account stays.
func TestRemoveAccountStartsTheTrialAfresh(t *testing.T) {
	ctx := context.Background()
	s, _, _, _ := newStore(t)
	account, _, err := s.SignUp(ctx, "smoke@example.com")
	if err != nil {
		t.Fatal(err)
	}
	other, _, err := s.SignUp(ctx, "other@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := takeFor(ctx, s, account, false, 100); err != nil {
		t.Fatal(err)
	}
	if u, err := s.Usage(ctx, account); err != nil || u.FreeLeft != chat.TrialExchanges-1 {
		t.Fatalf("usage before: %+v %v", u, err)
	}
	for i, want := range []bool{true, false} {
		if removed, err := s.RemoveAccount(ctx, account); err != nil || removed != want {
			t.Fatalf("removal %d: removed=%v %v, want %v", i+1, removed, err, want)
		}
	}
	if _, err := s.Address(ctx, account); !errors.Is(err, chat.ErrNoAccount) {
		t.Fatalf("Address after removal: %v, want ErrNoAccount", err)
	}
	if _, err := s.Address(ctx, other); err != nil {
		t.Fatalf("the other account: %v", err)
	}
	if _, created, err := s.SignUp(ctx, "smoke@example.com"); err != nil || !created {
		t.Fatalf("sign-up after removal: created=%v %v", created, err)
	}
	if u, err := s.Usage(ctx, account); err != nil || u.FreeLeft != chat.TrialExchanges {
		t.Fatalf("usage after: %+v %v, want the whole trial", u, err)
	}
	if _, err := s.RemoveAccount(ctx, ""); err == nil {
		t.Fatal("removing no account named succeeded")
	}
}
