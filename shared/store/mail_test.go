package store_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"42sisters.ai/oracle/shared/oracle"
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
			if tok, err := orders.ClaimMail(ctx, id, "verdict", 0, time.Minute); err == nil {
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
	if _, err := orders.ClaimMail(ctx, id, "silent_drop", 0, time.Minute); err != nil {
		t.Fatalf("other kind: %v", err)
	}
	if err := orders.MailSent(ctx, id, "verdict", tok, "msg-1", oracle.MailSent); err != nil {
		t.Fatal(err)
	}
	clk.Add(time.Hour)
	if _, err := orders.ClaimMail(ctx, id, "verdict", 0, time.Minute); !errors.Is(err, store.ErrAlreadySent) {
		t.Fatalf("after the send: %v", err)
	}
}

func TestFailedSendIsRetried(t *testing.T) {
	ctx := context.Background()
	orders, _, clk := newOrders(t)
	id := "cs_test_mailretry"
	paidOrder(t, orders, id)
	tok, err := orders.ClaimMail(ctx, id, "verdict", 0, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := orders.ReleaseMail(ctx, id, "verdict", tok); err != nil {
		t.Fatal(err)
	}
	dead, err := orders.ClaimMail(ctx, id, "verdict", 0, time.Minute)
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	// That claimer dies; after its lease another sends.
	clk.Add(2 * time.Minute)
	tok, err = orders.ClaimMail(ctx, id, "verdict", 0, time.Minute)
	if err != nil {
		t.Fatalf("after the lease: %v", err)
	}
	if err := orders.MailSent(ctx, id, "verdict", dead, "late", oracle.MailSent); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("a stale claimer recorded a send: %v", err)
	}
	if err := orders.MailSent(ctx, id, "verdict", tok, "msg", oracle.MailSent); err != nil {
		t.Fatal(err)
	}
}

// The retry schedule's attempts: a failed attempt is never claimed again
// (a duplicate of its job is told so), the next one is, and the last one
// closes the delivery as undeliverable with every attempt recorded.
func TestAttemptsAreMadeOnceEachAndTheLastClosesTheDelivery(t *testing.T) {
	ctx := context.Background()
	orders, _, clk := newOrders(t)
	id := "cs_test_mailattempts"
	paidOrder(t, orders, id)
	const last = 3
	for attempt := 0; attempt <= last; attempt++ {
		tok, err := orders.ClaimMail(ctx, id, "verdict", attempt, time.Minute)
		if err != nil {
			t.Fatalf("attempt %d: %v", attempt, err)
		}
		next := clk.Now().Add(5 * time.Minute)
		if attempt == last {
			next = time.Time{}
		}
		tries, err := orders.MailFailed(ctx, id, "verdict", tok, store.Try{Attempt: attempt, At: clk.Now(), Class: "transient", Code: "ServiceUnavailable"}, next)
		if err != nil {
			t.Fatalf("attempt %d failed: %v", attempt, err)
		}
		if len(tries) != attempt+1 || tries[attempt].Attempt != attempt || !tries[attempt].At.Equal(clk.Now()) {
			t.Fatalf("after attempt %d the tries are %+v", attempt, tries)
		}
		// A duplicate of this attempt's job, even once its lease is long
		// gone, does not make it again.
		clk.Add(2 * time.Minute)
		_, err = orders.ClaimMail(ctx, id, "verdict", attempt, time.Minute)
		want := store.ErrAttemptSpent
		if attempt == last {
			want = store.ErrAlreadySent
		}
		if !errors.Is(err, want) {
			t.Fatalf("duplicate of attempt %d: %v, want %v", attempt, err, want)
		}
	}
	o, _, err := orders.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if o.Mail["verdict"] != oracle.MailUndeliverable || !o.Mail["verdict"].Undelivered() {
		t.Fatalf("mail state %q after the last attempt, want undeliverable", o.Mail["verdict"])
	}
}

// A blocked account releases its claim without spending the attempt: the
// same attempt is made again.
func TestReleasedAttemptIsMadeAgain(t *testing.T) {
	ctx := context.Background()
	orders, _, _ := newOrders(t)
	id := "cs_test_mailrelease"
	paidOrder(t, orders, id)
	tok, err := orders.ClaimMail(ctx, id, "verdict", 1, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := orders.ReleaseMail(ctx, id, "verdict", tok); err != nil {
		t.Fatal(err)
	}
	if _, err := orders.ClaimMail(ctx, id, "verdict", 1, time.Minute); err != nil {
		t.Fatalf("the released attempt: %v", err)
	}
}

func TestFeedbackMovesTheMailStateOnlyForward(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name   string
		events []oracle.MailState
		id     string // the message id the events name; "" is the sent one
		want   oracle.MailState
		moved  []bool
	}{
		{"delivered", []oracle.MailState{oracle.MailDelivered}, "", oracle.MailDelivered, []bool{true}},
		{"delivered twice", []oracle.MailState{oracle.MailDelivered, oracle.MailDelivered}, "", oracle.MailDelivered, []bool{true, false}},
		{"bounced", []oracle.MailState{oracle.MailBounced}, "", oracle.MailBounced, []bool{true}},
		{"delivered then complained", []oracle.MailState{oracle.MailDelivered, oracle.MailComplained}, "", oracle.MailComplained, []bool{true, true}},
		{"a late delivery after a complaint", []oracle.MailState{oracle.MailComplained, oracle.MailDelivered}, "", oracle.MailComplained, []bool{true, false}},
		{"an event for another message", []oracle.MailState{oracle.MailBounced}, "msg-other", oracle.MailSent, []bool{false}},
	}
	orders, _, _ := newOrders(t)
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			id := "cs_test_feedback" + strings.Repeat("x", i+1)
			paidOrder(t, orders, id)
			tok, err := orders.ClaimMail(ctx, id, "verdict", 0, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if err := orders.MailSent(ctx, id, "verdict", tok, "msg-sent", oracle.MailSent); err != nil {
				t.Fatal(err)
			}
			msg := tc.id
			if msg == "" {
				msg = "msg-sent"
			}
			for j, ev := range tc.events {
				moved, err := orders.MailFeedback(ctx, id, "verdict", msg, ev)
				if err != nil || moved != tc.moved[j] {
					t.Fatalf("event %d (%s): moved %v %v, want %v", j, ev, moved, err, tc.moved[j])
				}
			}
			o, _, err := orders.Get(ctx, id)
			if err != nil || o.Mail["verdict"] != tc.want {
				t.Fatalf("state %q %v, want %q", o.Mail["verdict"], err, tc.want)
			}
		})
	}
}

// The transport's event can come before the mailer's record of the send
// it is about (SES answers, its event travels through SNS and SQS, and
// the mailer has not yet written the message id): while a live claim holds
// the delivery, the feedback is not lost as "another message" but reported
// for later; once recorded, it applies. A claim that lapsed (a crash) or a
// delivery never claimed is not waited for.
func TestFeedbackBeforeTheSendIsRecorded(t *testing.T) {
	ctx := context.Background()
	orders, _, clk := newOrders(t)
	const id, lapsed, never = "cs_test_feedbackearly", "cs_test_feedbacklapsed", "cs_test_feedbacknever"
	for _, o := range []string{id, lapsed, never} {
		paidOrder(t, orders, o)
	}
	tok, err := orders.ClaimMail(ctx, id, "verdict", 0, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := orders.ClaimMail(ctx, lapsed, "verdict", 0, time.Second); err != nil {
		t.Fatal(err)
	}
	moved, err := orders.MailFeedback(ctx, id, "verdict", "msg-early", oracle.MailBounced)
	if moved || !errors.Is(err, store.ErrMailNotRecorded) {
		t.Fatalf("feedback before the record: moved %v %v, want ErrMailNotRecorded", moved, err)
	}
	if err := orders.MailSent(ctx, id, "verdict", tok, "msg-early", oracle.MailSent); err != nil {
		t.Fatal(err)
	}
	if moved, err := orders.MailFeedback(ctx, id, "verdict", "msg-early", oracle.MailBounced); !moved || err != nil {
		t.Fatalf("feedback after the record: moved %v %v, want it applied", moved, err)
	}
	clk.Add(2 * time.Second)
	for _, o := range []string{lapsed, never} {
		if moved, err := orders.MailFeedback(ctx, o, "verdict", "msg-lost", oracle.MailBounced); moved || err != nil {
			t.Fatalf("%s: moved %v %v, want nothing to wait for", o, moved, err)
		}
	}
}

func TestMailDeadLetterIsRecordedOnce(t *testing.T) {
	ctx := context.Background()
	_, ledger, clk := newOrders(t)
	d := store.MailDeadLetter{SessionID: "cs_test_dead", Kind: "verdict", Transport: "SES", Class: "transient", DeadAt: clk.Now(),
		Tries: []store.Try{{Attempt: 0, At: clk.Now(), Class: "transient", Code: "Throttling"}, {Attempt: 1, At: clk.Now().Add(5 * time.Minute), Class: "transient"}}}
	for i, want := range []bool{true, false} {
		first, err := ledger.RecordMailDeadLetter(ctx, d, 90*24*time.Hour)
		if err != nil || first != want {
			t.Fatalf("write %d: first %v %v, want %v", i, first, err, want)
		}
	}
	got, ok, err := ledger.MailDeadLetter(ctx, "cs_test_dead", "verdict")
	if err != nil || !ok || len(got.Tries) != 2 || got.Tries[1].Attempt != 1 || got.Class != "transient" || got.Transport != "SES" {
		t.Fatalf("read back %+v %v %v", got, ok, err)
	}
}

func TestSuppressionList(t *testing.T) {
	ctx := context.Background()
	_, ledger, _ := newOrders(t)
	const h = "hmac-sha256:0123456789abcdef0123456789abcdef"
	if ok, err := ledger.Suppressed(ctx, h); ok || err != nil {
		t.Fatalf("suppressed before any complaint: %v %v", ok, err)
	}
	for i, want := range []bool{true, false} {
		if first, err := ledger.Suppress(ctx, h, "complaint"); err != nil || first != want {
			t.Fatalf("suppress %d: %v %v", i, first, err)
		}
	}
	if ok, err := ledger.Suppressed(ctx, h); !ok || err != nil {
		t.Fatalf("not suppressed after a complaint: %v %v", ok, err)
	}
}
