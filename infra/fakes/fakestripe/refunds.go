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
	Created       int64             `json:"created"`
	Currency      string            `json:"currency"`
	Metadata      map[string]string `json:"metadata"`
	PaymentIntent string            `json:"payment_intent"`
	Reason        *string           `json:"reason"`
	Status        string            `json:"status"`
}

// refundReasons are the reasons Stripe accepts.
var refundReasons = setOf([]string{"duplicate", "fraudulent", "requested_by_customer"})

// createRefund refunds all or part of what remains of a paid session's
// payment intent.
func (s *Server) createRefund(_ *http.Request, form url.Values) (any, error) {
	if ch := form.Get("charge"); ch != "" {
		return nil, noSuch(http.StatusNotFound, "charge", clip(ch), "charge")
	}
	piID := form.Get("payment_intent")
	if piID == "" {
		return nil, invalidParam(codeParameterMissing, "payment_intent", "One of the following params should be provided for this request: payment_intent or charge.")
	}
	pi, ok := s.intents[piID]
	if !ok {
		return nil, noSuch(http.StatusNotFound, "payment_intent", clip(piID), "payment_intent")
	}
	if !pi.succeeded {
		return nil, invalidParam(codeChargeNotRefundable, "payment_intent", "This PaymentIntent (%s) does not have a successful charge to refund.", piID)
	}
	remaining := pi.amount - pi.refunded
	if remaining <= 0 {
		return nil, invalidParam(codeChargeAlreadyRefunded, "", "Charge for PaymentIntent %s has already been refunded.", piID)
	}
	amount, ok, err := parseInt(form, "amount", 1, maxAmount)
	if err != nil {
		return nil, err
	}
	if !ok {
		amount = remaining
	}
	if amount > remaining {
		return nil, invalidParam(codeChargeAlreadyRefunded, "amount", "Refund amount (%s) is greater than unrefunded amount on charge (%s)", formatAmount(amount, pi.currency), formatAmount(remaining, pi.currency))
	}
	reason := optString(form, "reason")
	if reason != nil && !refundReasons[*reason] {
		return nil, invalidParam("", "reason", "Invalid reason: must be one of duplicate, fraudulent, or requested_by_customer")
	}
	md, err := parseMetadata(form)
	if err != nil {
		return nil, err
	}

	id, err := s.newID("re_", objectIDLen)
	if err != nil {
		return nil, fmt.Errorf("create refund: %w", err)
	}
	re := &refund{
		ID:            id,
		Object:        "refund",
		Amount:        amount,
		Created:       s.now().Unix(),
		Currency:      pi.currency,
		Metadata:      md,
		PaymentIntent: piID,
		Reason:        reason,
		Status:        "succeeded",
	}
	pi.refunded += amount
	s.refunds[id] = re
	s.log.Info("fakestripe: refund created", "refund", id, "payment_intent", piID, "amount", amount, "session", pi.sessionID)
	return re, nil
}

func (s *Server) retrieveRefund(r *http.Request, _ url.Values) (any, error) {
	id := r.PathValue("id")
	re, ok := s.refunds[id]
	if !ok {
		return nil, noSuch(http.StatusNotFound, "refund", clip(id), "id")
	}
	return re, nil
}
