package chat_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"42sisters.ai/oracle/shared/chat"
)

// item reads one item of the table, nil when there is none.
func item(t *testing.T, db *dynamodb.Client, table, pk, sk string) map[string]types.AttributeValue {
	t.Helper()
	out, err := db.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName:      aws.String(table),
		Key:            map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}, "sk": &types.AttributeValueMemberS{Value: sk}},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	return out.Item
}

// expiry is an item's expires_at, the zero time when it has none.
func expiry(t *testing.T, it map[string]types.AttributeValue) time.Time {
	t.Helper()
	v, ok := it["expires_at"].(*types.AttributeValueMemberN)
	if !ok {
		return time.Time{}
	}
	n, err := strconv.ParseInt(v.Value, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return time.Unix(n, 0).UTC()
}

// scan is every item of the table.
func scan(t *testing.T, db *dynamodb.Client, table string) []map[string]types.AttributeValue {
	t.Helper()
	var all []map[string]types.AttributeValue
	var start map[string]types.AttributeValue
	for {
		out, err := db.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(table), ExclusiveStartKey: start, ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, out.Items...)
		if out.LastEvaluatedKey == nil {
			return all
		}
		start = out.LastEvaluatedKey
	}
}

// mentions reports whether any attribute of it names account, or any
// string of it holds s.
func mentions(it map[string]types.AttributeValue, s string) bool {
	for _, v := range it {
		if strings.Contains(fmt.Sprint(v), s) {
			return true
		}
	}
	return false
}

// tokenIndex is the sign-in index items of account.
func tokenIndex(t *testing.T, db *dynamodb.Client, table, account string) []map[string]types.AttributeValue {
	t.Helper()
	out, err := db.Query(context.Background(), &dynamodb.QueryInput{
		TableName:                 aws.String(table),
		KeyConditionExpression:    aws.String("pk = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: "signin#acct#" + account}},
		ConsistentRead:            aws.Bool(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	return out.Items
}

// TestUnconfirmedAccountExpiresAndConfirmationKeepsIt: a sign-in request
// makes an account that the table forgets 24 hours after the latest
// request (its tokens within SignInTTL); the first sign-in removes the
// expiry, and no later request puts one back.
func TestUnconfirmedAccountExpiresAndConfirmationKeepsIt(t *testing.T) {
	ctx := context.Background()
	s, clock, db, table := newStore(t)
	account, created, err := s.SignUp(ctx, "ana@example.com")
	if err != nil || !created {
		t.Fatalf("SignUp: created=%v %v", created, err)
	}
	pk := "acct#" + account
	if got, want := expiry(t, item(t, db, table, pk, "account")), clock.Now().Add(chat.UnconfirmedTTL); !got.Equal(want) {
		t.Fatalf("a never-used sign-up expires at %v, want %v", got, want)
	}
	_, expires, err := s.IssueSignIn(ctx, account)
	if err != nil {
		t.Fatal(err)
	}
	index := tokenIndex(t, db, table, account)
	if len(index) != 1 || !expiry(t, index[0]).Equal(expires) {
		t.Fatalf("the token's index: %v, want one item expiring at %v", index, expires)
	}
	tokenPK := index[0]["sk"].(*types.AttributeValueMemberS).Value
	if got := expiry(t, item(t, db, table, tokenPK, "signin")); !got.Equal(expires) {
		t.Fatalf("the token expires at %v, want %v", got, expires)
	}

	// A request an hour on starts the day again.
	clock.Add(time.Hour)
	if _, created, err := s.SignUp(ctx, "ana@example.com"); err != nil || created {
		t.Fatalf("second SignUp: created=%v %v", created, err)
	}
	if got, want := expiry(t, item(t, db, table, pk, "account")), clock.Now().Add(chat.UnconfirmedTTL); !got.Equal(want) {
		t.Fatalf("after a second request the account expires at %v, want %v", got, want)
	}
	token, _, err := s.IssueSignIn(ctx, account)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.ConsumeSignIn(ctx, token); err != nil || got != account {
		t.Fatalf("sign-in: %q %v", got, err)
	}
	acct := item(t, db, table, pk, "account")
	if _, has := acct["expires_at"]; has {
		t.Fatalf("a confirmed account keeps an expiry: %v", acct)
	}
	if _, has := acct["confirmed_at"]; !has {
		t.Fatalf("the sign-in did not confirm the account: %v", acct)
	}
	clock.Add(2 * chat.UnconfirmedTTL)
	if _, created, err := s.SignUp(ctx, "ana@example.com"); err != nil || created {
		t.Fatalf("SignUp of a confirmed account: created=%v %v", created, err)
	}
	if _, has := item(t, db, table, pk, "account")["expires_at"]; has {
		t.Fatal("a sign-in request gave a confirmed account an expiry")
	}
	if _, err := s.Usage(ctx, account); err != nil {
		t.Fatalf("a confirmed account, two days on: %v", err)
	}
}

// TestSignUpNeverChangesAnAccountsAddress: an unauthenticated request for
// an address of the same account, confirmed or not, leaves the address
// the account has.
func TestSignUpNeverChangesAnAccountsAddress(t *testing.T) {
	ctx := context.Background()
	s, _, _, _ := newStore(t)
	for _, confirm := range []bool{false, true} {
		t.Run(fmt.Sprintf("confirmed=%v", confirm), func(t *testing.T) {
			first := fmt.Sprintf("kate%v@example.com", confirm)
			account, _, err := s.SignUp(ctx, first)
			if err != nil {
				t.Fatal(err)
			}
			if confirm {
				token, _, err := s.IssueSignIn(ctx, account)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := s.ConsumeSignIn(ctx, token); err != nil {
					t.Fatal(err)
				}
			}
			again, _, err := s.SignUp(ctx, " KATE"+strings.TrimPrefix(first, "kate"))
			if err != nil || again != account {
				t.Fatalf("SignUp of the same account: %q %v", again, err)
			}
			if got, err := s.Address(ctx, account); err != nil || got != first {
				t.Fatalf("Address = %q %v, want %q", got, err, first)
			}
		})
	}
}

// TestExpiredAccountReadsAsAbsent: past its expiry, an unconfirmed
// account the table has not yet removed has no address, no usage, takes
// no sign-in, and a new request makes it afresh.
func TestExpiredAccountReadsAsAbsent(t *testing.T) {
	ctx := context.Background()
	s, clock, db, table := newStore(t)
	account, _, err := s.SignUp(ctx, "old@example.com")
	if err != nil {
		t.Fatal(err)
	}
	clock.Add(chat.UnconfirmedTTL - 5*time.Minute)
	late, _, err := s.IssueSignIn(ctx, account) // works until 10 minutes past the account's expiry
	if err != nil {
		t.Fatal(err)
	}
	clock.Add(5 * time.Minute)
	if item(t, db, table, "acct#"+account, "account") == nil {
		t.Fatal("the test needs the expired item still in the table")
	}
	if _, err := s.Address(ctx, account); !errors.Is(err, chat.ErrNoAccount) {
		t.Fatalf("Address of an expired account: %v, want ErrNoAccount", err)
	}
	if _, err := s.Usage(ctx, account); !errors.Is(err, chat.ErrNoAccount) {
		t.Fatalf("Usage of an expired account: %v, want ErrNoAccount", err)
	}
	if _, err := s.ConsumeSignIn(ctx, late); !errors.Is(err, chat.ErrSignInInvalid) {
		t.Fatalf("a live link of an expired account: %v, want ErrSignInInvalid", err)
	}
	again, created, err := s.SignUp(ctx, "Old@example.com")
	if err != nil || !created || again != account {
		t.Fatalf("SignUp after expiry: %q created=%v %v, want the account made afresh", again, created, err)
	}
	if got, err := s.Address(ctx, account); err != nil || got != "old@example.com" {
		t.Fatalf("Address of the account made afresh: %q %v", got, err)
	}
	if u, err := s.Usage(ctx, account); err != nil || !u.Created.Equal(clock.Now()) {
		t.Fatalf("the account made afresh: %+v %v, created now", u, err)
	}
}

// TestEraseLeavesNothingOfTheAccount: the address, the conversation, the
// tokens (spent and not), the sign-in rate windows, the subscription's
// state and its link to the account are deleted; another account's items, and a trial item, stay;
// erasing again erases nothing and is no error.
func TestEraseLeavesNothingOfTheAccount(t *testing.T) {
	ctx := context.Background()
	s, clock, db, table := newStore(t)
	conv := s.Conversation(db, 30*24*time.Hour)
	other, _, err := s.SignUp(ctx, "other@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.IssueSignIn(ctx, other); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Allow(ctx, chat.SignInAccountLimit(other), chat.SignInPerAccount); err != nil {
		t.Fatal(err)
	}
	trial := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "trial#hmac-sha256:0123"}, "sk": &types.AttributeValueMemberS{Value: "trial"}}
	if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: trial}); err != nil {
		t.Fatal(err)
	}

	account, _, err := s.SignUp(ctx, "leaving@example.com")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 { // the previous window, then the current one
		if i > 0 {
			clock.Add(chat.SignInPerAccount.Per)
		}
		if ok, err := s.Allow(ctx, chat.SignInAccountLimit(account), chat.SignInPerAccount); err != nil || !ok {
			t.Fatal(ok, err)
		}
	}
	spent, _, err := s.IssueSignIn(ctx, account)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ConsumeSignIn(ctx, spent); err != nil {
		t.Fatal(err)
	}
	unused, _, err := s.IssueSignIn(ctx, account)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 14 { // more than one batch of messages
		if err := conv.Append(ctx, account, fmt.Sprintf("my secret %d", i), "an answer", clock.Now().Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	sub := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "acct#" + account}, "sk": &types.AttributeValueMemberS{Value: "subscription"},
		"subscription": &types.AttributeValueMemberS{Value: "sub_leaving"}}
	link := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "sub#sub_leaving"}, "sk": &types.AttributeValueMemberS{Value: "subscription"},
		"account": &types.AttributeValueMemberS{Value: account}}
	for _, it := range []map[string]types.AttributeValue{sub, link} {
		if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: it}); err != nil {
			t.Fatal(err)
		}
	}
	clock.Add(chat.SignInPerAccount.Per / 2)

	got, err := conv.Erase(ctx, account, chat.SignInPerAccount)
	want := chat.Erased{Account: true, Messages: 28, Tokens: 2, RateEntries: 2, Other: 1}
	if err != nil || got != want {
		t.Fatalf("Erase: %+v %v, want %+v", got, err, want)
	}
	all := scan(t, db, table)
	for _, it := range all {
		if mentions(it, account) || mentions(it, strings.TrimPrefix(account, "hmac-sha256:")) || mentions(it, "leaving@") || mentions(it, "my secret") {
			t.Errorf("left after the erasure: %v", it)
		}
	}
	var others, trials int
	for _, it := range all {
		switch {
		case mentions(it, other):
			others++
		case mentions(it, "trial#"):
			trials++
		}
	}
	if others != 4 || trials != 1 { // account, token, its index, rate window
		t.Fatalf("the erasure took others' items: %d of the other account's 4, %d trial item", others, trials)
	}
	if _, err := s.ConsumeSignIn(ctx, unused); !errors.Is(err, chat.ErrSignInInvalid) {
		t.Fatalf("an erased account's unused link: %v, want ErrSignInInvalid", err)
	}
	if again, err := conv.Erase(ctx, account, chat.SignInPerAccount); err != nil || again.Any() {
		t.Fatalf("erasing again: %+v %v, want nothing", again, err)
	}
	if _, err := conv.Erase(ctx, "", chat.SignInPerAccount); err == nil {
		t.Fatal("erasing no account named succeeded")
	}
}

// TestSettleAfterEraseSaysTheAccountIsGone: an exchange answered while its
// account was erased learns it when it settles, so that it forgets what
// it stored.
func TestSettleAfterEraseSaysTheAccountIsGone(t *testing.T) {
	ctx := context.Background()
	s, _, db, _ := newStore(t)
	conv := s.Conversation(db, time.Hour)
	account, _, err := s.SignUp(ctx, "busy@example.com")
	if err != nil {
		t.Fatal(err)
	}
	sp, err := takeFor(ctx, s, account, false, 10)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conv.Erase(ctx, account, chat.SignInPerAccount); err != nil {
		t.Fatal(err)
	}
	if err := s.Settle(ctx, sp); !errors.Is(err, chat.ErrNoAccount) {
		t.Fatalf("Settle after the erasure: %v, want ErrNoAccount", err)
	}
}
