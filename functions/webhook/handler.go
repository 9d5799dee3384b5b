package main

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/stripe/stripe-go/v76"
	"github.com/stripe/stripe-go/v76/webhook"

	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/fulfil"
	"42sisters.ai/oracle/shared/httpapi"
	"42sisters.ai/oracle/shared/obs"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/stripex"
)

// Tolerance is how old a signature may be (Stripe's recommended 300 s).
const Tolerance = 300 * time.Second

// MaxBody bounds the event size; a Checkout Session with every metadata key
// full is about 30 KB.
const MaxBody = 256 << 10

// eventTTL is how long a processed event id is remembered: longer than
// Stripe's three days of retries.
const eventTTL = 30 * 24 * time.Hour

// Secrets are the webhook signing secrets. Live-mode events are accepted only
// under Live, test-mode events only under Test.
type Secrets struct {
	Live string
	Test string
}

// Ledger remembers processed event ids.
type Ledger interface {
	Seen(ctx context.Context, key string) (bool, error)
	Mark(ctx context.Context, key string, ttl time.Duration) (bool, error)
}

// Fulfiller claims orders (shared/fulfil).
type Fulfiller interface {
	Fulfil(ctx context.Context, s oracle.Session, t fulfil.Trigger) (fulfil.Result, error)
}

// Alerter raises operator alerts.
type Alerter interface {
	Raise(ctx context.Context, a alert.Alert)
}

// Counter emits a metric (obs.Metrics).
type Counter interface {
	Count(name string, n float64)
}

// Handler serves POST /api/webhook.
type Handler struct {
	Secrets Secrets
	Ledger  Ledger
	Fulfil  Fulfiller
	Alerts  Alerter
	Metrics Counter
	Log     *slog.Logger
	Now     func() time.Time
}

var received = map[string]bool{"received": true}

// Handle verifies the event's signature over the raw body, then hands the
// Checkout Session events to the claim. Nothing is written for a request
// that fails verification.
func (h *Handler) Handle(ctx context.Context, req httpapi.Request) (httpapi.Response, error) {
	arrived := h.Now()
	if h.Secrets.Live == "" && h.Secrets.Test == "" {
		h.Alerts.Raise(ctx, alert.Alert{Severity: alert.Critical, Kind: "WEBHOOK_SECRET_MISSING", Detail: "no Stripe webhook signing secret is configured; events are refused with 503 and Stripe will retry"})
		return httpapi.Error(ctx, h.Log, oracle.Errorf(oracle.CodeUnavailable, "webhook is not configured")), nil
	}
	body, err := httpapi.Body(req, MaxBody)
	if err != nil {
		return httpapi.Error(ctx, h.Log, err), nil
	}
	event, err := h.verify(body, httpapi.Header(req, "Stripe-Signature"))
	if err != nil {
		h.Metrics.Count("WebhookRejected", 1)
		return httpapi.Error(ctx, h.Log, err), nil
	}
	log := h.Log.With("event_id", event.ID, "event_type", string(event.Type), "livemode", event.Livemode)
	if !event.Livemode {
		log = log.With("test_mode", true)
	}

	switch string(event.Type) {
	case fulfil.EventCompleted, fulfil.EventAsyncSucceeded, fulfil.EventAsyncFailed:
	default:
		log.Info("event type ignored")
		return httpapi.JSON(http.StatusOK, received), nil
	}
	key := "event#" + event.ID
	seen, err := h.Ledger.Seen(ctx, key)
	if err != nil {
		return httpapi.Error(ctx, log, err), nil
	}
	if seen {
		h.Metrics.Count("WebhookDuplicates", 1)
		log.Info("duplicate event ignored")
		return httpapi.JSON(http.StatusOK, received), nil
	}
	session, err := stripex.SessionFromJSON(event.Data.Raw)
	if err != nil {
		return httpapi.Error(ctx, log, oracle.Wrap(oracle.CodeInvalid, err, "event does not carry a checkout session")), nil
	}
	if session.Livemode != event.Livemode {
		return httpapi.Error(ctx, log, oracle.Errorf(oracle.CodeInvalid, "event and session disagree on livemode")), nil
	}
	log = log.With(obs.Session(session.ID))
	res, err := h.Fulfil.Fulfil(ctx, session, fulfil.Trigger{
		Source:     oracle.SourceWebhook,
		Event:      string(event.Type),
		RecordID:   event.ID,
		EventTime:  time.Unix(event.Created, 0),
		ReceivedAt: arrived,
	})
	if err != nil {
		// Stripe retries any non-2xx answer; the retry finishes the work.
		return httpapi.Error(ctx, log, err), nil
	}
	if _, err := h.Ledger.Mark(ctx, key, eventTTL); err != nil {
		// The claim is idempotent, so a redelivery after this only repeats
		// harmless work.
		log.Warn("recording the processed event failed", "error", err.Error())
	}
	h.Metrics.Count("WebhookProcessed", 1)
	log.Info("event processed", "outcome", res.Outcome.String(), "status", string(res.Status))
	return httpapi.JSON(http.StatusOK, received), nil
}

// verify checks the signature with the secret of each mode and returns the
// event when one matches and the event's livemode agrees with that secret.
func (h *Handler) verify(body []byte, header string) (stripe.Event, error) {
	if header == "" {
		return stripe.Event{}, oracle.Errorf(oracle.CodeInvalid, "missing Stripe-Signature header")
	}
	opts := webhook.ConstructEventOptions{Tolerance: Tolerance, IgnoreAPIVersionMismatch: true}
	var lastErr error
	for _, c := range []struct {
		secret string
		live   bool
	}{{h.Secrets.Live, true}, {h.Secrets.Test, false}} {
		if c.secret == "" {
			continue
		}
		event, err := webhook.ConstructEventWithOptions(body, header, c.secret, opts)
		if err != nil {
			lastErr = err
			continue
		}
		if event.Livemode != c.live {
			return stripe.Event{}, oracle.Errorf(oracle.CodeInvalid, "event mode does not match its signing secret")
		}
		if event.ID == "" {
			return stripe.Event{}, oracle.Errorf(oracle.CodeInvalid, "event has no id")
		}
		return event, nil
	}
	switch {
	case errors.Is(lastErr, webhook.ErrTooOld):
		return stripe.Event{}, oracle.Wrap(oracle.CodeInvalid, lastErr, "signature timestamp is outside the tolerance")
	case errors.Is(lastErr, webhook.ErrNoValidSignature), errors.Is(lastErr, webhook.ErrInvalidHeader), errors.Is(lastErr, webhook.ErrNotSigned):
		return stripe.Event{}, oracle.Wrap(oracle.CodeInvalid, lastErr, "invalid signature")
	}
	return stripe.Event{}, oracle.Wrap(oracle.CodeInvalid, lastErr, "malformed event")
}
