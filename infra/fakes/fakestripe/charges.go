package fakestripe

import (
	"fmt"
	"net/http"
	"net/url"
)

// charge is the one successful charge of a paid payment intent, made when
// the payment succeeds.
type charge struct {
	id      string
	created int64
	email   string // the email the customer paid with
	dispute *dispute
	warning *earlyFraudWarning
}

// chargeObject is a Charge as the API renders it at stripe-go v76's API
// version, the fields the fake models. Since 2022-11-15 `refunds` is
// expandable, so absent, in responses and events alike. The fake takes
// payments through Checkout only: no customer, no capture of its own.
type chargeObject struct {
	ID             string            `json:"id"`
	Object         string            `json:"object"`
	Amount         int64             `json:"amount"`
	AmountCaptured int64             `json:"amount_captured"`
	AmountRefunded int64             `json:"amount_refunded"`
	BillingDetails billingDetails    `json:"billing_details"`
	Captured       bool              `json:"captured"`
	Created        int64             `json:"created"`
	Currency       string            `json:"currency"`
	Customer       *string           `json:"customer"`
	Description    *string           `json:"description"`
	Disputed       bool              `json:"disputed"`
	FailureCode    *string           `json:"failure_code"`
	FailureMessage *string           `json:"failure_message"`
	Invoice        *string           `json:"invoice"`
	Livemode       bool              `json:"livemode"`
	Metadata       map[string]string `json:"metadata"`
	Paid           bool              `json:"paid"`
	PaymentIntent  string            `json:"payment_intent"`
	ReceiptEmail   *string           `json:"receipt_email"`
	Refunded       bool              `json:"refunded"`
	Status         string            `json:"status"`
}

type billingDetails struct {
	Address billingAddress `json:"address"`
	Email   *string        `json:"email"`
	Name    *string        `json:"name"`
	Phone   *string        `json:"phone"`
}

// billingAddress is an address the fake's pay page never asks for.
type billingAddress struct {
	City       *string `json:"city"`
	Country    *string `json:"country"`
	Line1      *string `json:"line1"`
	Line2      *string `json:"line2"`
	PostalCode *string `json:"postal_code"`
	State      *string `json:"state"`
}

// succeed makes pi's payment succeed: it gets its charge, paid by email.
// The caller holds s.mu.
func (s *Server) succeed(pi *paymentIntent, email string) error {
	id, err := s.newID("ch_", objectIDLen)
	if err != nil {
		return fmt.Errorf("charge payment intent %s: %w", pi.id, err)
	}
	pi.succeeded = true
	pi.charge = &charge{id: id, created: s.now().Unix(), email: email}
	s.charges[id] = pi
	return nil
}

// renderCharge is pi's charge as the API shows it now. The caller holds
// s.mu, and pi has a charge.
func renderCharge(pi *paymentIntent) chargeObject {
	ch := pi.charge
	email := ch.email
	var invoice *string
	if pi.invoice != "" {
		invoice = &pi.invoice
	}
	return chargeObject{
		Invoice:        invoice,
		ID:             ch.id,
		Object:         "charge",
		Amount:         pi.amount,
		AmountCaptured: pi.amount,
		AmountRefunded: pi.refunded,
		BillingDetails: billingDetails{Email: &email},
		Captured:       true,
		Created:        ch.created,
		Currency:       pi.currency,
		Disputed:       ch.dispute != nil,
		Livemode:       pi.livemode,
		// Checkout keeps the session's metadata on the session; the
		// charge has none of its own.
		Metadata:      map[string]string{},
		Paid:          true,
		PaymentIntent: pi.id,
		Refunded:      pi.refunded > 0 && pi.refunded >= pi.amount,
		Status:        "succeeded",
	}
}

// retrieveCharge serves GET /v1/charges/{id}.
func (s *Server) retrieveCharge(r *http.Request, _ url.Values) (any, error) {
	id := r.PathValue("id")
	pi, ok := s.charges[id]
	if !ok {
		return nil, noSuch(http.StatusNotFound, "charge", clip(id), "id")
	}
	return renderCharge(pi), nil
}
