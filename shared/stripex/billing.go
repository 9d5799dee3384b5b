package stripex

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/stripe/stripe-go/v76"
	portalsession "github.com/stripe/stripe-go/v76/billingportal/session"
	"github.com/stripe/stripe-go/v76/checkout/session"
	"github.com/stripe/stripe-go/v76/invoice"
	"github.com/stripe/stripe-go/v76/price"
	"github.com/stripe/stripe-go/v76/subscription"

	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/secret"
)

// Sisters Chat is billed by a Stripe subscription to one recurring Price,
// found by its lookup key (oracle.ChatPriceLookupKey). Billing is apart
// from Client, as Refunds is, so that only the functions that bill the
// chat link Stripe's price, portal and subscription clients.

// MetaAccount is the metadata key under which a chat subscription (and
// its Checkout Session's client_reference_id) names its account: the
// address's keyed hash, never the address.
const MetaAccount = "account"

// ErrChatPrice means the Price under the lookup key is not the chat's
// fixed price (or there is none): nothing is sold at it.
var ErrChatPrice = errors.New("the Sisters Chat price in Stripe is missing or not C$5.00 a month")

// ErrNoChatPrice is ErrChatPrice when Stripe has no Price under the lookup
// key at all (make chat-price has not been run).
var ErrNoChatPrice = fmt.Errorf("%w: none has the lookup key %s (make chat-price)", ErrChatPrice, oracle.ChatPriceLookupKey)

// Billing makes the chat's Checkout and portal sessions, its Price, and
// lists its subscriptions, with one key.
type Billing struct {
	backend stripe.Backend
	key     *secret.Value

	mu      sync.Mutex
	priceID string // the checked Price, once found
}

// NewBilling returns a billing client using key as last read, read again
// when Stripe refuses it (see NewWithKey).
func NewBilling(key *secret.Value, o Options) *Billing {
	return &Billing{backend: backend(o), key: key}
}

func (b *Billing) prices(key string) *price.Client { return &price.Client{B: b.backend, Key: key} }

// ChatPrice is the chat's Price as Stripe has it.
type ChatPrice struct {
	ID string
	// Created reports that CreateChatPrice made it.
	Created bool
}

// checkChatPrice is nil when p is the chat's fixed price: active,
// recurring every month, ChatPriceCents in Currency, per unit.
func checkChatPrice(p *stripe.Price) error {
	switch {
	case !p.Active:
		return fmt.Errorf("%w: price %s is archived", ErrChatPrice, p.ID)
	case p.Type != stripe.PriceTypeRecurring || p.Recurring == nil:
		return fmt.Errorf("%w: price %s is not recurring", ErrChatPrice, p.ID)
	case string(p.Recurring.Interval) != oracle.ChatInterval || p.Recurring.IntervalCount != 1:
		return fmt.Errorf("%w: price %s bills every %d %s", ErrChatPrice, p.ID, p.Recurring.IntervalCount, p.Recurring.Interval)
	case string(p.Currency) != oracle.Currency || p.UnitAmount != oracle.ChatPriceCents || p.BillingScheme != stripe.PriceBillingSchemePerUnit:
		return fmt.Errorf("%w: price %s is %s", ErrChatPrice, p.ID, oracle.FormatAmount(p.UnitAmount, string(p.Currency)))
	}
	return nil
}

// findChatPrice returns the Price under the lookup key, nil when none.
func (b *Billing) findChatPrice(ctx context.Context) (*stripe.Price, error) {
	p := &stripe.PriceListParams{LookupKeys: []*string{stripe.String(oracle.ChatPriceLookupKey)}}
	p.Context = ctx
	p.Limit = stripe.Int64(1) // a lookup key names one price
	found, err := withKey(ctx, b.key, func(key string) (*stripe.Price, error) {
		it := b.prices(key).List(p)
		if it.Next() {
			return it.Price(), nil
		}
		return nil, it.Err()
	})
	if err != nil {
		return nil, classify(err, "find the chat price")
	}
	return found, nil
}

// ChatPriceID is the id of the chat's Price, checked against the fixed
// price once and remembered: ErrChatPrice when Stripe has none under the
// lookup key or it is another price.
func (b *Billing) ChatPriceID(ctx context.Context) (string, error) {
	b.mu.Lock()
	id := b.priceID
	b.mu.Unlock()
	if id != "" {
		return id, nil
	}
	p, err := b.findChatPrice(ctx)
	if err != nil {
		return "", err
	}
	if p == nil {
		return "", ErrNoChatPrice
	}
	if err := checkChatPrice(p); err != nil {
		return "", err
	}
	b.mu.Lock()
	b.priceID = p.ID
	b.mu.Unlock()
	return p.ID, nil
}

// ChatPriceKey is the idempotency key of the Price's creation: two runs of
// `make chat-price` at once make one Price.
const ChatPriceKey = "oracle-chat-price-" + oracle.ChatPriceLookupKey

// CreateChatPrice makes the chat's Price under its lookup key, unless one
// is there: it is then returned as it is when it is the fixed price, and
// refused (ErrChatPrice) when not, for the operator to archive or move.
func (b *Billing) CreateChatPrice(ctx context.Context) (ChatPrice, error) {
	existing, err := b.findChatPrice(ctx)
	if err != nil {
		return ChatPrice{}, err
	}
	if existing != nil {
		return ChatPrice{ID: existing.ID}, checkChatPrice(existing)
	}
	p := chatPriceParams()
	p.Context = ctx
	p.SetIdempotencyKey(ChatPriceKey)
	made, err := withKey(ctx, b.key, func(key string) (*stripe.Price, error) { return b.prices(key).New(p) })
	if err != nil {
		return ChatPrice{}, classify(err, "create the chat price")
	}
	replayed := made.LastResponse != nil && made.LastResponse.Header.Get("Idempotent-Replayed") == "true"
	return ChatPrice{ID: made.ID, Created: !replayed}, checkChatPrice(made)
}

// chatPriceParams is the chat's Price as it is made: the fixed price, a
// product of the plan's name, the lookup key.
func chatPriceParams() *stripe.PriceParams {
	return &stripe.PriceParams{
		Currency:    stripe.String(oracle.Currency),
		UnitAmount:  stripe.Int64(oracle.ChatPriceCents),
		Recurring:   &stripe.PriceRecurringParams{Interval: stripe.String(oracle.ChatInterval), IntervalCount: stripe.Int64(1)},
		ProductData: &stripe.PriceProductDataParams{Name: stripe.String(oracle.ChatPlanName)},
		LookupKey:   stripe.String(oracle.ChatPriceLookupKey),
	}
}

// ChatCheckout is what a chat subscription's Checkout Session is made for:
// the account (its keyed hash) and its address, and the site the pages
// are on.
type ChatCheckout struct {
	Account string
	Email   string
	SiteURL string
}

// ChatCheckoutWindow is how long one account's subscribe requests share a
// Checkout Session: a double click, or two tabs, get the same page to pay
// on rather than two subscriptions.
const ChatCheckoutWindow = 10 * time.Minute

// ChatCheckoutKey is the idempotency key of the account's Checkout Session
// in the window holding at.
func ChatCheckoutKey(account string, at time.Time) string {
	return "oracle-chat-checkout-" + strings.TrimPrefix(account, "hmac-sha256:") + "-" + strconv.FormatInt(at.Unix()/int64(ChatCheckoutWindow/time.Second), 10)
}

// ChatCheckoutParams builds the subscription's Checkout Session: the
// chat's Price, the account named twice (client_reference_id for the
// session's event, the subscription's metadata for its own events), the
// address for the receipt. The success page grants nothing: only Stripe's
// events do.
func ChatCheckoutParams(r ChatCheckout, priceID string) (*stripe.CheckoutSessionParams, error) {
	if r.Account == "" || r.Email == "" || r.SiteURL == "" || priceID == "" {
		return nil, errors.New("chat checkout: account, address, site and price are all needed")
	}
	site := strings.TrimRight(r.SiteURL, "/")
	p := &stripe.CheckoutSessionParams{
		Mode:              stripe.String(string(stripe.CheckoutSessionModeSubscription)),
		SuccessURL:        stripe.String(site + "/chat?subscribed=1"),
		CancelURL:         stripe.String(site + "/chat"),
		ClientReferenceID: stripe.String(r.Account),
		CustomerEmail:     stripe.String(r.Email),
		LineItems:         []*stripe.CheckoutSessionLineItemParams{{Price: stripe.String(priceID), Quantity: stripe.Int64(1)}},
		SubscriptionData:  &stripe.CheckoutSessionSubscriptionDataParams{},
	}
	p.SubscriptionData.AddMetadata(MetaAccount, r.Account)
	return p, nil
}

// CreateChatCheckout creates the subscription's Checkout Session for r at
// now (the idempotency key's window).
func (b *Billing) CreateChatCheckout(ctx context.Context, r ChatCheckout, now time.Time) (CheckoutSession, error) {
	priceID, err := b.ChatPriceID(ctx)
	if err != nil {
		return CheckoutSession{}, err
	}
	p, err := ChatCheckoutParams(r, priceID)
	if err != nil {
		return CheckoutSession{}, err
	}
	p.Context = ctx
	p.SetIdempotencyKey(ChatCheckoutKey(r.Account, now))
	s, err := withKey(ctx, b.key, func(key string) (*stripe.CheckoutSession, error) {
		return (&session.Client{B: b.backend, Key: key}).New(p)
	})
	if err != nil {
		return CheckoutSession{}, classify(err, "create chat checkout session")
	}
	return CheckoutSession{ID: s.ID, URL: s.URL}, nil
}

// CreatePortal opens Stripe's customer portal for customer, coming back to
// the chat's page; it answers the portal page's URL (short-lived: never
// mailed).
func (b *Billing) CreatePortal(ctx context.Context, customer, siteURL string) (string, error) {
	if customer == "" || siteURL == "" {
		return "", errors.New("chat portal: customer and site are needed")
	}
	p := &stripe.BillingPortalSessionParams{
		Customer:  stripe.String(customer),
		ReturnURL: stripe.String(strings.TrimRight(siteURL, "/") + "/chat"),
	}
	p.Context = ctx
	s, err := withKey(ctx, b.key, func(key string) (*stripe.BillingPortalSession, error) {
		return (&portalsession.Client{B: b.backend, Key: key}).New(p)
	})
	if err != nil {
		return "", classify(err, "create customer portal session")
	}
	return s.URL, nil
}

// Subscription is a chat subscription as Stripe has it, at APIVersion
// (current_period_end on the subscription itself).
type Subscription struct {
	ID       string
	Customer string
	Status   string
	// Account is the metadata's account: empty when the subscription was
	// not made by the chat's Checkout.
	Account           string
	PeriodEnd         time.Time
	CancelAtPeriodEnd bool
	Livemode          bool
	// Prices are the ids of its items' prices.
	Prices []string
}

// subscriptionOf converts Stripe's object.
func subscriptionOf(s *stripe.Subscription) Subscription {
	out := Subscription{
		ID: s.ID, Status: string(s.Status), Account: s.Metadata[MetaAccount], Livemode: s.Livemode,
		PeriodEnd: time.Unix(s.CurrentPeriodEnd, 0).UTC(), CancelAtPeriodEnd: s.CancelAtPeriodEnd,
	}
	if s.Customer != nil {
		out.Customer = s.Customer.ID
	}
	if s.Items != nil {
		for _, it := range s.Items.Data {
			if it != nil && it.Price != nil {
				out.Prices = append(out.Prices, it.Price.ID)
			}
		}
	}
	return out
}

// SubscriptionFromJSON decodes a subscription from an event's data.object.
func SubscriptionFromJSON(raw json.RawMessage) (Subscription, error) {
	var s stripe.Subscription
	if err := json.Unmarshal(raw, &s); err != nil {
		return Subscription{}, fmt.Errorf("decode subscription: %w", err)
	}
	if !strings.HasPrefix(s.ID, "sub_") || s.Status == "" {
		return Subscription{}, errors.New("decode subscription: no id or no status")
	}
	return subscriptionOf(&s), nil
}

// ChatSubscriptions calls each, newest first, with every subscription to
// the chat's Price that Stripe has not ended (any status but canceled),
// then with those it cancelled whose period ends at endedSince or later
// (zero: none of them): the ones whose cancellation may not have reached
// the chat table yet. The listing stops at the first error from each,
// which it returns.
func (b *Billing) ChatSubscriptions(ctx context.Context, endedSince time.Time, each func(Subscription) error) error {
	priceID, err := b.ChatPriceID(ctx)
	if err != nil {
		return err
	}
	live := &stripe.SubscriptionListParams{Price: stripe.String(priceID)}
	lists := []*stripe.SubscriptionListParams{live}
	if !endedSince.IsZero() {
		lists = append(lists, &stripe.SubscriptionListParams{Price: stripe.String(priceID), Status: stripe.String(string(stripe.SubscriptionStatusCanceled)),
			CurrentPeriodEndRange: &stripe.RangeQueryParams{GreaterThanOrEqual: endedSince.Unix()}})
	}
	for _, p := range lists {
		p.Context = ctx
		p.Limit = stripe.Int64(100)
		list := func(key string) *subscription.Iter { return (&subscription.Client{B: b.backend, Key: key}).List(p) }
		if err := listAll(ctx, b.key, list, (*subscription.Iter).Subscription, func(s *stripe.Subscription) error {
			return each(subscriptionOf(s))
		}, "list chat subscriptions"); err != nil {
			return err
		}
	}
	return nil
}

// Invoice is what a chat subscription's invoice event says of it.
type Invoice struct {
	ID           string
	Subscription string
	Customer     string
	// Account is the subscription's metadata's account as the invoice
	// copied it (subscription_details), when it did.
	Account string
	// FirstInvoice: the subscription's first (billing_reason
	// subscription_create), paid at Checkout.
	FirstInvoice bool
	// PeriodEnd is the end of the subscription period it bills (its
	// subscription line's; the invoice's own period_end is the period
	// before, for a renewal).
	PeriodEnd   time.Time
	AmountPaid  int64
	AmountDue   int64
	Currency    string
	Livemode    bool
	AttemptNext time.Time // zero when no further attempt is planned
	// PaymentIntent and Charge are what paid it (empty until paid): a
	// refund, dispute or fraud warning names them.
	PaymentIntent string
	Charge        string
}

// InvoiceFromJSON decodes an invoice from an event's data.object.
func InvoiceFromJSON(raw json.RawMessage) (Invoice, error) {
	var in stripe.Invoice
	if err := json.Unmarshal(raw, &in); err != nil {
		return Invoice{}, fmt.Errorf("decode invoice: %w", err)
	}
	if !strings.HasPrefix(in.ID, "in_") {
		return Invoice{}, errors.New("decode invoice: no id")
	}
	return invoiceOf(&in), nil
}

// invoiceOf converts Stripe's object.
func invoiceOf(in *stripe.Invoice) Invoice {
	out := Invoice{ID: in.ID, FirstInvoice: in.BillingReason == stripe.InvoiceBillingReasonSubscriptionCreate,
		AmountPaid: in.AmountPaid, AmountDue: in.AmountDue, Currency: string(in.Currency), Livemode: in.Livemode}
	if in.Subscription != nil {
		out.Subscription = in.Subscription.ID
	}
	if in.Customer != nil {
		out.Customer = in.Customer.ID
	}
	if in.SubscriptionDetails != nil {
		out.Account = in.SubscriptionDetails.Metadata[MetaAccount]
	}
	if in.NextPaymentAttempt > 0 {
		out.AttemptNext = time.Unix(in.NextPaymentAttempt, 0).UTC()
	}
	if in.PaymentIntent != nil {
		out.PaymentIntent = in.PaymentIntent.ID
	}
	if in.Charge != nil {
		out.Charge = in.Charge.ID
	}
	if in.Lines != nil {
		for _, l := range in.Lines.Data {
			if l != nil && l.Period != nil && l.Type == stripe.InvoiceLineItemTypeSubscription && l.Period.End > out.PeriodEnd.Unix() {
				out.PeriodEnd = time.Unix(l.Period.End, 0).UTC()
			}
		}
	}
	return out
}

// ChatSession is what a subscription-mode Checkout Session's completion
// says: whose subscription it made.
type ChatSession struct {
	ID           string
	Account      string // client_reference_id
	Subscription string
	Customer     string
	Livemode     bool
}

// ChatSessionFromJSON decodes a subscription-mode Checkout Session.
func ChatSessionFromJSON(raw json.RawMessage) (ChatSession, error) {
	var s stripe.CheckoutSession
	if err := json.Unmarshal(raw, &s); err != nil {
		return ChatSession{}, fmt.Errorf("decode checkout session: %w", err)
	}
	if !oracle.ValidSessionID(s.ID) || s.Mode != stripe.CheckoutSessionModeSubscription {
		return ChatSession{}, errors.New("decode checkout session: invalid id or not a subscription")
	}
	out := ChatSession{ID: s.ID, Account: s.ClientReferenceID, Livemode: s.Livemode}
	if s.Subscription != nil {
		out.Subscription = s.Subscription.ID
	}
	if s.Customer != nil {
		out.Customer = s.Customer.ID
	}
	return out, nil
}

// LatestPaidInvoice is the newest paid invoice of subscription id; found is
// false when it has none.
func (b *Billing) LatestPaidInvoice(ctx context.Context, id string) (in Invoice, found bool, err error) {
	p := &stripe.InvoiceListParams{Subscription: stripe.String(id), Status: stripe.String(string(stripe.InvoiceStatusPaid))}
	p.Context = ctx
	p.Limit = stripe.Int64(1) // newest first
	got, err := withKey(ctx, b.key, func(key string) (*stripe.Invoice, error) {
		it := (&invoice.Client{B: b.backend, Key: key}).List(p)
		if it.Next() {
			return it.Invoice(), nil
		}
		return nil, it.Err()
	})
	if err != nil {
		return Invoice{}, false, classify(err, "list the subscription's invoices")
	}
	if got == nil {
		return Invoice{}, false, nil
	}
	return invoiceOf(got), true, nil
}

// ChatCancelKey is the idempotency key of the operator's cancellation of
// subscription id.
func ChatCancelKey(id string) string { return "oracle-chat-cancel-" + id }

// CancelNow ends subscription id at once (not at its period's end), as a
// refund does: Stripe then sends customer.subscription.deleted, which ends
// access. One already canceled is returned as it is; canceled reports
// whether this call ended it.
func (b *Billing) CancelNow(ctx context.Context, id string) (sub Subscription, canceled bool, err error) {
	s, err := withKey(ctx, b.key, func(key string) (*stripe.Subscription, error) {
		p := &stripe.SubscriptionParams{}
		p.Context = ctx
		return (&subscription.Client{B: b.backend, Key: key}).Get(id, p)
	})
	if err != nil {
		return Subscription{}, false, classify(err, "retrieve subscription")
	}
	if s.Status == stripe.SubscriptionStatusCanceled {
		return subscriptionOf(s), false, nil
	}
	p := &stripe.SubscriptionCancelParams{}
	p.Context = ctx
	p.SetIdempotencyKey(ChatCancelKey(id))
	s, err = withKey(ctx, b.key, func(key string) (*stripe.Subscription, error) {
		return (&subscription.Client{B: b.backend, Key: key}).Cancel(id, p)
	})
	if err != nil {
		return Subscription{}, false, classify(err, "cancel subscription")
	}
	replayed := s.LastResponse != nil && s.LastResponse.Header.Get("Idempotent-Replayed") == "true"
	return subscriptionOf(s), !replayed, nil
}
