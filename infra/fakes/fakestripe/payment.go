package fakestripe

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/stripe/stripe-go/v76"

	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/stripex"
)

// paymentIntent is the money side of a completed session.
type paymentIntent struct {
	id        string
	sessionID string
	livemode  bool
	currency  string
	amount    int64
	refunded  int64
	succeeded bool    // false while a delayed payment is pending, and after it failed
	charge    *charge // the successful charge, made when the payment succeeds
	invoice   string  // the subscription invoice it pays, if any
}

// Errors of completing a session from the pay page.
var (
	errUnknownSession = errors.New("unknown checkout session")
	errSessionDone    = errors.New("checkout session already complete")
	errSessionExpired = errors.New("checkout session expired")
)

// formError is a pay page input the customer must correct.
type formError struct{ msg string }

func (e *formError) Error() string { return e.msg }

// payInput is what the customer entered on the pay page.
type payInput struct {
	email   string
	fields  map[string]string // custom field values by key
	delayed bool
}

// payment is a completed session whose events are yet to be delivered.
type payment struct {
	rec       *sessionRecord
	completed *event
	control   Control
	delayed   bool
	events    []*event // a subscription's events, in the order made; completed is nil
}

// complete validates in and completes the open session id: status complete,
// the customer's email and custom fields, a payment intent, and payment
// status paid, or unpaid for a delayed payment method. It stores the
// checkout.session.completed event and consumes the pending Control.
func (s *Server) complete(id string, in payInput) (*payment, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := s.sessions[id]
	if !ok {
		return nil, errUnknownSession
	}
	switch rec.s.Status {
	case sessionStatusDone:
		return nil, errSessionDone
	case sessionStatusExpired:
		return nil, errSessionExpired
	}
	if !validEmail(in.email) {
		return nil, &formError{"Enter a valid email address."}
	}
	values := make([]string, len(rec.s.CustomFields))
	for i, f := range rec.s.CustomFields {
		v := in.fields[f.Key]
		if strings.TrimSpace(v) == "" {
			if !f.Optional {
				return nil, &formError{fmt.Sprintf("%s is required.", f.Label.Custom)}
			}
			continue
		}
		if oracle.QueryUnits(v) > f.Text.MaximumLength {
			return nil, &formError{fmt.Sprintf("%s must be at most %d characters.", f.Label.Custom, f.Text.MaximumLength)}
		}
		values[i] = v
	}

	if rec.s.Mode == string(stripe.CheckoutSessionModeSubscription) {
		return s.subscribe(rec, in.email, values)
	}

	piID, err := s.newID("pi_", objectIDLen)
	if err != nil {
		return nil, fmt.Errorf("complete session: %w", err)
	}
	c := s.takeControl()
	delayed := in.delayed || c.Reorder || c.FailAsync
	pi := &paymentIntent{id: piID, sessionID: id, livemode: rec.s.Livemode, currency: rec.s.Currency, amount: rec.s.AmountTotal}
	rec.s.PaymentStatus = paymentStatusUnpaid
	if !delayed {
		if err := s.succeed(pi, in.email); err != nil {
			return nil, fmt.Errorf("complete session: %w", err)
		}
		rec.s.PaymentStatus = paymentStatusPaid
	}
	s.intents[piID] = pi

	rec.s.PaymentIntent = &piID
	rec.markComplete(in.email, values)
	ev, err := s.newSessionEvent(eventCompleted, rec)
	if err != nil {
		return nil, fmt.Errorf("complete session: %w", err)
	}
	s.log.Info("fakestripe: session completed", "session", id, "payment_status", rec.s.PaymentStatus, "control", c)
	return &payment{rec: rec, completed: ev, control: c, delayed: delayed}, nil
}

// markComplete records the customer's entries on a session now complete.
func (rec *sessionRecord) markComplete(email string, values []string) {
	rec.s.Status = sessionStatusDone
	rec.s.URL = nil
	rec.s.CustomerDetails = &customerDetails{Email: email, TaxExempt: "none", TaxIDs: []string{}}
	for i, v := range values {
		if v != "" {
			rec.s.CustomFields[i].Text.Value = &v
		}
	}
}

// subscribe completes a subscription-mode session paid with email: the
// session's customer (or a new one), an active subscription and its first
// invoice, paid. Its events are stored in the order Stripe makes the
// objects: customer.subscription.created, invoice.paid,
// checkout.session.completed. It consumes the pending Control, whose
// Reorder reverses them; a delayed payment does not apply. The caller
// holds s.mu.
func (s *Server) subscribe(rec *sessionRecord, email string, values []string) (*payment, error) {
	cust, ok := s.customers[deref(rec.s.Customer)]
	var err error
	if !ok {
		if cust, err = s.newCustomer(email, rec.s.Livemode); err != nil {
			return nil, fmt.Errorf("complete session: %w", err)
		}
	}
	sub, inv, err := s.newSubscription(rec, cust)
	if err != nil {
		return nil, fmt.Errorf("complete session: %w", err)
	}
	c := s.takeControl()
	rec.s.PaymentStatus = paymentStatusPaid
	rec.s.Customer, rec.s.Subscription, rec.s.Invoice = &cust.c.ID, &sub.s.ID, &inv.i.ID
	rec.markComplete(email, values)

	p := &payment{rec: rec, control: c}
	for _, mk := range []func() (*event, error){
		func() (*event, error) { return s.subEvent(eventSubCreated, sub, nil, eventRequest{}) },
		func() (*event, error) { return s.invoiceEvent(eventInvoicePaid, sub, inv) },
		func() (*event, error) { return s.newSessionEvent(eventCompleted, rec) },
	} {
		ev, err := mk()
		if err != nil {
			return nil, fmt.Errorf("complete session: %w", err)
		}
		p.events = append(p.events, ev)
	}
	s.log.Info("fakestripe: subscription session completed", "session", rec.s.ID, "subscription", sub.s.ID, "customer", cust.c.ID, "invoice", inv.i.ID, "control", c)
	return p, nil
}

// settle ends a delayed payment, as succeeded or failed, and stores the
// event that says so.
func (s *Server) settle(p *payment) (*event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	pi := s.intents[*p.rec.s.PaymentIntent]
	typ := eventAsyncFailed
	if !p.control.FailAsync {
		if err := s.succeed(pi, p.rec.s.CustomerDetails.Email); err != nil {
			return nil, fmt.Errorf("settle session %s: %w", p.rec.s.ID, err)
		}
		typ = eventAsyncSucceeded
		p.rec.s.PaymentStatus = paymentStatusPaid
	}
	ev, err := s.newSessionEvent(typ, p.rec)
	if err != nil {
		return nil, fmt.Errorf("settle session %s: %w", p.rec.s.ID, err)
	}
	return ev, nil
}

// finish delivers a payment's events. A delayed payment settles after its
// completed event is delivered, or before it when the Control reorders.
func (s *Server) finish(ctx context.Context, p *payment) error {
	if p.events != nil {
		s.deliverAll(ctx, p.control, p.events)
		return nil
	}
	if !p.delayed {
		s.deliver(ctx, p.control, p.completed)
		return nil
	}
	if !p.control.Reorder {
		s.deliver(ctx, p.control, p.completed)
	}
	settled, err := s.settle(p)
	if err != nil {
		return err
	}
	s.deliver(ctx, p.control, settled)
	if p.control.Reorder {
		s.deliver(ctx, p.control, p.completed)
	}
	return nil
}

// redirectURL is where the customer goes after paying: success_url with the
// session id filled in, or the fake's own page when there is none.
func (s *Server) redirectURL(r *http.Request, p *payment) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p.rec.s.SuccessURL == nil {
		return s.baseURL(r) + "/pay/" + p.rec.s.ID
	}
	return strings.ReplaceAll(*p.rec.s.SuccessURL, "{CHECKOUT_SESSION_ID}", p.rec.s.ID)
}

// newLinkSession creates a session the way a Stripe Payment Link for tier
// does: the tier's fixed price and name, metadata {"tier": tier} only, and a
// required "Your idea" text field.
func (s *Server) newLinkSession(r *http.Request, tier oracle.Tier) (*sessionRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	plink, ok := s.links[tier]
	if !ok {
		var err error
		if plink, err = s.newID("plink_", objectIDLen); err != nil {
			return nil, fmt.Errorf("create payment link for %s: %w", tier, err)
		}
		s.links[tier] = plink
	}
	p := sessionParams{
		items:    []lineItem{{Name: tier.Name(), Currency: oracle.Currency, UnitAmount: tier.PriceCents(), Quantity: 1}},
		metadata: map[string]string{stripex.MetaTier: string(tier)},
	}
	if u := s.opts.LinkSuccessURL; u != "" {
		p.successURL = &u
	}
	rec, err := s.newSession(r, s.now(), p)
	if err != nil {
		return nil, fmt.Errorf("open payment link for %s: %w", tier, err)
	}
	rec.s.PaymentLink = &plink
	rec.s.CustomFields = []customField{{
		Key:   stripex.IdeaField,
		Label: customFieldLabel{Type: "custom", Custom: "Your idea"},
		Type:  "text",
		Text:  customFieldText{MaximumLength: ideaMaxLength},
	}}
	return rec, nil
}
