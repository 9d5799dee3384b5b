package fakestripe

import (
	"fmt"
	"net/http"
	"net/url"
)

// refund is a Refund exactly as the API renders it.
type refund struct {
	ID            string            `json:"id"`
	Object        string            `json:"object"`
	Amount        int64             `json:"amount"`
	Charge        string            `json:"charge"`
	Created       int64             `json:"created"`
	Currency      string            `json:"currency"`
	Metadata      map[string]string `json:"metadata"`
	PaymentIntent string            `json:"payment_intent"`
	Reason        *string           `json:"reason"`
	Status        string            `json:"status"`
}

// refundReasons are the reasons Stripe accepts.
var refundReasons = setOf([]string{"duplicate", "fraudulent", "requested_by_customer"})

// createRefund refunds all or part of what remains of a paid payment
// intent's charge, named by either. Whoever calls, the service or the
// Dashboard, the refund emits charge.refunded, sent before the call answers.
func (s *Server) createRefund(r *http.Request, form url.Values) (any, error) {
	// The parameters first: a refusal here is not kept for the
	// idempotency key.
	chID, piID := form.Get("charge"), form.Get("payment_intent")
	if chID == "" && piID == "" {
		return nil, invalidParam(codeParameterMissing, "payment_intent", "One of the following params should be provided for this request: payment_intent or charge.")
	}
	amount, hasAmount, err := parseInt(form, "amount", 1, maxAmount)
	if err != nil {
		return nil, err
	}
	reason := optString(form, "reason")
	if reason != nil && !refundReasons[*reason] {
		return nil, invalidParam("", "reason", "Invalid reason: must be one of duplicate, fraudulent, or requested_by_customer")
	}
	md, err := parseMetadata(form)
	if err != nil {
		return nil, err
	}

	// From here the endpoint executes: its answer, a refusal included, is
	// kept for the idempotency key.
	pi, err := s.refundable(chID, piID)
	if err != nil {
		return nil, executed(err)
	}
	remaining := pi.amount - pi.refunded
	if !hasAmount {
		amount = remaining
	}
	if amount > remaining {
		return nil, executed(invalidParam(codeChargeAlreadyRefunded, "amount", "Refund amount (%s) is greater than unrefunded amount on charge (%s)", formatAmount(amount, pi.currency), formatAmount(remaining, pi.currency)))
	}

	id, err := s.newID("re_", objectIDLen)
	if err != nil {
		return nil, fmt.Errorf("create refund: %w", err)
	}
	re := &refund{
		ID:            id,
		Object:        "refund",
		Amount:        amount,
		Charge:        pi.charge.id,
		Created:       s.now().Unix(),
		Currency:      pi.currency,
		Metadata:      md,
		PaymentIntent: pi.id,
		Reason:        reason,
		Status:        "succeeded",
	}
	// charge.refunded carries the charge after the refund, and what its
	// changed attributes were before.
	previous := map[string]any{"amount_refunded": pi.refunded}
	pi.refunded += amount
	if pi.refunded >= pi.amount {
		previous["refunded"] = false
	}
	ev, err := s.newEvent(eventSpec{
		typ:       eventChargeRefunded,
		sessionID: pi.sessionID,
		livemode:  pi.livemode,
		object:    renderCharge(pi),
		previous:  previous,
		request:   requestOf(r),
	})
	if err != nil {
		pi.refunded -= amount
		return nil, fmt.Errorf("create refund: %w", err)
	}
	s.refunds[id] = re
	s.outbox = append(s.outbox, ev)
	s.log.Info("fakestripe: refund created", "refund", id, "payment_intent", pi.id, "charge", pi.charge.id, "amount", amount, "session", pi.sessionID, "event", ev.id)
	return re, nil
}

// refundable finds the payment intent a refund names, by its charge or
// itself, and checks that something of it can be refunded.
func (s *Server) refundable(chID, piID string) (*paymentIntent, error) {
	var pi *paymentIntent
	if chID != "" {
		var ok bool
		if pi, ok = s.charges[chID]; !ok {
			return nil, noSuch(http.StatusNotFound, "charge", clip(chID), "charge")
		}
		if piID != "" && piID != pi.id {
			return nil, invalidParam("", "payment_intent", "The charge %s does not belong to the PaymentIntent %s.", chID, clip(piID))
		}
	} else {
		var ok bool
		if pi, ok = s.intents[piID]; !ok {
			return nil, noSuch(http.StatusNotFound, "payment_intent", clip(piID), "payment_intent")
		}
	}
	if !pi.succeeded {
		return nil, invalidParam(codeChargeNotRefundable, "payment_intent", "This PaymentIntent (%s) does not have a successful charge to refund.", pi.id)
	}
	if pi.charge.dispute != nil {
		return nil, invalidParam(codeChargeDisputed, "", "Charge %s has been charged back; cannot issue a refund.", pi.charge.id)
	}
	if pi.refunded >= pi.amount {
		return nil, invalidParam(codeChargeAlreadyRefunded, "", "Charge %s has already been refunded.", pi.charge.id)
	}
	return pi, nil
}

func (s *Server) retrieveRefund(r *http.Request, _ url.Values) (any, error) {
	id := r.PathValue("id")
	re, ok := s.refunds[id]
	if !ok {
		return nil, noSuch(http.StatusNotFound, "refund", clip(id), "id")
	}
	return re, nil
}
