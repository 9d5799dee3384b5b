package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"42sisters.ai/oracle/shared/mail"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/queue"
	"42sisters.ai/oracle/shared/store"
)

// deliveryOwners are the owners of delivery records: each makes a fresh
// record of its own, in the real stores, for the order id (stored READY).
var deliveryOwners = []struct {
	name string
	new  func(e *env, id string) delivery
}{
	{"an order's email", func(e *env, id string) delivery {
		return &orderMail{orders: e.orders, sessionID: id, kind: oracle.MailVerdict}
	}},
	{"an inbox autoresponse", func(e *env, _ string) delivery {
		b := make([]byte, 8)
		_, _ = rand.Read(b)
		return inboxReply{ledger: e.ledger, key: "test-" + hex.EncodeToString(b), ttl: time.Hour}
	}},
	{"a chat account's email", func(e *env, _ string) delivery {
		b := make([]byte, 8)
		_, _ = rand.Read(b)
		return &chatMail{ledger: e.ledger, ttl: time.Hour,
			mail: store.ChatMail{Kind: oracle.MailChatSignIn, Account: "hmac-sha256:0123456789abcdef0123456789abcdef", Nonce: "req_" + hex.EncodeToString(b)}}
	}},
}

// deliveryStep is one operation on a record: a claim of attempt (and the
// error it must meet), sent, failed (with a next attempt, or for good) or
// release, each by the holder of the last claim granted.
type deliveryStep struct {
	op      string
	attempt int
	want    error
}

var deliveryPaths = []struct {
	name  string
	steps []deliveryStep
}{
	{"claim → sent", []deliveryStep{
		{op: "claim"}, {op: "sent"},
		{op: "claim", want: store.ErrAlreadySent}, {op: "claim", attempt: 1, want: store.ErrAlreadySent},
	}},
	{"claim → failed → released", []deliveryStep{
		{op: "claim"}, {op: "failed"},
		{op: "claim", want: store.ErrAttemptSpent},
		{op: "claim", attempt: 1}, {op: "claim", attempt: 1, want: store.ErrMailInFlight},
		{op: "release"},
		// The release spent nothing: the same attempt is claimed again.
		{op: "claim", attempt: 1}, {op: "sent"},
		{op: "claim", attempt: 2, want: store.ErrAlreadySent},
	}},
	{"claim → failed for good", []deliveryStep{
		{op: "claim"}, {op: "failed for good", attempt: 0},
		{op: "claim", attempt: 1, want: store.ErrAlreadySent},
	}},
}

// walk runs steps on r, through the delivery interface alone.
func walk(ctx context.Context, t *testing.T, r delivery, steps []deliveryStep) {
	t.Helper()
	var token string
	tries := 0
	for i, s := range steps {
		var err error
		switch s.op {
		case "claim":
			var tok string
			if tok, err = r.claim(ctx, s.attempt, time.Minute); err == nil {
				token = tok
			}
		case "sent":
			err = r.sent(ctx, token, "ses-message", oracle.MailSent)
		case "failed", "failed for good":
			next := time.Now().Add(5 * time.Minute)
			if s.op == "failed for good" {
				next = time.Time{}
			}
			var got []store.Try
			tries++
			got, err = r.failed(ctx, token, store.Try{Attempt: s.attempt, At: time.Now().UTC(), Class: "transient"}, next)
			if err == nil && len(got) != tries {
				t.Fatalf("step %d (%s): %d failed attempts recorded, want %d", i, s.op, len(got), tries)
			}
		case "release":
			err = r.release(ctx, token)
		}
		if !errors.Is(err, s.want) {
			t.Fatalf("step %d (%s of attempt %d): %v, want %v", i, s.op, s.attempt, err, s.want)
		}
	}
}

// Every owner's delivery record is claimed, marked sent, failed and
// released the same way, and deliver needs nothing of an owner but its
// record: given either owner's record, claimed (and an order store whose
// own deliveries are out of reach), it sends the order's email once and
// closes that record.
func TestEveryOwnersDeliveryIsOneRecord(t *testing.T) {
	ctx := context.Background()
	for _, owner := range deliveryOwners {
		t.Run(owner.name, func(t *testing.T) {
			e := newEnv(t)
			order := func(addr string) string {
				id := e.paidSession(oracle.TierQuick, addr)
				e.ready(id, oracle.TierQuick, oracle.VerdictGreen)
				return id
			}
			for _, p := range deliveryPaths {
				r := owner.new(e, order(uniqueAddress(t)))
				t.Run(p.name, func(t *testing.T) { walk(ctx, t, r, p.steps) })
			}
			addr := uniqueAddress(t)
			id := order(addr)
			o, _, err := e.orders.Get(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			r := owner.new(e, id)
			token, err := r.claim(ctx, 0, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			e.h.Orders = ordersWithoutDeliveries{Orders: e.orders, t: t}
			lookup := e.h.lookUp(ctx, id)
			defer lookup.stop()
			tk := &task{job: queue.Job{SessionID: id, Kind: oracle.MailVerdict}, started: time.Now(), log: e.h.Log, order: o, delivery: r, token: token}
			if err := e.h.deliver(ctx, tk, e.h.orderEmail(tk, lookup)); err != nil {
				t.Fatal(err)
			}
			if n := len(e.inbox(addr)); n != 1 {
				t.Fatalf("%d emails, want 1", n)
			}
			if _, err := r.claim(ctx, 0, time.Minute); !errors.Is(err, store.ErrAlreadySent) {
				t.Fatalf("claim after deliver: %v, want %v: deliver did not close its record", err, store.ErrAlreadySent)
			}
		})
	}
}

// ordersWithoutDeliveries is an order store whose deliveries are out of
// reach: whatever deliver does to a delivery, it does through the task's.
type ordersWithoutDeliveries struct {
	Orders
	t *testing.T
}

var errNoDeliveries = errors.New("deliver went past the task's delivery to the order store")

func (o ordersWithoutDeliveries) ClaimOrderMail(context.Context, string, oracle.MailKind, int, time.Duration) (store.MailClaim, error) {
	o.t.Error(errNoDeliveries)
	return store.MailClaim{}, errNoDeliveries
}

func (o ordersWithoutDeliveries) MailSent(context.Context, string, oracle.MailKind, string, string, oracle.MailState) error {
	o.t.Error(errNoDeliveries)
	return errNoDeliveries
}

func (o ordersWithoutDeliveries) MailFailed(context.Context, string, oracle.MailKind, string, store.Try, time.Time) ([]store.Try, error) {
	o.t.Error(errNoDeliveries)
	return nil, errNoDeliveries
}

func (o ordersWithoutDeliveries) ReleaseMail(context.Context, string, oracle.MailKind, string) error {
	o.t.Error(errNoDeliveries)
	return errNoDeliveries
}

// notedDelivery is a delivery in memory that notes what is asked of it.
type notedDelivery struct {
	ops []string
}

const notedToken = "noted-token"

func (d *notedDelivery) note(op, token string) {
	if token != notedToken {
		op += " by another token"
	}
	d.ops = append(d.ops, op)
}

func (d *notedDelivery) claim(_ context.Context, attempt int, _ time.Duration) (string, error) {
	d.ops = append(d.ops, "claim "+strconv.Itoa(attempt))
	return notedToken, nil
}

func (d *notedDelivery) sent(_ context.Context, token, result string, state oracle.MailState) error {
	d.note("sent "+result+" "+string(state), token)
	return nil
}

func (d *notedDelivery) failed(_ context.Context, token string, try store.Try, nextAt time.Time) ([]store.Try, error) {
	op := "failed " + strconv.Itoa(try.Attempt) + ", next"
	if nextAt.IsZero() {
		op = "failed " + strconv.Itoa(try.Attempt) + ", for good"
	}
	d.note(op, token)
	return []store.Try{try}, nil
}

func (d *notedDelivery) release(_ context.Context, token string) error {
	d.note("release", token)
	return nil
}

func (d *notedDelivery) what() string { return "the noted email" }

// What deliver asks of the task's delivery, once claimed, for each outcome
// of a send, over memory: the record's operations are all it uses.
func TestDeliverUsesOnlyItsDelivery(t *testing.T) {
	tests := []struct {
		name       string
		send       error
		suppressed bool
		want       []string
	}{
		{name: "sent", want: []string{"claim 0", "sent ses-message-1 sent"}},
		{name: "transient", send: &mail.Error{Class: mail.Transient, Status: 503}, want: []string{"claim 0", "failed 0, next"}},
		{name: "refused", send: &mail.Error{Class: mail.Permanent, Status: 400}, want: []string{"claim 0", "failed 0, for good"}},
		{name: "blocked", send: &mail.Error{Class: mail.Blocked, Status: 400}, want: []string{"claim 0", "release"}},
		{name: "suppressed", suppressed: true, want: []string{"claim 0", "sent none: suppressed suppressed"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newMemEnv(t, failing(tc.send))
			if tc.suppressed {
				e.ledger.suppressed[e.h.Hasher.Email("customer@example.com")] = true
			}
			e.h.Orders = ordersWithoutDeliveries{Orders: e.orders, t: t}
			ctx := context.Background()
			d := &notedDelivery{}
			token, _ := d.claim(ctx, 0, time.Minute)
			tk := &task{job: start, started: e.clock.Now(), log: e.h.Log, order: e.orders.orders[memSession], delivery: d, token: token}
			addr := e.h.lookUp(ctx, memSession)
			defer addr.stop()
			if err := e.h.deliver(ctx, tk, e.h.orderEmail(tk, addr)); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(d.ops, tc.want) {
				t.Fatalf("deliver asked %q of its delivery, want %q", d.ops, tc.want)
			}
		})
	}
}
