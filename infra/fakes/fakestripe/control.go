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
// consumed when a payment completes. The zero Control delivers each event
// once, in order, correctly signed. It does not touch the events of
// expiries, refunds, disputes or early fraud warnings, which are always
// delivered that way (and can be resent through /_events/{id}/deliver).
type Control struct {
	// Duplicate delivers each event this many times (0 and 1 mean once).
	Duplicate int `json:"duplicate,omitempty"`
	// Concurrent sends an event's duplicates at the same time instead of
	// one after another.
	Concurrent bool `json:"concurrent,omitempty"`
	// Reorder delivers checkout.session.async_payment_succeeded (or _failed)
	// before checkout.session.completed. It implies a delayed payment.
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

// handleControl serves POST /_control: a JSON Control, unknown fields refused.
func (s *Server) handleControl(w http.ResponseWriter, r *http.Request) {
	c, err := decodeControl(http.MaxBytesReader(w, r.Body, 4<<10))
	if err != nil {
		writeAPIError(w, invalidParam("", "", "Invalid control: %v", err))
		return
	}
	s.SetControl(c)
	s.log.Info("fakestripe: control set for the next payment", "control", c)
	s.writeJSON(w, http.StatusOK, c)
}

func decodeControl(body io.Reader) (Control, error) {
	c, err := fakecontrol.Decode[Control](body)
	if err != nil {
		return Control{}, err
	}
	if c.Duplicate < 0 || c.Duplicate > maxDuplicate {
		return Control{}, fmt.Errorf("duplicate must be between 0 and %d, got %d", maxDuplicate, c.Duplicate)
	}
	return c, nil
}
