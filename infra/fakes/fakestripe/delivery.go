package fakestripe

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/stripe/stripe-go/v76"
	"github.com/stripe/stripe-go/v76/webhook"
)

// Event types the fake emits.
const (
	eventCompleted      = "checkout.session.completed"
	eventAsyncSucceeded = "checkout.session.async_payment_succeeded"
	eventAsyncFailed    = "checkout.session.async_payment_failed"
	eventExpired        = "checkout.session.expired"
	eventChargeRefunded = "charge.refunded"
	eventDisputeCreated = "charge.dispute.created"
	eventEFWCreated     = "radar.early_fraud_warning.created"
	eventSubCreated     = "customer.subscription.created"
	eventSubUpdated     = "customer.subscription.updated"
	eventSubDeleted     = "customer.subscription.deleted"
	eventInvoicePaid    = "invoice.paid"
	eventInvoiceFailed  = "invoice.payment_failed"
)

const (
	// staleAge is how old a stale signature's timestamp is: one second
	// beyond webhook.DefaultTolerance.
	staleAge = webhook.DefaultTolerance + time.Second
	// wrongSecret signs deliveries when Control.BadSignature is set.
	wrongSecret = "whsec_fakestripe_wrong_secret"
	// maxResponseRead bounds how much of a webhook response is read.
	maxResponseRead = 64 << 10
)

// event is a stored event: its JSON is fixed at creation, like Stripe's.
type event struct {
	id        string
	typ       string
	sessionID string // the session the event's object belongs to
	body      []byte
	attempts  int // guarded by Server.mu
}

// eventJSON is an Event as Stripe sends it.
type eventJSON struct {
	ID              string       `json:"id"`
	Object          string       `json:"object"`
	APIVersion      string       `json:"api_version"`
	Created         int64        `json:"created"`
	Data            eventData    `json:"data"`
	Livemode        bool         `json:"livemode"`
	PendingWebhooks int          `json:"pending_webhooks"`
	Request         eventRequest `json:"request"`
	Type            string       `json:"type"`
}

type eventData struct {
	Object json.RawMessage `json:"object"`
	// PreviousAttributes holds the changed attributes' earlier values, in
	// the events that report a change (charge.refunded, *.updated).
	PreviousAttributes map[string]any `json:"previous_attributes,omitempty"`
}

// eventRequest names the API request that caused an event. Both are null
// for an event Stripe made by itself (a payment, a dispute).
type eventRequest struct {
	ID             *string `json:"id"`
	IdempotencyKey *string `json:"idempotency_key"`
}

// eventSpec is what an event says.
type eventSpec struct {
	typ       string
	sessionID string // the session the object belongs to, for Delivery records
	livemode  bool
	object    any
	previous  map[string]any // data.previous_attributes; nil for none
	request   eventRequest   // zero for an automatic event
}

// newSessionEvent stores an event of type typ carrying the session as it
// is now. The caller holds s.mu.
func (s *Server) newSessionEvent(typ string, rec *sessionRecord) (*event, error) {
	return s.newEvent(eventSpec{typ: typ, sessionID: rec.s.ID, livemode: rec.s.Livemode, object: rec.s})
}

// newEvent stores an event as sp says, its object rendered now. The caller
// holds s.mu.
func (s *Server) newEvent(sp eventSpec) (*event, error) {
	id, err := s.newID("evt_", objectIDLen)
	if err != nil {
		return nil, fmt.Errorf("create %s event: %w", sp.typ, err)
	}
	obj, err := json.Marshal(sp.object)
	if err != nil {
		return nil, fmt.Errorf("create %s event: marshal %T: %w", sp.typ, sp.object, err)
	}
	body, err := json.Marshal(eventJSON{
		ID:              id,
		Object:          "event",
		APIVersion:      stripe.APIVersion,
		Created:         s.now().Unix(),
		Data:            eventData{Object: obj, PreviousAttributes: sp.previous},
		Livemode:        sp.livemode,
		PendingWebhooks: 1,
		Request:         sp.request,
		Type:            sp.typ,
	})
	if err != nil {
		return nil, fmt.Errorf("create %s event: marshal: %w", sp.typ, err)
	}
	ev := &event{id: id, typ: sp.typ, sessionID: sp.sessionID, body: body}
	s.events = append(s.events, ev)
	s.eventByID[id] = ev
	return ev, nil
}

// Delivery is one attempt to POST an event to the webhook URL.
type Delivery struct {
	EventID   string    `json:"event_id"`
	Type      string    `json:"type"`
	SessionID string    `json:"session_id"`
	Attempt   int       `json:"attempt"`          // 1 for an event's first delivery, then 2, 3, ...
	Status    int       `json:"status,omitempty"` // the HTTP status received; 0 when the request failed
	Error     string    `json:"error,omitempty"`  // why the request failed
	Time      time.Time `json:"time"`
}

// Deliveries returns the webhook deliveries attempted so far, in the order
// they finished.
func (s *Server) Deliveries() []Delivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Delivery(nil), s.deliveries...)
}

// deliver sends ev as c says: not at all, once, or c.Duplicate times in
// sequence or concurrently. It returns when every attempt has finished.
func (s *Server) deliver(ctx context.Context, c Control, ev *event) {
	if s.opts.WebhookURL == "" || c.SkipDelivery {
		return
	}
	n := max(c.Duplicate, 1)
	if !c.Concurrent {
		for range n {
			s.deliverOnce(ctx, c, ev)
		}
		return
	}
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() { s.deliverOnce(ctx, c, ev) })
	}
	wg.Wait()
}

// deliverOnce signs ev afresh, POSTs it and records the outcome.
func (s *Server) deliverOnce(ctx context.Context, c Control, ev *event) Delivery {
	s.mu.Lock()
	ev.attempts++
	d := Delivery{EventID: ev.id, Type: ev.typ, SessionID: ev.sessionID, Attempt: ev.attempts}
	s.mu.Unlock()

	status, err := s.post(ctx, c, ev.body)
	d.Status, d.Time = status, s.now()
	if err != nil {
		d.Error = fmt.Errorf("deliver %s (%s) attempt %d: %w", ev.id, ev.typ, d.Attempt, err).Error()
		s.log.Warn("fakestripe: webhook delivery failed", "event", ev.id, "type", ev.typ, "attempt", d.Attempt, "err", d.Error)
	} else {
		s.log.Info("fakestripe: webhook delivered", "event", ev.id, "type", ev.typ, "attempt", d.Attempt, "status", status)
	}

	s.mu.Lock()
	s.deliveries = append(s.deliveries, d)
	s.mu.Unlock()
	return d
}

// post sends one signed delivery and returns the status received.
func (s *Server) post(ctx context.Context, c Control, body []byte) (int, error) {
	secret, ts := s.opts.WebhookSecret, s.wall()
	if c.BadSignature {
		secret = wrongSecret
	}
	if c.StaleSignature {
		ts = ts.Add(-staleAge)
	}
	if c.APIVersion != "" {
		var err error
		if body, err = inVersion(body, c.APIVersion); err != nil {
			return 0, err
		}
	}
	signed := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: secret, Timestamp: ts})

	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.opts.WebhookURL, bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set("User-Agent", "Stripe/1.0 (+https://stripe.com/docs/webhooks)")
	req.Header.Set("Stripe-Signature", signed.Header)
	req.Header.Set("Cache-Control", "no-cache")

	resp, err := s.client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("post to %s: %w", s.opts.WebhookURL, err)
	}
	defer resp.Body.Close()
	// The body only matters to keep the connection reusable.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponseRead))
	return resp.StatusCode, nil
}

// inVersion is the event body with its api_version set to v.
func inVersion(body []byte, v string) ([]byte, error) {
	var ev eventJSON
	if err := json.Unmarshal(body, &ev); err != nil {
		return nil, fmt.Errorf("render in api version %s: %w", v, err)
	}
	ev.APIVersion = v
	out, err := json.Marshal(ev)
	if err != nil {
		return nil, fmt.Errorf("render in api version %s: %w", v, err)
	}
	return out, nil
}

// handleRedeliver serves POST /_events/{id}/deliver: Stripe's "resend",
// freshly and correctly signed, answered with the Delivery.
func (s *Server) handleRedeliver(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	s.mu.Lock()
	ev, ok := s.eventByID[id]
	s.mu.Unlock()
	if !ok {
		writeAPIError(w, noSuch(http.StatusNotFound, "event", id, "id"))
		return
	}
	if s.opts.WebhookURL == "" {
		writeAPIError(w, newAPIError(http.StatusConflict, "", "", "No webhook URL is configured, so there is nowhere to resend %s.", id))
		return
	}
	d := s.deliverOnce(context.WithoutCancel(r.Context()), Control{}, ev)
	s.writeJSON(w, http.StatusOK, d)
}
