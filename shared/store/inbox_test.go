package store_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"42sisters.ai/oracle/shared/store"
)

func TestBeginMessageOnceHoweverOftenDelivered(t *testing.T) {
	ctx := context.Background()
	_, ledger, clock := newOrders(t)
	const key, ttl = "m1", 30 * 24 * time.Hour

	// Ten deliveries at once: one holder.
	var wg sync.WaitGroup
	tokens := make(chan string, 10)
	for range 10 {
		wg.Go(func() {
			tok, err := ledger.BeginMessage(ctx, key, time.Minute, ttl)
			switch {
			case err == nil:
				tokens <- tok
			case !errors.Is(err, store.ErrMessageInFlight):
				t.Errorf("begin: %v", err)
			}
		})
	}
	wg.Wait()
	close(tokens)
	var held []string
	for tok := range tokens {
		held = append(held, tok)
	}
	if len(held) != 1 {
		t.Fatalf("%d holders, want 1", len(held))
	}
	if seen, err := ledger.MessageSeen(ctx, key); err != nil || seen {
		t.Fatalf("seen before done = %v, %v", seen, err)
	}

	// A holder that died: its lease ends and the next delivery takes over;
	// the dead holder can no longer close the message.
	clock.Add(2 * time.Minute)
	tok, err := ledger.BeginMessage(ctx, key, time.Minute, ttl)
	if err != nil {
		t.Fatalf("take over: %v", err)
	}
	if err := ledger.MessageDone(ctx, key, held[0], "acknowledged"); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("stale holder closed the message: %v", err)
	}
	if err := ledger.MessageDone(ctx, key, tok, "acknowledged"); err != nil {
		t.Fatal(err)
	}
	if _, err := ledger.BeginMessage(ctx, key, time.Minute, ttl); !errors.Is(err, store.ErrMessageSeen) {
		t.Fatalf("begin after done: %v, want ErrMessageSeen", err)
	}
	if seen, err := ledger.MessageSeen(ctx, key); err != nil || !seen {
		t.Fatalf("seen after done = %v, %v", seen, err)
	}

	// The record expires: the message is forgotten (the lookback of the
	// poll never lists it again by then).
	clock.Add(ttl)
	if seen, err := ledger.MessageSeen(ctx, key); err != nil || seen {
		t.Fatalf("seen after expiry = %v, %v", seen, err)
	}
}

func TestReleasedMessageIsProcessedAgain(t *testing.T) {
	ctx := context.Background()
	_, ledger, _ := newOrders(t)
	tok, err := ledger.BeginMessage(ctx, "m2", time.Minute, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := ledger.ReleaseMessage(ctx, "m2", tok); err != nil {
		t.Fatal(err)
	}
	if _, err := ledger.BeginMessage(ctx, "m2", time.Minute, time.Hour); err != nil {
		t.Fatalf("begin after release: %v", err)
	}
}

func TestSeedingRecordsMessagesAndAnnouncesOnce(t *testing.T) {
	ctx := context.Background()
	_, ledger, _ := newOrders(t)
	if seeded, err := ledger.Seeded(ctx, "graph"); err != nil || seeded {
		t.Fatalf("seeded before = %v, %v", seeded, err)
	}
	for _, k := range []string{"a", "b", "a"} {
		if err := ledger.SeedMessage(ctx, k, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ledger.BeginMessage(ctx, "a", time.Minute, time.Hour); !errors.Is(err, store.ErrMessageSeen) {
		t.Fatalf("a seeded message was processed: %v", err)
	}
	first, err := ledger.MarkSeeded(ctx, "graph")
	if err != nil || !first {
		t.Fatalf("first mark = %v, %v", first, err)
	}
	if again, err := ledger.MarkSeeded(ctx, "graph"); err != nil || again {
		t.Fatalf("second mark = %v, %v", again, err)
	}
	if seeded, err := ledger.Seeded(ctx, "graph"); err != nil || !seeded {
		t.Fatalf("seeded after = %v, %v", seeded, err)
	}
}

func TestCooldownOneMessagePerSenderPerWindow(t *testing.T) {
	ctx := context.Background()
	_, ledger, clock := newOrders(t)
	const day = 24 * time.Hour
	for _, step := range []struct {
		name    string
		advance time.Duration
		sender  string
		message string
		want    bool
	}{
		{"first message", 0, "s1", "m1", true},
		{"the same message again (a retried processing)", 0, "s1", "m1", true},
		{"another message within the day", time.Hour, "s1", "m2", false},
		{"another sender", 0, "s2", "m3", true},
		{"a day later", day, "s1", "m4", true},
	} {
		clock.Add(step.advance)
		got, err := ledger.TakeCooldown(ctx, step.sender, step.message, day)
		if err != nil || got != step.want {
			t.Errorf("%s: holds = %v, %v; want %v", step.name, got, err, step.want)
		}
	}
	// Released by its holder only.
	if err := ledger.ReleaseCooldown(ctx, "s1", "m1"); err != nil {
		t.Fatal(err)
	}
	if got, _ := ledger.TakeCooldown(ctx, "s1", "m5", day); got {
		t.Error("a release by a message that does not hold the cooldown ended it")
	}
	if err := ledger.ReleaseCooldown(ctx, "s1", "m4"); err != nil {
		t.Fatal(err)
	}
	if got, _ := ledger.TakeCooldown(ctx, "s1", "m5", day); !got {
		t.Error("the holder's release did not end the cooldown")
	}
}

func TestSentMessageFindsTheSession(t *testing.T) {
	ctx := context.Background()
	_, ledger, clock := newOrders(t)
	if err := ledger.RecordSentMessage(ctx, "0100-abc", "cs_test_sent1", time.Hour); err != nil {
		t.Fatal(err)
	}
	if s, ok, err := ledger.SentMessage(ctx, "0100-abc"); err != nil || !ok || s != "cs_test_sent1" {
		t.Fatalf("SentMessage = %q %v %v", s, ok, err)
	}
	if _, ok, _ := ledger.SentMessage(ctx, "0100-other"); ok {
		t.Fatal("an unknown message id found a session")
	}
	clock.Add(time.Hour)
	if _, ok, _ := ledger.SentMessage(ctx, "0100-abc"); ok {
		t.Fatal("an expired record found a session")
	}
}

func TestReplyDeliveredOnceOnTheSchedule(t *testing.T) {
	ctx := context.Background()
	_, ledger, clock := newOrders(t)
	const key = "m1"
	tok, err := ledger.ClaimReply(ctx, key, 0, time.Minute, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ledger.ClaimReply(ctx, key, 0, time.Minute, time.Hour); !errors.Is(err, store.ErrMailInFlight) {
		t.Fatalf("second claim: %v", err)
	}
	tries, err := ledger.ReplyFailed(ctx, key, tok, store.Try{Attempt: 0, At: clock.Now(), Class: "transient"}, clock.Now().Add(5*time.Minute))
	if err != nil || len(tries) != 1 {
		t.Fatalf("failed: %v %v", tries, err)
	}
	if _, err := ledger.ClaimReply(ctx, key, 0, time.Minute, time.Hour); !errors.Is(err, store.ErrAttemptSpent) {
		t.Fatalf("claim of the spent attempt: %v", err)
	}
	tok, err = ledger.ClaimReply(ctx, key, 1, time.Minute, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := ledger.ReplySent(ctx, key, tok, "0100-reply"); err != nil {
		t.Fatal(err)
	}
	if _, err := ledger.ClaimReply(ctx, key, 2, time.Minute, time.Hour); !errors.Is(err, store.ErrAlreadySent) {
		t.Fatalf("claim after sent: %v", err)
	}
}
