// Package stripex adapts Stripe (stripe-go v76) to the domain: it creates
// Checkout Sessions with the fixed prices and the chunked query, retrieves
// and lists sessions, and turns Stripe's session objects into oracle.Session.
package stripex

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/stripe/stripe-go/v76"
	"github.com/stripe/stripe-go/v76/checkout/session"

	"42sisters.ai/oracle/shared/config"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/secret"
	"42sisters.ai/oracle/shared/tracing"
)

// Client is a Stripe API client for one secret key.
//
// It holds the Checkout Sessions client alone, not stripe-go's client.API:
// that one holds a client for every Stripe resource, and where reflection
// can call methods (the mailer's templates) the linker keeps every method
// of the types inside a value stored in an interface, as a Client is.
type Client struct {
	backend stripe.Backend
	key     *secret.Value
}

// sessions is the Checkout Sessions client for key.
func (c *Client) sessions(key string) *session.Client {
	return &session.Client{B: c.backend, Key: key}
}

// Options configure the client.
type Options struct {
	// BaseURL points the client at a fake (local stack, tests) or stripe-mock;
	// empty means the real API.
	BaseURL string
	// Timeout bounds each HTTP attempt; the function's own deadline bounds
	// the whole call.
	Timeout time.Duration
	// Retries is how many times a network failure is retried (stripe-go sends
	// an idempotency key, so retries are safe).
	Retries int64
}

// New returns a client using key.
func New(key string, o Options) *Client { return NewWithKey(secret.Static(key), o) }

// NewWithKey returns a client using key as last read: when Stripe refuses
// it (401), the key is read again from its secret and the request is made
// once more with a new one (see withKey).
func NewWithKey(key *secret.Value, o Options) *Client {
	return &Client{backend: backend(o), key: key}
}

// withKey calls op with the key as last read and, when Stripe refused it
// (401: the key was rolled), once more with the key read again from its
// secret, if that changed (at most once a minute per container, see package
// secret). A refused request did nothing at Stripe, so making it again is
// safe.
func withKey[T any](ctx context.Context, key *secret.Value, op func(key string) (T, error)) (T, error) {
	used := key.Get()
	v, err := op(used)
	var se *stripe.Error
	if errors.As(err, &se) && se.HTTPStatusCode == http.StatusUnauthorized {
		if fresh, ok := key.Renew(ctx, used); ok {
			return op(fresh)
		}
	}
	return v, err
}

// backend is the HTTP backend o asks for.
func backend(o Options) stripe.Backend {
	if o.Timeout == 0 {
		o.Timeout = 4 * time.Second
	}
	cfg := &stripe.BackendConfig{
		HTTPClient:        &http.Client{Timeout: o.Timeout, Transport: tracing.Transport("stripe", nil)},
		MaxNetworkRetries: stripe.Int64(o.Retries),
		LeveledLogger:     quiet{},
	}
	if o.BaseURL != "" {
		cfg.URL = stripe.String(o.BaseURL)
	}
	return stripe.GetBackendWithConfig(stripe.APIBackend, cfg)
}

// CheckoutRequest is what a Checkout Session is made of.
type CheckoutRequest struct {
	Tier       oracle.Tier
	Query      string
	Referral   string
	SuccessURL string
	CancelURL  string
	// Smoke marks the smoke test's session (metadata smoke=1), made out to
	// Email, an address that reaches no person.
	Smoke bool
	Email string
}

// CheckoutSession is a created session: its id and the hosted page URL.
type CheckoutSession struct {
	ID  string
	URL string
}

// Params builds the Checkout Session parameters. The amount comes only from
// the tier's fixed price; the query travels as metadata chunks q0..qN with
// qn their count.
func Params(r CheckoutRequest) (*stripe.CheckoutSessionParams, error) {
	meta, err := QueryMetadata(r.Query)
	if err != nil {
		return nil, err
	}
	meta[MetaTier] = string(r.Tier)
	if r.Referral != "" {
		meta[MetaReferral] = r.Referral
	}
	if r.Smoke {
		meta[MetaSmoke] = "1"
	}
	p := &stripe.CheckoutSessionParams{
		Mode:       stripe.String(string(stripe.CheckoutSessionModePayment)),
		SuccessURL: stripe.String(r.SuccessURL),
		CancelURL:  stripe.String(r.CancelURL),
		LineItems: []*stripe.CheckoutSessionLineItemParams{{
			Quantity: stripe.Int64(1),
			PriceData: &stripe.CheckoutSessionLineItemPriceDataParams{
				Currency:   stripe.String(oracle.Currency),
				UnitAmount: stripe.Int64(r.Tier.PriceCents()),
				ProductData: &stripe.CheckoutSessionLineItemPriceDataProductDataParams{
					Name: stripe.String(r.Tier.Name()),
				},
			},
		}},
		Metadata: meta,
	}
	if r.Email != "" {
		p.CustomerEmail = stripe.String(r.Email)
	}
	return p, nil
}

// CreateCheckoutSession creates a session for r.
func (c *Client) CreateCheckoutSession(ctx context.Context, r CheckoutRequest) (CheckoutSession, error) {
	p, err := Params(r)
	if err != nil {
		return CheckoutSession{}, err
	}
	p.Context = ctx
	if tp := tracing.Parent(ctx); tp != "" {
		// The order's trace goes on in the webhook, with Stripe and the
		// customer between: the session carries the checkout's trace
		// context in client_reference_id (unused by a verdict's session;
		// its metadata keys all go to the query's chunks).
		p.ClientReferenceID = stripe.String(tp)
	}
	s, err := withKey(ctx, c.key, func(key string) (*stripe.CheckoutSession, error) { return c.sessions(key).New(p) })
	if err != nil {
		return CheckoutSession{}, classify(err, "create checkout session")
	}
	return CheckoutSession{ID: s.ID, URL: s.URL}, nil
}

// RetrieveSession fetches a session by id.
func (c *Client) RetrieveSession(ctx context.Context, id string) (oracle.Session, error) {
	p := &stripe.CheckoutSessionParams{}
	p.Context = ctx
	s, err := withKey(ctx, c.key, func(key string) (*stripe.CheckoutSession, error) { return c.sessions(key).Get(id, p) })
	if err != nil {
		return oracle.Session{}, classify(err, "retrieve checkout session")
	}
	return Session(s), nil
}

// CompletedSessions calls each, newest first, with every session that
// completed checkout and was created in [from, to), paid or not. Stripe
// keeps created in whole seconds, so from and to are truncated to the
// second: back-to-back windows then neither overlap nor leave a gap. The
// listing stops at the first error from each, which it returns wrapped.
func (c *Client) CompletedSessions(ctx context.Context, from, to time.Time, each func(oracle.Session) error) error {
	p := &stripe.CheckoutSessionListParams{
		Status: stripe.String(string(stripe.CheckoutSessionStatusComplete)),
		CreatedRange: &stripe.RangeQueryParams{
			GreaterThanOrEqual: from.Unix(),
			LesserThan:         to.Unix(),
		},
	}
	p.Context = ctx
	p.Limit = stripe.Int64(100) // Stripe's largest page: the fewest calls
	return listAll(ctx, c.key, func(key string) *session.Iter { return c.sessions(key).List(p) }, (*session.Iter).CheckoutSession, func(cs *stripe.CheckoutSession) error {
		if err := each(Session(cs)); err != nil {
			return fmt.Errorf("list completed checkout sessions: session %s: %w", oracle.ShortID(cs.ID), err)
		}
		return nil
	}, "list completed checkout sessions")
}

// SessionsByEmail calls each, newest first, with every session whose
// customer_details.email is addr (Stripe matches it exactly): how the
// operator finds a customer's orders, since no order holds the address or
// its hash. The listing stops at the first error from each.
func (c *Client) SessionsByEmail(ctx context.Context, addr string, each func(oracle.Session) error) error {
	p := &stripe.CheckoutSessionListParams{
		CustomerDetails: &stripe.CheckoutSessionListCustomerDetailsParams{Email: stripe.String(addr)},
	}
	p.Context = ctx
	p.Limit = stripe.Int64(100)
	return listAll(ctx, c.key, func(key string) *session.Iter { return c.sessions(key).List(p) }, (*session.Iter).CheckoutSession, func(cs *stripe.CheckoutSession) error {
		return each(Session(cs))
	}, "list a customer's checkout sessions")
}

// Ping proves the key works with the cheapest read there is: one page of
// one Checkout Session. A restricted key needs only the Checkout Sessions
// read permission, which the service needs anyway. A refused key is ErrAuth.
func (c *Client) Ping(ctx context.Context) error {
	p := &stripe.CheckoutSessionListParams{}
	p.Context = ctx
	p.Limit = stripe.Int64(1)
	// List fetches the first page at once; Next would fetch more.
	_, err := withKey(ctx, c.key, func(key string) (struct{}, error) { return struct{}{}, c.sessions(key).List(p).Err() })
	if err != nil {
		return classify(err, "list checkout sessions")
	}
	return nil
}

// ErrAuth marks Stripe rejecting the API key: a configuration problem that
// needs the operator, not a retry.
var ErrAuth = errors.New("stripe rejected the API key")

// classify maps Stripe errors to domain codes. Stripe's own message is
// left out: it can quote the parameter it refused, and the customer's query
// travels in metadata. So is the URL of a request that failed on the
// network: it holds the full session id, which logs show only cut short.
// iterator is what stripe-go's list iterators have in common.
type iterator interface {
	Next() bool
	Err() error
}

// listAll lists through list with key, read again when Stripe refuses it,
// calling each with every item as item reads it from the iterator. A
// refusal comes with the first page, before each has seen an item, so a
// renewed key lists from the start without calling each twice. It stops
// at each's first error, which it returns as it is; Stripe's is classified
// as what.
func listAll[I iterator, T any](ctx context.Context, key *secret.Value, list func(key string) I, item func(I) T, each func(T) error, what string) error {
	var eachErr error
	_, err := withKey(ctx, key, func(k string) (struct{}, error) {
		it := list(k)
		for it.Next() {
			if eachErr = each(item(it)); eachErr != nil {
				return struct{}{}, nil
			}
		}
		return struct{}{}, it.Err()
	})
	if eachErr != nil {
		return eachErr
	}
	if err != nil {
		return classify(err, what)
	}
	return nil
}

func classify(err error, op string) error {
	unavailable := "payments are temporarily unavailable; please try again later"
	var se *stripe.Error
	if !errors.As(err, &se) {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = fmt.Errorf("%s request failed: %w", ue.Op, ue.Err)
		}
		return oracle.Wrap(oracle.CodeUnavailable, fmt.Errorf("%s: %w", op, err), unavailable)
	}
	cause := fmt.Errorf("%s: stripe answered %d (type %s, code %s, request %s)", op, se.HTTPStatusCode, se.Type, se.Code, se.RequestID)
	switch {
	case se.HTTPStatusCode == http.StatusUnauthorized || se.HTTPStatusCode == http.StatusForbidden:
		return oracle.Wrap(oracle.CodeUnavailable, fmt.Errorf("%w: %w", ErrAuth, cause), unavailable)
	case se.Code == stripe.ErrorCodeResourceMissing:
		return oracle.Wrap(oracle.CodeNotFound, cause, "unknown checkout session")
	case se.HTTPStatusCode >= 500 || se.HTTPStatusCode == http.StatusTooManyRequests:
		return oracle.Wrap(oracle.CodeUnavailable, cause, unavailable)
	}
	return cause
}

// Session converts Stripe's session object, resolving its tier and query
// from the metadata and the Payment Link field.
func Session(s *stripe.CheckoutSession) oracle.Session {
	out := oracle.Session{
		ID:             s.ID,
		PaymentStatus:  string(s.PaymentStatus),
		TierRaw:        s.Metadata[MetaTier],
		Referral:       s.Metadata[MetaReferral],
		Smoke:          s.Metadata[MetaSmoke] == "1",
		AmountTotal:    s.AmountTotal,
		AmountSubtotal: s.AmountSubtotal,
		Currency:       string(s.Currency),
		Livemode:       s.Livemode,
		Created:        time.Unix(s.Created, 0).UTC(),
		Email:          s.CustomerEmail,
	}
	if s.PaymentIntent != nil {
		out.PaymentIntent = s.PaymentIntent.ID
	}
	if s.Mode != stripe.CheckoutSessionModeSubscription {
		// A verdict's session carries the checkout's traceparent there;
		// a chat session's is its account (ChatSessionFromJSON).
		out.TraceParent = s.ClientReferenceID
	}
	if s.CustomerDetails != nil && s.CustomerDetails.Email != "" {
		out.Email = s.CustomerDetails.Email
	}
	idea := ""
	for _, f := range s.CustomFields {
		if f != nil && f.Key == IdeaField && f.Text != nil {
			idea = f.Text.Value
		}
	}
	out.Tier, out.Query, out.Drop = Resolve(s.Metadata, idea)
	return out
}

// SessionFromJSON decodes a session object from an event's data.object.
func SessionFromJSON(raw json.RawMessage) (oracle.Session, error) {
	s, _, err := SessionModeFromJSON(raw)
	return s, err
}

// SessionModeFromJSON is SessionFromJSON that also says the session's
// mode ("payment" for a verdict, "subscription" for Sisters Chat), from
// the one decoding.
//
// It decodes only the fields Session reads, into a struct of their own:
// stripe.CheckoutSession has some hundred fields, nested objects among
// them, and decoding it was a fifth of the webhook's own work on every
// event (docs/performance.md). TestSessionModeFromJSONAsStripeGo holds it
// to Session over stripe-go's own decoding.
//
// The object is read by the scanner in one pass, or by encoding/json when
// it is not in the plain shape Stripe writes (see scanner).
func SessionModeFromJSON(raw json.RawMessage) (oracle.Session, string, error) {
	s, err := decodeSession(raw)
	if err != nil {
		return oracle.Session{}, "", fmt.Errorf("decode checkout session: %w", err)
	}
	if !oracle.ValidSessionID(s.ID) {
		return oracle.Session{}, "", fmt.Errorf("decode checkout session: invalid id")
	}
	out := oracle.Session{
		ID:             s.ID,
		PaymentStatus:  s.PaymentStatus,
		TierRaw:        s.Metadata[MetaTier],
		Referral:       s.Metadata[MetaReferral],
		Smoke:          s.Metadata[MetaSmoke] == "1",
		AmountTotal:    s.AmountTotal,
		AmountSubtotal: s.AmountSubtotal,
		Currency:       s.Currency,
		Livemode:       s.Livemode,
		Created:        time.Unix(s.Created, 0).UTC(),
		Email:          s.CustomerEmail,
		PaymentIntent:  string(s.PaymentIntent),
	}
	if s.Mode != string(stripe.CheckoutSessionModeSubscription) {
		// As Session: a chat session's client_reference_id is its account.
		out.TraceParent = s.ClientReferenceID
	}
	if s.CustomerDetails != nil && s.CustomerDetails.Email != "" {
		out.Email = s.CustomerDetails.Email
	}
	idea := ""
	for _, f := range s.CustomFields {
		if f != nil && f.Key == IdeaField && f.Text != nil {
			idea = f.Text.Value
		}
	}
	out.Tier, out.Query, out.Drop = Resolve(s.Metadata, idea)
	return out, s.Mode, nil
}

// sessionObject is the part of a Checkout Session object that Session
// reads, with stripe-go's field names and types.
type sessionObject struct {
	ID                string            `json:"id"`
	Mode              string            `json:"mode"`
	PaymentStatus     string            `json:"payment_status"`
	Metadata          map[string]string `json:"metadata"`
	AmountTotal       int64             `json:"amount_total"`
	AmountSubtotal    int64             `json:"amount_subtotal"`
	Currency          string            `json:"currency"`
	Livemode          bool              `json:"livemode"`
	Created           int64             `json:"created"`
	CustomerEmail     string            `json:"customer_email"`
	ClientReferenceID string            `json:"client_reference_id"`
	PaymentIntent     expandableID      `json:"payment_intent"`
	CustomerDetails   *customerDetails  `json:"customer_details"`
	CustomFields      []*customField    `json:"custom_fields"`
}

type customerDetails struct {
	Email string `json:"email"`
}

type customField struct {
	Key  string      `json:"key"`
	Text *customText `json:"text"`
}

type customText struct {
	Value string `json:"value"`
}

// decodeSession reads a session object as encoding/json would, with the
// scanner when it can. It and DecodeEnvelope repeat their five lines on
// purpose: a generic helper taking the scan method makes the scanner
// escape, two more allocations an event on the webhook's measured path.
func decodeSession(raw []byte) (sessionObject, error) {
	var s sessionObject
	if sc := (scanner{b: raw}); sc.session(&s) && sc.end() {
		return s, nil
	}
	s = sessionObject{}
	err := json.Unmarshal(raw, &s)
	return s, err
}

// Envelope is what the webhook reads of an event: its object stays raw,
// decoded once by what handles the event's type. (stripe.Event's own
// decoding also turns the object into a map, which nothing reads.)
type Envelope struct {
	ID         string               `json:"id"`
	Type       stripe.EventType     `json:"type"`
	Livemode   bool                 `json:"livemode"`
	Created    int64                `json:"created"`
	APIVersion string               `json:"api_version"`
	Request    *stripe.EventRequest `json:"request"`
	Data       *EventData           `json:"data"`
}

// EventData holds an event's object as it was written.
type EventData struct {
	Object json.RawMessage `json:"object"`
}

// DecodeEnvelope reads an event's envelope as encoding/json would, with
// the scanner in one pass when the event is in the plain shape Stripe
// writes (see scanner).
func DecodeEnvelope(body []byte) (Envelope, error) {
	var e Envelope
	if sc := (scanner{b: body}); sc.envelope(&e) && sc.end() {
		return e, nil
	}
	e = Envelope{}
	err := json.Unmarshal(body, &e)
	return e, err
}

// expandableID is an expandable field's id: Stripe sends the id alone, or
// the object when expanded.
type expandableID string

func (e *expandableID) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var id string
		if err := json.Unmarshal(b, &id); err != nil {
			return err
		}
		*e = expandableID(id)
		return nil
	}
	var object struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(b, &object); err != nil {
		return err
	}
	*e = expandableID(object.ID)
	return nil
}

// quiet discards stripe-go's own log lines: they can quote request
// parameters, and the customer's query travels in metadata. Errors are
// returned to the caller, which logs them without the query.
type quiet struct{}

func (quiet) Debugf(string, ...any) {}
func (quiet) Infof(string, ...any)  {}
func (quiet) Warnf(string, ...any)  {}
func (quiet) Errorf(string, ...any) {}

// KeysFrom reads STRIPE_SECRET_KEY (required) and STRIPE_TEST_SECRET_KEY
// from env and sorts them with ModeKeys, recording a key that is not one as
// env's problem. Each is a secret read again when Stripe refuses it (see
// NewWithKey); a mode without a key is nil.
func KeysFrom(ctx context.Context, env *config.Env) (liveKey, testKey *secret.Value) {
	key := env.Credential(ctx, "STRIPE_SECRET_KEY", true)
	test := env.Credential(ctx, "STRIPE_TEST_SECRET_KEY", false)
	if key.Get() == "" {
		return nil, nil // missing: already env's problem
	}
	live, forTest, err := ModeKeys(key.Get(), test.Get())
	if err != nil {
		env.Invalid("STRIPE_SECRET_KEY", err)
		return nil, nil
	}
	// ModeKeys says which of the two serves each mode; a key rolled later
	// keeps its mode.
	pick := func(k string) *secret.Value {
		switch k {
		case "":
			return nil
		case key.Get():
			return key
		}
		return test
	}
	return pick(live), pick(forTest)
}

// ModeKeys sorts the configured secret keys by the mode they serve: the
// main key serves its own mode, and the optional test key serves test-mode
// (smoke) sessions when the main key is live. A session is always read
// with the key of its own mode.
func ModeKeys(main, test string) (liveKey, testKey string, err error) {
	switch {
	case IsLiveKey(main):
		return main, test, nil
	case IsTestKey(main):
		return "", main, nil
	}
	return "", "", errors.New("not a Stripe secret key (sk_ or rk_, live or test)")
}
