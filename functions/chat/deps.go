package main

import (
	"context"
	"errors"
	"time"
)

// The four dependencies another piece provides, seen as this function
// needs them; wire.go adapts the real ones.

// Replier answers a message in the Oracle's one voice, checked by the
// content filter (shared/chatreply).
type Replier interface {
	Reply(ctx context.Context, req ReplyRequest) (ReplyResult, error)
}

// replyPreparer is a Replier that reads what its reply needs (the model's
// circuit) ahead of it, beside the exchange's other calls: Prepare starts
// the reads and returns the context Reply then finds them on, and a
// function that waits for them.
type replyPreparer interface {
	Prepare(ctx context.Context) (context.Context, func())
}

// ReplyRequest is a message and the conversation before it, oldest first.
type ReplyRequest struct {
	History []Turn
	Message string
}

// Turn is one message of the conversation: Role is "user" or "aether".
type Turn struct {
	Role string
	Text string
}

// ReplyResult is the reply as it may be shown and stored, and what the
// content filter did to reach it.
type ReplyResult struct {
	Text   string
	Filter Filter
}

// Filter is what the content filter did to a reply.
type Filter string

const (
	FilterPass        Filter = "pass"        // the first reply passed
	FilterRegenerated Filter = "regenerated" // the first was quarantined, the second passed
	// FilterApology: both were quarantined; Text is the fixed apology,
	// which spends no exchange and is not stored.
	FilterApology Filter = "apology"
)

// ErrModelUnavailable is the model's failure (an outage, a timeout, an
// open circuit): the exchange is given back and the person asked to try
// again. Any error from a Replier is treated so; this one names the kind.
var ErrModelUnavailable = errors.New("chat: the model is unavailable")

// Subscriptions reads an account's subscription (shared/subscription).
type Subscriptions interface {
	Subscription(ctx context.Context, account string) (Subscription, error)
}

// Subscription is an account's subscription as Stripe's events left it;
// the zero value is none.
type Subscription struct {
	// Grants is whether it grants access now (subscription.State.Grants).
	Grants bool
	// Status is Stripe's: active, trialing, past_due, canceled, unpaid,
	// incomplete or incomplete_expired; empty for none.
	Status            string
	PeriodEnd         time.Time
	CancelAtPeriodEnd bool
	// Customer is the Stripe customer (cus_…), for the portal.
	Customer string
}

// Billing makes Stripe sessions (shared/stripex): a subscription Checkout
// for an account and its address, and the customer portal.
type Billing interface {
	CheckoutURL(ctx context.Context, account, email string) (string, error)
	PortalURL(ctx context.Context, customer string) (string, error)
}

// Canceller ends an account's subscriptions in Stripe at once, before the
// account is erased (shared/subscription and shared/stripex).
type Canceller interface {
	// CancelNow cancels every subscription of account that Stripe has not
	// ended, and returns their ids: ended by this call or by an earlier
	// attempt whose erasure failed. Any failure means nothing may be
	// erased yet.
	CancelNow(ctx context.Context, account string) ([]string, error)
}
