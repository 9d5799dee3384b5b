package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/chat"
	"42sisters.ai/oracle/shared/chatreply"
	"42sisters.ai/oracle/shared/circuit"
	"42sisters.ai/oracle/shared/coldstart"
	"42sisters.ai/oracle/shared/gemini"
	"42sisters.ai/oracle/shared/sosfilter"
	"42sisters.ai/oracle/shared/stripex"
	"42sisters.ai/oracle/shared/subscription"
)

// wired is what other pieces of Sisters Chat provide this function, as
// the interfaces of deps.go.
type wired struct {
	Replier       Replier
	Subscriptions Subscriptions
	Billing       Billing
	Canceller     Canceller
}

// wire makes the production Replier (shared/chatreply on the Gemini
// client and the generator's circuit), Subscriptions (shared/subscription
// on the chat table), Billing (shared/stripex's subscription Checkout and
// portal sessions) and Canceller (the two together) from the settings read
// at cold start.
func wire(ctx context.Context, fn *coldstart.Function, cfg settings, alerts *alert.Alerter) (wired, error) {
	var w wired
	r, err := replier(ctx, fn, cfg, alerts)
	if err != nil {
		return wired{}, err
	}
	w.Replier = r
	subs := subscription.NewStore(awsenv.NewTables(fn.AWS), chat.NewClient(fn.AWS), cfg.ChatTable)
	stripe := stripex.NewBilling(cfg.StripeKey, stripex.Options{BaseURL: cfg.StripeAPIBase, Retries: 1})
	w.Subscriptions = subscriptions{store: subs, now: time.Now}
	w.Billing = billing{stripe: stripe, site: cfg.BaseURL, now: time.Now}
	w.Canceller = canceller{store: subs, stripe: stripe}
	return w, nil
}

// canceller cancels every subscription of an account that Stripe has not
// ended, as the chat table knows them, in Stripe.
type canceller struct {
	store  *subscription.Store
	stripe *stripex.Billing
}

func (c canceller) CancelNow(ctx context.Context, account string) ([]string, error) {
	states, err := c.store.Subscriptions(ctx, account)
	if err != nil {
		return nil, fmt.Errorf("read the subscriptions: %w", err)
	}
	var cancelled []string
	for _, st := range states {
		if subscription.Ended(st.Status) {
			continue
		}
		// stripex.ChatCancelKey is the idempotency key: a retry, or the
		// operator's chat-refund, cancels once.
		if _, _, err := c.stripe.CancelNow(ctx, st.ID); err != nil {
			return cancelled, fmt.Errorf("cancel subscription %s: %w", st.ID, err)
		}
		cancelled = append(cancelled, st.ID)
	}
	return cancelled, nil
}

// subscriptions reads an account's subscriptions as Stripe's events left
// them (shared/subscription).
type subscriptions struct {
	store *subscription.Store
	now   func() time.Time
}

// Subscription is the account's subscription that grants the chat now, or
// when none does the most recent (subscription.Current): access lasts
// while any of them grants it, and the portal opens on its customer.
func (s subscriptions) Subscription(ctx context.Context, account string) (Subscription, error) {
	all, err := s.store.Subscriptions(ctx, account)
	if err != nil {
		return Subscription{}, err
	}
	now := s.now()
	st, found := subscription.Current(all, now)
	if !found {
		return Subscription{}, nil
	}
	return Subscription{Grants: st.Grants(now), Status: st.Status, PeriodEnd: st.PeriodEnd,
		CancelAtPeriodEnd: st.CancelAtPeriodEnd, Customer: st.Customer}, nil
}

// billing makes the chat's Stripe sessions (shared/stripex).
type billing struct {
	stripe *stripex.Billing
	site   string
	now    func() time.Time
}

func (b billing) CheckoutURL(ctx context.Context, account, email string) (string, error) {
	s, err := b.stripe.CreateChatCheckout(ctx, stripex.ChatCheckout{Account: account, Email: email, SiteURL: b.site}, b.now())
	return s.URL, err
}

func (b billing) PortalURL(ctx context.Context, customer string) (string, error) {
	return b.stripe.CreatePortal(ctx, customer, b.site)
}

// replier is chatreply's Replier on the model's primary client: the
// chat's passes ask for a Flash model's settings (no thinking), which a
// Pro fallback would refuse, so the chat has no fallback.
func replier(ctx context.Context, fn *coldstart.Function, cfg settings, alerts *alert.Alerter) (Replier, error) {
	client, err := gemini.New(ctx, gemini.Options{Key: cfg.GeminiKey, Model: cfg.GeminiModel, BaseURL: cfg.GeminiBase, Timeout: cfg.CallTimeout})
	if err != nil {
		return nil, fmt.Errorf("the model client: %w", err)
	}
	policy := chatreply.CallerPolicy(cfg.CallTimeout)
	policy.BackoffBase = cfg.BackoffBase
	filter, err := sosfilter.Shared()
	if err != nil {
		return nil, fmt.Errorf("the content filter's block list: %w", err)
	}
	breaker := circuit.New(awsenv.NewTables(fn.AWS), cfg.LedgerTable, "gemini", cfg.Circuit.Measured(fn.Metrics), time.Now)
	return modelReplier{r: &chatreply.Replier{
		Model:   &gemini.Caller{Primary: client, Policy: policy, Rand: rand.Float64, Now: time.Now, Log: fn.Log, Metrics: fn.Metrics},
		Circuit: readCircuit{breaker},
		Filter:  filter,
		Alerts:  alerts,
		Log:     fn.Log,
		Now:     time.Now,
	}, circuit: breaker}, nil
}

// modelReplier adapts chatreply's Replier to the handler's.
type modelReplier struct {
	r       *chatreply.Replier
	circuit *circuit.Breaker
}

// readingKey carries, on the context of a reply, the model's circuit as
// Prepare read it.
type readingKey struct{}

// reading is a read of the circuit under way: wait returns it.
type reading struct {
	done chan struct{}
	r    circuit.Reading
	err  error
}

func (r *reading) wait() (circuit.Reading, error) {
	<-r.done
	return r.r, r.err
}

// Prepare reads the model's circuit ahead of the reply (replyPreparer).
func (m modelReplier) Prepare(ctx context.Context) (context.Context, func()) {
	if m.circuit == nil {
		return ctx, func() {}
	}
	r := &reading{done: make(chan struct{})}
	go func() {
		defer close(r.done)
		r.r, r.err = m.circuit.Read(ctx)
	}()
	return context.WithValue(ctx, readingKey{}, r), func() { _, _ = r.wait() }
}

// readCircuit is the breaker as chatreply asks it: its Allow decides from
// the read Prepare made, when the reply's context carries one, and reads
// the circuit itself otherwise.
type readCircuit struct{ *circuit.Breaker }

func (c readCircuit) Allow(ctx context.Context) (circuit.Permit, error) {
	r, ok := ctx.Value(readingKey{}).(*reading)
	if !ok {
		return c.Breaker.Allow(ctx)
	}
	read, err := r.wait()
	if err != nil {
		return circuit.Permit{}, err
	}
	return c.Admit(ctx, read)
}

func (m modelReplier) Reply(ctx context.Context, req ReplyRequest) (ReplyResult, error) {
	history := make([]chatreply.Turn, len(req.History))
	for i, t := range req.History {
		history[i] = chatreply.Turn{Role: t.Role, Text: t.Text}
	}
	res, err := m.r.Reply(ctx, chatreply.Request{History: history, Message: req.Message})
	if errors.Is(err, chatreply.ErrUnavailable) {
		return ReplyResult{}, fmt.Errorf("%w: %w", ErrModelUnavailable, err)
	}
	if err != nil {
		return ReplyResult{}, err
	}
	return ReplyResult{Text: res.Reply, Filter: Filter(res.Filter)}, nil
}
