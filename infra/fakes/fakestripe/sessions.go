package fakestripe

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v76"
)

// Checkout Session limits and defaults, as Stripe applies them.
const (
	sessionLifetime      = 24 * time.Hour
	minSessionLifetime   = 30 * time.Minute
	maxLineItems         = 100
	maxAmount            = 99_999_999 // eight digits in the minor unit
	maxQuantity          = 999_999
	maxClientReference   = 200
	ideaMaxLength        = 255
	paymentMethodCard    = "card"
	sessionStatusOpen    = "open"
	sessionStatusDone    = "complete"
	sessionStatusExpired = "expired"
	paymentStatusPaid    = "paid"
	paymentStatusUnpaid  = "unpaid"
)

// session is a Checkout Session exactly as the API renders it.
type session struct {
	ID                 string            `json:"id"`
	Object             string            `json:"object"`
	AmountSubtotal     int64             `json:"amount_subtotal"`
	AmountTotal        int64             `json:"amount_total"`
	CancelURL          *string           `json:"cancel_url"`
	ClientReferenceID  *string           `json:"client_reference_id"`
	Created            int64             `json:"created"`
	Currency           string            `json:"currency"`
	Customer           *string           `json:"customer"`
	CustomFields       []customField     `json:"custom_fields"`
	CustomerDetails    *customerDetails  `json:"customer_details"`
	CustomerEmail      *string           `json:"customer_email"`
	ExpiresAt          int64             `json:"expires_at"`
	Invoice            *string           `json:"invoice"`
	Livemode           bool              `json:"livemode"`
	Metadata           map[string]string `json:"metadata"`
	Mode               string            `json:"mode"`
	PaymentIntent      *string           `json:"payment_intent"`
	PaymentLink        *string           `json:"payment_link"`
	PaymentMethodTypes []string          `json:"payment_method_types"`
	PaymentStatus      string            `json:"payment_status"`
	Status             string            `json:"status"`
	Subscription       *string           `json:"subscription"`
	SuccessURL         *string           `json:"success_url"`
	UIMode             string            `json:"ui_mode"`
	URL                *string           `json:"url"`
}

// customField is a Checkout custom field; the fake supports text fields.
type customField struct {
	Key      string           `json:"key"`
	Label    customFieldLabel `json:"label"`
	Type     string           `json:"type"`
	Optional bool             `json:"optional"`
	Text     customFieldText  `json:"text"`
}

type customFieldLabel struct {
	Type   string `json:"type"`
	Custom string `json:"custom"`
}

type customFieldText struct {
	Value         *string `json:"value"`
	MaximumLength int     `json:"maximum_length"`
	MinimumLength *int    `json:"minimum_length"`
}

type customerDetails struct {
	Address   *struct{} `json:"address"`
	Email     string    `json:"email"`
	Name      *string   `json:"name"`
	Phone     *string   `json:"phone"`
	TaxExempt string    `json:"tax_exempt"`
	TaxIDs    []string  `json:"tax_ids"`
}

// lineItem is what the pay page shows of a line item.
type lineItem struct {
	Name       string
	Currency   string
	UnitAmount int64
	Quantity   int64
	price      *priceRecord // the price named by id; nil for price_data
}

// sessionRecord is a session with the state the API does not show.
type sessionRecord struct {
	s           session
	items       []lineItem
	subMetadata map[string]string // subscription_data[metadata], for the subscription
}

// SessionIDs lists the ids of every session made so far.
func (s *Server) SessionIDs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]string, 0, len(s.sessions))
	for id := range s.sessions {
		ids = append(ids, id)
	}
	return ids
}

// Session returns the session with id as the API would return it now, decoded
// with stripe-go, and whether it exists.
func (s *Server) Session(id string) (*stripe.CheckoutSession, bool) {
	s.mu.Lock()
	rec, ok := s.sessions[id]
	var b []byte
	var err error
	if ok {
		b, err = json.Marshal(rec.s)
	}
	s.mu.Unlock()
	if !ok {
		return nil, false
	}
	var cs stripe.CheckoutSession
	if err == nil {
		err = json.Unmarshal(b, &cs)
	}
	if err != nil {
		s.log.Error("fakestripe: render session", "session", id, "err", fmt.Errorf("round-trip session through JSON: %w", err))
		return nil, false
	}
	return &cs, true
}

func (s *Server) retrieveSession(r *http.Request, _ url.Values) (any, error) {
	id := r.PathValue("id")
	rec, ok := s.sessions[id]
	if !ok {
		return nil, noSuch(http.StatusNotFound, "checkout.session", id, "session")
	}
	return rec.s, nil
}

// expireSession serves POST /v1/checkout/sessions/{id}/expire: an open
// session becomes expired, and its checkout.session.expired event is sent
// before the call answers, as a payment's events are. A refusal is kept for
// the idempotency key, as any answer of an endpoint that ran.
func (s *Server) expireSession(r *http.Request, _ url.Values) (any, error) {
	id := r.PathValue("id")
	rec, ok := s.sessions[id]
	if !ok {
		return nil, executed(noSuch(http.StatusNotFound, "checkout.session", clip(id), "session"))
	}
	if rec.s.Status != sessionStatusOpen {
		return nil, executed(invalidParam("", "", "Only Checkout Sessions with a status in [\"open\"] can be expired. This Checkout Session has a status of \"%s\".", rec.s.Status))
	}
	rec.s.Status = sessionStatusExpired
	rec.s.URL = nil
	ev, err := s.newSessionEvent(eventExpired, rec)
	if err != nil {
		return nil, fmt.Errorf("expire session: %w", err)
	}
	s.outbox = append(s.outbox, ev)
	s.log.Info("fakestripe: session expired", "session", id)
	return rec.s, nil
}

// sessionParams are the validated parameters of a session create call.
type sessionParams struct {
	mode              string // payment when empty
	customer          *string
	subMetadata       map[string]string
	successURL        *string
	cancelURL         *string
	customerEmail     *string
	clientReferenceID *string
	expiresAt         int64 // 0 means the default lifetime
	items             []lineItem
	metadata          map[string]string
}

func (s *Server) createSession(r *http.Request, form url.Values) (any, error) {
	now := s.now()
	p, err := parseSessionParams(form, now, s.lookupPrice)
	if err != nil {
		return nil, err
	}
	if p.customer != nil && s.customers[*p.customer] == nil {
		return nil, noSuch(http.StatusBadRequest, "customer", clip(*p.customer), "customer")
	}
	rec, err := s.newSession(r, now, p)
	if err != nil {
		return nil, err
	}
	s.log.Info("fakestripe: session created", "session", rec.s.ID, "amount_total", rec.s.AmountTotal, "currency", rec.s.Currency)
	return rec.s, nil
}

// newSession stores a new open session. The caller holds s.mu.
func (s *Server) newSession(r *http.Request, now time.Time, p sessionParams) (*sessionRecord, error) {
	id, err := s.newID("cs_test_", sessionIDLen)
	if err != nil {
		return nil, fmt.Errorf("create session: %w", err)
	}
	var total int64
	for _, it := range p.items {
		total += it.UnitAmount * it.Quantity
	}
	expires := p.expiresAt
	if expires == 0 {
		expires = now.Add(sessionLifetime).Unix()
	}
	payURL := s.baseURL(r) + "/pay/" + id
	mode := cmp.Or(p.mode, string(stripe.CheckoutSessionModePayment))
	rec := &sessionRecord{
		subMetadata: p.subMetadata,
		s: session{
			ID:                 id,
			Object:             "checkout.session",
			AmountSubtotal:     total,
			AmountTotal:        total,
			CancelURL:          p.cancelURL,
			ClientReferenceID:  p.clientReferenceID,
			Created:            now.Unix(),
			Currency:           p.items[0].Currency,
			Customer:           p.customer,
			CustomFields:       []customField{},
			CustomerEmail:      p.customerEmail,
			ExpiresAt:          expires,
			Metadata:           p.metadata,
			Mode:               mode,
			PaymentMethodTypes: []string{paymentMethodCard},
			PaymentStatus:      paymentStatusUnpaid,
			Status:             sessionStatusOpen,
			SuccessURL:         p.successURL,
			UIMode:             "hosted",
			URL:                &payURL,
		},
		items: p.items,
	}
	s.sessions[id] = rec
	return rec, nil
}

// parseSessionParams validates a create call the way Stripe does for a
// hosted session: in payment mode with inline price_data or one-time
// prices, in subscription mode with recurring prices (price finds them).
func parseSessionParams(form url.Values, now time.Time, price func(string) *priceRecord) (sessionParams, error) {
	var p sessionParams
	switch mode := form.Get("mode"); mode {
	case "":
		return p, missingParam("mode")
	case "payment", "subscription":
		p.mode = mode
	case "setup":
		return p, invalidParam("", "mode", "The fake Stripe supports only mode=payment and mode=subscription, not %s.", mode)
	default:
		return p, invalidParam("", "mode", "Invalid mode: must be one of payment, setup, or subscription")
	}

	p.successURL = optString(form, "success_url")
	if p.successURL == nil {
		return p, missingParam("success_url")
	}
	if err := checkURL("success_url", *p.successURL); err != nil {
		return p, err
	}
	p.cancelURL = optString(form, "cancel_url")
	if p.cancelURL != nil {
		if err := checkURL("cancel_url", *p.cancelURL); err != nil {
			return p, err
		}
	}
	p.customerEmail = optString(form, "customer_email")
	if p.customerEmail != nil && !validEmail(*p.customerEmail) {
		return p, invalidParam(codeEmailInvalid, "customer_email", "Invalid email address: %s", clip(*p.customerEmail))
	}
	p.customer = optString(form, "customer")
	if p.customer != nil && p.customerEmail != nil {
		return p, invalidParam("", "customer_email", "You may only specify one of these parameters: customer, customer_email.")
	}
	p.clientReferenceID = optString(form, "client_reference_id")
	if p.clientReferenceID != nil && len([]rune(*p.clientReferenceID)) > maxClientReference {
		return p, invalidParam("", "client_reference_id", "Invalid string: client_reference_id must be at most %d characters.", maxClientReference)
	}

	lo, hi := now.Add(minSessionLifetime).Unix(), now.Add(sessionLifetime).Unix()
	exp, ok, err := parseInt(form, "expires_at", 0, 1<<40)
	if err != nil {
		return p, err
	}
	if ok && exp < lo {
		return p, invalidParam("", "expires_at", "The `expires_at` timestamp must be at least 30 minutes from Checkout Session creation.")
	}
	if ok && exp > hi {
		return p, invalidParam("", "expires_at", "The `expires_at` timestamp must be less than 24 hours from Checkout Session creation.")
	}
	p.expiresAt = exp

	if p.items, err = parseLineItems(form, price); err != nil {
		return p, err
	}
	if err := checkItemsForMode(p.mode, p.items); err != nil {
		return p, err
	}
	if p.subMetadata, err = parseMetadataAt(form, "subscription_data[metadata]"); err != nil {
		return p, err
	}
	p.metadata, err = parseMetadata(form)
	return p, err
}

// checkItemsForMode refuses recurring prices in payment mode, as Stripe
// does, and in subscription mode anything but recurring prices of one
// interval, which is what the fake models.
func checkItemsForMode(mode string, items []lineItem) error {
	recurring := func(it lineItem) bool { return it.price != nil && it.price.p.Recurring != nil }
	if mode == string(stripe.CheckoutSessionModePayment) {
		if slices.ContainsFunc(items, recurring) {
			return invalidParam("", "line_items", "You specified `payment` mode but passed a recurring price. Either switch to `subscription` mode or use only one-time prices.")
		}
		return nil
	}
	for _, it := range items {
		if !recurring(it) {
			return invalidParam("", "line_items", "The fake Stripe supports only recurring prices, named by id, in `subscription` mode.")
		}
		if *it.price.p.Recurring != *items[0].price.p.Recurring {
			return invalidParam("", "line_items", "Checkout does not support multiple prices with different billing intervals.")
		}
	}
	return nil
}

// lookupPrice finds a stored price by id, or nil. The caller holds s.mu.
func (s *Server) lookupPrice(id string) *priceRecord {
	return s.prices[id]
}

// parseLineItems reads line_items[i][...] for i = 0..n-1.
func parseLineItems(form url.Values, price func(string) *priceRecord) ([]lineItem, error) {
	n := 0
	for key := range form {
		rest, ok := strings.CutPrefix(key, "line_items[")
		if !ok {
			continue
		}
		idx, _, _ := strings.Cut(rest, "]")
		i, err := strconv.Atoi(idx)
		if err != nil || i < 0 || i >= maxLineItems {
			return nil, invalidParam("", "line_items", "Invalid array: line_items must be indexed 0 to %d.", maxLineItems-1)
		}
		n = max(n, i+1)
	}
	if n == 0 {
		return nil, missingParam("line_items")
	}
	items := make([]lineItem, n)
	var total int64
	for i := range items {
		it, err := parseLineItem(form, fmt.Sprintf("line_items[%d]", i), price)
		if err != nil {
			return nil, err
		}
		if i > 0 && it.Currency != items[0].Currency {
			return nil, invalidParam("", "line_items", "Checkout does not support multiple currencies: line items are in %s and %s.", items[0].Currency, it.Currency)
		}
		items[i] = it
		total += it.UnitAmount * it.Quantity
	}
	if total > maxAmount {
		return nil, invalidParam(codeAmountTooLarge, "line_items", "The total amount must be at most %d in the currency's minor unit.", maxAmount)
	}
	return items, nil
}

func parseLineItem(form url.Values, p string, lookup func(string) *priceRecord) (lineItem, error) {
	var it lineItem
	if id := form.Get(p + "[price]"); id != "" {
		price := lookup(id)
		if price == nil {
			return it, newAPIError(http.StatusBadRequest, codeResourceMissing, p+"[price]", "No such price: '%s'", clip(id))
		}
		if !price.p.Active {
			return it, invalidParam("", p+"[price]", "The price specified is inactive. This field only accepts active prices.")
		}
		qty, ok, err := parseInt(form, p+"[quantity]", 1, maxQuantity)
		if err != nil {
			return it, err
		}
		if !ok {
			return it, invalidParam(codeParameterMissing, p+"[quantity]", "Quantity is required. Add `quantity` to `%s`.", p)
		}
		return lineItem{Name: price.name, Currency: price.p.Currency, UnitAmount: price.p.UnitAmount, Quantity: qty, price: price}, nil
	}
	if product := form.Get(p + "[price_data][product]"); product != "" {
		return it, newAPIError(http.StatusBadRequest, codeResourceMissing, p+"[price_data][product]", "No such product: '%s'", clip(product))
	}
	hasPriceData := false
	for key := range form {
		if strings.HasPrefix(key, p+"[price_data]") {
			hasPriceData = true
			break
		}
	}
	if !hasPriceData {
		return it, invalidParam(codeParameterMissing, p, "You must specify either `price` or `price_data` in %s.", p)
	}

	cur := strings.ToLower(form.Get(p + "[price_data][currency]"))
	if cur == "" {
		return it, missingParam(p + "[price_data][currency]")
	}
	if !currencies[cur] {
		return it, invalidParam("", p+"[price_data][currency]", "Invalid currency: %s. See https://stripe.com/docs/currencies for the supported currencies.", clip(cur))
	}
	it.Currency = cur

	it.Name = form.Get(p + "[price_data][product_data][name]")
	if strings.TrimSpace(it.Name) == "" {
		return it, missingParam(p + "[price_data][product_data][name]")
	}

	amount, ok, err := parseInt(form, p+"[price_data][unit_amount]", 0, maxAmount)
	if err != nil {
		return it, err
	}
	if !ok {
		return it, missingParam(p + "[price_data][unit_amount]")
	}
	it.UnitAmount = amount

	qty, ok, err := parseInt(form, p+"[quantity]", 1, maxQuantity)
	if err != nil {
		return it, err
	}
	if !ok {
		return it, invalidParam(codeParameterMissing, p+"[quantity]", "Quantity is required. Add `quantity` to `%s`.", p)
	}
	it.Quantity = qty
	return it, nil
}
