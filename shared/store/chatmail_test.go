package store_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/store"
)

// A chat account's email is claimed, retried and closed like any other:
// one claim at a time, each attempt once, nothing after it is closed; and
// its record, apart from every other email's, keeps when it was created.
func TestChatMailDeliveredOnceOnTheSchedule(t *testing.T) {
	ctx := context.Background()
	_, ledger, clock := newOrders(t)
	const ttl = time.Hour
	m := store.ChatMail{Kind: oracle.MailChatSignIn, Account: "hmac-sha256:0123456789abcdef0123456789abcdef", Nonce: "req_0123456789"}
	first := clock.Now()

	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		tokens []string
	)
	for range 10 {
		wg.Go(func() {
			tok, _, err := ledger.ClaimChatMail(ctx, m, 0, time.Minute, ttl)
			switch {
			case err == nil:
				mu.Lock()
				tokens = append(tokens, tok)
				mu.Unlock()
			case !errors.Is(err, store.ErrMailInFlight):
				t.Errorf("claim: %v", err)
			}
		})
	}
	wg.Wait()
	if len(tokens) != 1 {
		t.Fatalf("%d claims of one attempt held at once, want 1", len(tokens))
	}
	tries, err := ledger.ChatMailFailed(ctx, m, tokens[0], store.Try{Attempt: 0, At: clock.Now(), Class: "transient"}, clock.Now().Add(5*time.Minute))
	if err != nil || len(tries) != 1 {
		t.Fatalf("failed: %v %v", tries, err)
	}
	if _, _, err := ledger.ClaimChatMail(ctx, m, 0, time.Minute, ttl); !errors.Is(err, store.ErrAttemptSpent) {
		t.Fatalf("claim of the spent attempt: %v", err)
	}

	// Another kind, account or nonce is another email.
	for _, other := range []store.ChatMail{
		{Kind: oracle.MailChatPaymentFailed, Account: m.Account, Nonce: m.Nonce},
		{Kind: m.Kind, Account: "hmac-sha256:fedcba9876543210fedcba9876543210", Nonce: m.Nonce},
		{Kind: m.Kind, Account: m.Account, Nonce: "req_other_request"},
	} {
		if _, _, err := ledger.ClaimChatMail(ctx, other, 0, time.Minute, ttl); err != nil {
			t.Errorf("%+v: %v", other, err)
		}
	}

	clock.Add(5 * time.Minute)
	tok, created, err := ledger.ClaimChatMail(ctx, m, 1, time.Minute, ttl)
	if err != nil {
		t.Fatal(err)
	}
	if !created.Equal(first) {
		t.Fatalf("the second attempt says the record was created at %v, want the first claim's %v", created, first)
	}
	if err := ledger.ReleaseChatMail(ctx, m, tok); err != nil {
		t.Fatal(err)
	}
	tok, _, err = ledger.ClaimChatMail(ctx, m, 1, time.Minute, ttl)
	if err != nil {
		t.Fatalf("claim after a release: %v", err)
	}
	if err := ledger.ChatMailSent(ctx, m, tok, "0100-signin"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ledger.ClaimChatMail(ctx, m, 2, time.Minute, ttl); !errors.Is(err, store.ErrAlreadySent) {
		t.Fatalf("claim after sent: %v", err)
	}
}
