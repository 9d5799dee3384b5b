package fakestripe

import (
	"fmt"
	"io"
	"net/http"

	"42sisters.ai/oracle/infra/fakes/fakecontrol"
)

// maxDuplicate bounds Control.Duplicate when set over HTTP.
const maxDuplicate = 100

// Control shapes the webhook deliveries of the next payment only; it is
// consumed when a payment completes, one-time or a subscription's first,
// or when a clock advance bills subscriptions (its events are that
// payment's). The zero Control delivers each event once, in order,
// correctly signed. It does not touch the events of expiries, refunds,
// disputes, early fraud warnings or subscription updates, which are always
// delivered that way (and can be resent through /_events/{id}/deliver).
type Control struct {
	// Duplicate delivers each event this many times (0 and 1 mean once).
	Duplicate int `json:"duplicate,omitempty"`
	// Concurrent sends an event's duplicates at the same time instead of
	// one after another.
	Concurrent bool `json:"concurrent,omitempty"`
	// Reorder delivers checkout.session.async_payment_succeeded (or _failed)
	// before checkout.session.completed. It implies a delayed payment. A
	// subscription's events, and a clock advance's, are sent in reverse.
	Reorder bool `json:"reorder,omitempty"`
	// BadSignature signs deliveries with a wrong secret.
	BadSignature bool `json:"bad_signature,omitempty"`
	// StaleSignature signs deliveries with a timestamp 301 s in the past,
	// just outside stripe-go's 300 s tolerance.
	StaleSignature bool `json:"stale_signature,omitempty"`
	// FailAsync sends checkout.session.async_payment_failed instead of
	// async_payment_succeeded. It implies a delayed payment.
	FailAsync bool `json:"fail_async,omitempty"`
	// SkipDelivery creates and stores the events but delivers none.
	SkipDelivery bool `json:"skip_delivery,omitempty"`
	// APIVersion delivers the events in this API version instead of
	// stripe-go's, as an endpoint created with another version would
	// (the events stored, and resent, keep stripe-go's).
	APIVersion string `json:"api_version,omitempty"`
}

// Renewals shapes the subscriptions' renewal payments, which the clock
// makes (POST /_clock). Unlike Control it is not consumed by a Checkout
// payment: each renewal payment attempt, a retry included, takes one of
// FailRenewals. It is set by the same POST /_control, which replaces both.
type Renewals struct {
	// FailRenewals declines this many of the next renewal payment attempts:
	// the invoice's payment fails (invoice.payment_failed) and the
	// subscription is past_due until an attempt succeeds. An invoice is
	// tried four times: when it is finalized, then 3, 5 and 7 days after
	// each failure.
	FailRenewals int `json:"fail_renewals,omitempty"`
	// AfterRetries is what a subscription becomes when the fourth attempt
	// fails, as Stripe's setting "if all retries for a payment fail":
	// "canceled" (the default, customer.subscription.deleted), "unpaid" or
	// "past_due" (customer.subscription.updated, or no change).
	AfterRetries string `json:"after_retries,omitempty"`
}

// controlRequest is the body of POST /_control.
type controlRequest struct {
	Control
	Renewals
}

// SetRenewals sets how the next renewal payments go, replacing any
// pending Renewals; the zero Renewals lets every renewal succeed.
func (s *Server) SetRenewals(r Renewals) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.renewals = r
}

// SetControl sets the Control for the next payment, replacing any pending
// one; the zero Control resets.
func (s *Server) SetControl(c Control) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.control = c
}

// takeControl returns the pending Control and resets it. The caller holds s.mu.
func (s *Server) takeControl() Control {
	c := s.control
	s.control = Control{}
	return c
}

// handleControl serves POST /_control: a JSON Control and Renewals, unknown
// fields refused.
func (s *Server) handleControl(w http.ResponseWriter, r *http.Request) {
	req, err := decodeControl(http.MaxBytesReader(w, r.Body, 4<<10))
	if err != nil {
		writeAPIError(w, invalidParam("", "", "Invalid control: %v", err))
		return
	}
	c := req.Control
	s.SetControl(c)
	s.SetRenewals(req.Renewals)
	s.log.Info("fakestripe: control set for the next payment", "control", c, "renewals", req.Renewals)
	s.writeJSON(w, http.StatusOK, req)
}

func decodeControl(body io.Reader) (controlRequest, error) {
	req, err := fakecontrol.Decode[controlRequest](body)
	if err != nil {
		return controlRequest{}, err
	}
	if err := req.Renewals.check(); err != nil {
		return controlRequest{}, err
	}
	c := req.Control
	if c.Duplicate < 0 || c.Duplicate > maxDuplicate {
		return controlRequest{}, fmt.Errorf("duplicate must be between 0 and %d, got %d", maxDuplicate, c.Duplicate)
	}
	return req, nil
}

// check refuses Renewals the fake cannot follow.
func (rn Renewals) check() error {
	if rn.FailRenewals < 0 || rn.FailRenewals > maxDuplicate {
		return fmt.Errorf("fail_renewals must be between 0 and %d, got %d", maxDuplicate, rn.FailRenewals)
	}
	switch rn.AfterRetries {
	case "", subCanceled, subUnpaid, subPastDue:
		return nil
	}
	return fmt.Errorf("after_retries must be canceled, unpaid or past_due, got %q", rn.AfterRetries)
}
