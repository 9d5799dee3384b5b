package store_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"42sisters.ai/oracle/shared/store"
)

func TestAtMostOneSendPerSessionAndKind(t *testing.T) {
	ctx := context.Background()
	orders, _, clk := newOrders(t)
	id := "cs_test_mail"
	paidOrder(t, orders, id)

	var wg sync.WaitGroup
	tokens := make(chan string, 10)
	for i := 0; i < 10; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if tok, err := orders.ClaimMail(ctx, id, "verdict", time.Minute); err == nil {
				tokens <- tok
			} else if !errors.Is(err, store.ErrMailInFlight) {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	close(tokens)
	if len(tokens) != 1 {
		t.Fatalf("%d claims won, want 1", len(tokens))
	}
	tok := <-tokens
	// Another kind is independent.
	if _, err := orders.ClaimMail(ctx, id, "silent_drop", time.Minute); err != nil {
		t.Fatalf("other kind: %v", err)
	}
	if err := orders.MailSent(ctx, id, "verdict", tok, "msg-1"); err != nil {
		t.Fatal(err)
	}
	clk.Add(time.Hour)
	if _, err := orders.ClaimMail(ctx, id, "verdict", time.Minute); !errors.Is(err, store.ErrAlreadySent) {
		t.Fatalf("after the send: %v", err)
	}
}

func TestFailedSendIsRetried(t *testing.T) {
	ctx := context.Background()
	orders, _, clk := newOrders(t)
	id := "cs_test_mailretry"
	paidOrder(t, orders, id)
	tok, err := orders.ClaimMail(ctx, id, "verdict", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := orders.ReleaseMail(ctx, id, "verdict", tok); err != nil {
		t.Fatal(err)
	}
	dead, err := orders.ClaimMail(ctx, id, "verdict", time.Minute)
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	// That claimer dies; after its lease another sends.
	clk.Add(2 * time.Minute)
	tok, err = orders.ClaimMail(ctx, id, "verdict", time.Minute)
	if err != nil {
		t.Fatalf("after the lease: %v", err)
	}
	if err := orders.MailSent(ctx, id, "verdict", dead, "late"); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("a stale claimer recorded a send: %v", err)
	}
	if err := orders.MailSent(ctx, id, "verdict", tok, "msg"); err != nil {
		t.Fatal(err)
	}
}
