package main

import (
	"context"
	"time"

	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/store"
)

// delivery is the record of one email's delivery, whoever owns it: the
// mailer claims an attempt of it, then marks it sent, records the attempt
// failed, or releases the claim, the same way for every kind of email. Each
// owner of such records (an order, a received message) has its
// implementation, so the steps of a send never ask whose email it is.
type delivery interface {
	// claim takes the right to make attempt (0 for the first) for lease:
	// a token, or store.ErrAlreadySent, store.ErrAttemptSpent or
	// store.ErrMailInFlight.
	claim(ctx context.Context, attempt int, lease time.Duration) (string, error)
	// sent closes the delivery with result (the message id, or why nothing
	// left) and how far the email got (oracle.MailState, "" when it never
	// left).
	sent(ctx context.Context, token, result string, state oracle.MailState) error
	// failed records a failed attempt; a zero nextAt closes the delivery as
	// undeliverable. It returns every failed attempt so far.
	failed(ctx context.Context, token string, try store.Try, nextAt time.Time) ([]store.Try, error)
	// release gives the claim up without spending its attempt.
	release(ctx context.Context, token string) error
	// what names the email for the operator.
	what() string
}

// orderDeliveries are an order's deliveries, one per mail kind
// (store.Orders).
type orderDeliveries interface {
	ClaimOrderMail(ctx context.Context, sessionID string, kind oracle.MailKind, attempt int, lease time.Duration) (store.MailClaim, error)
	MailSent(ctx context.Context, sessionID string, kind oracle.MailKind, token, result string, state oracle.MailState) error
	MailFailed(ctx context.Context, sessionID string, kind oracle.MailKind, token string, try store.Try, nextAt time.Time) ([]store.Try, error)
	ReleaseMail(ctx context.Context, sessionID string, kind oracle.MailKind, token string) error
}

// orderMail is the delivery of an order's email of one kind, kept on the
// order's item. Its claim is granted only while the order is owed the
// email, and reads the order as it goes: read keeps what it read.
type orderMail struct {
	orders    orderDeliveries
	sessionID string
	kind      oracle.MailKind
	read      store.MailClaim
}

func (d *orderMail) claim(ctx context.Context, attempt int, lease time.Duration) (string, error) {
	c, err := d.orders.ClaimOrderMail(ctx, d.sessionID, d.kind, attempt, lease)
	d.read = c
	return c.Token, err
}

func (d *orderMail) sent(ctx context.Context, token, result string, state oracle.MailState) error {
	return d.orders.MailSent(ctx, d.sessionID, d.kind, token, result, state)
}

func (d *orderMail) failed(ctx context.Context, token string, try store.Try, nextAt time.Time) ([]store.Try, error) {
	return d.orders.MailFailed(ctx, d.sessionID, d.kind, token, try, nextAt)
}

func (d *orderMail) release(ctx context.Context, token string) error {
	return d.orders.ReleaseMail(ctx, d.sessionID, d.kind, token)
}

func (d *orderMail) what() string {
	return "the " + string(d.kind) + " email of " + oracle.ShortID(d.sessionID)
}

// replyDeliveries are the autoresponses' deliveries, one per received
// message (store.Ledger).
type replyDeliveries interface {
	ClaimReply(ctx context.Context, key string, attempt int, lease, ttl time.Duration) (string, error)
	ReplySent(ctx context.Context, key, token, result string) error
	ReplyFailed(ctx context.Context, key, token string, try store.Try, nextAt time.Time) ([]store.Try, error)
	ReleaseReply(ctx context.Context, key, token string) error
}

// inboxReply is the delivery of the autoresponse to the received message
// whose key is key, on a Ledger record its first claim creates, kept for
// ttl.
type inboxReply struct {
	ledger replyDeliveries
	key    string
	ttl    time.Duration
}

func (d inboxReply) claim(ctx context.Context, attempt int, lease time.Duration) (string, error) {
	return d.ledger.ClaimReply(ctx, d.key, attempt, lease, d.ttl)
}

// sent keeps no state: the feedback function moves no autoresponse's state
// (a complaint about one suppresses the address instead).
func (d inboxReply) sent(ctx context.Context, token, result string, _ oracle.MailState) error {
	return d.ledger.ReplySent(ctx, d.key, token, result)
}

func (d inboxReply) failed(ctx context.Context, token string, try store.Try, nextAt time.Time) ([]store.Try, error) {
	return d.ledger.ReplyFailed(ctx, d.key, token, try, nextAt)
}

func (d inboxReply) release(ctx context.Context, token string) error {
	return d.ledger.ReleaseReply(ctx, d.key, token)
}

func (d inboxReply) what() string {
	return "the autoresponse to inbox message " + oracle.Clip(d.key, 12)
}

// chatDeliveries are the chat's emails' deliveries, one per kind, account
// and nonce (store.Ledger).
type chatDeliveries interface {
	ClaimChatMail(ctx context.Context, m store.ChatMail, attempt int, lease, ttl time.Duration) (string, time.Time, error)
	ChatMailSent(ctx context.Context, m store.ChatMail, token, result string) error
	ChatMailFailed(ctx context.Context, m store.ChatMail, token string, try store.Try, nextAt time.Time) ([]store.Try, error)
	ReleaseChatMail(ctx context.Context, m store.ChatMail, token string) error
}

// chatMail is the delivery of an email owed to a chat account, on a
// Ledger record its first claim creates, kept for ttl; the claim notes
// when that was, which dates the delivery's audit records.
type chatMail struct {
	ledger  chatDeliveries
	mail    store.ChatMail
	ttl     time.Duration
	created time.Time
}

func (d *chatMail) claim(ctx context.Context, attempt int, lease time.Duration) (string, error) {
	token, created, err := d.ledger.ClaimChatMail(ctx, d.mail, attempt, lease, d.ttl)
	if err == nil {
		d.created = created
	}
	return token, err
}

// sent keeps no state: the feedback function follows orders' emails only
// (a complaint about a chat email suppresses the address all the same).
func (d *chatMail) sent(ctx context.Context, token, result string, _ oracle.MailState) error {
	return d.ledger.ChatMailSent(ctx, d.mail, token, result)
}

func (d *chatMail) failed(ctx context.Context, token string, try store.Try, nextAt time.Time) ([]store.Try, error) {
	return d.ledger.ChatMailFailed(ctx, d.mail, token, try, nextAt)
}

func (d *chatMail) release(ctx context.Context, token string) error {
	return d.ledger.ReleaseChatMail(ctx, d.mail, token)
}

func (d *chatMail) what() string {
	return "the " + string(d.mail.Kind) + " email " + d.mail.Nonce
}
