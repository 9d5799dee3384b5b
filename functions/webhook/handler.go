package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/stripe/stripe-go/v76"
	"github.com/stripe/stripe-go/v76/webhook"
	"go.opentelemetry.io/otel/trace"

	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/fulfil"
	"42sisters.ai/oracle/shared/httpapi"
	"42sisters.ai/oracle/shared/obs"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/secret"
	"42sisters.ai/oracle/shared/stripex"
	"42sisters.ai/oracle/shared/tracing"
)

// Tolerance is how old a signature may be (Stripe's recommended 300 s).
const Tolerance = 300 * time.Second

// MaxBody bounds the event size; a Checkout Session with every metadata key
// full is about 30 KB.
const MaxBody = 256 << 10

// eventTTL is how long a processed event id is remembered: longer than
// Stripe's three days of retries.
const eventTTL = 30 * 24 * time.Hour

// reserve is kept back from the Lambda deadline so that a slow dependency
// still leaves time to answer (a 500 that Stripe retries) rather than have
// Lambda time out mid-write.
const reserve = time.Second

// versionAlertEvery is how often the events of one wrong API version are
// alerted again while they keep coming: a flood of them is one alert, and
// Stripe's three days of retries bring at most three more.
const versionAlertEvery = 24 * time.Hour

// errUnreadable marks a correctly signed event the service cannot read: it
// came from Stripe, so it may be a paid order. It is answered 500 (Stripe
// retries for three days) and alerted, never dropped with a 400.
var errUnreadable = errors.New("signed event cannot be read")

// Secrets are the webhook signing secrets. Live-mode events are accepted only
// under Live, test-mode events only under Test.
type Secrets struct {
	Live string
	Test string
}

// Signing is where the signing secrets were read from at cold start, to be
// read again when a signature matches neither (see Handler.Signing).
type Signing struct {
	Live, Test *secret.Value
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
	Emit(figs ...obs.Figure)
}

// Handler serves POST /api/webhook.
type Handler struct {
	Secrets Secrets
	// Signing, when set, is where Secrets were read from: a signature that
	// matches neither secret (one rolled in Stripe's Dashboard), or no
	// secret at all, reads them again (at most once a minute per container,
	// see package secret) and the event is checked once more with the new
	// ones.
	Signing *Signing
	// mu guards Secrets, which a read again replaces.
	mu      sync.Mutex
	Ledger  Ledger
	Fulfil  Fulfiller
	Money   *Money
	Chat    *Chat
	Alerts  Alerter
	Metrics Counter
	Log     *slog.Logger
	Now     func() time.Time
	// OrderRetention is how long an order is kept from its claim
	// (ORDER_RETENTION_DAYS): a verdict's session event younger than it
	// is remembered by its order (claimRemembers). Zero: every event is
	// read in the Ledger first.
	OrderRetention time.Duration
}

var received = httpapi.MustEncode(map[string]bool{"received": true})

// Handle verifies the event's signature over the raw body and its API
// version, then hands the Checkout Session events to the claim, the money
// events (refunds, disputes, fraud warnings) to Money, and Sisters Chat's
// subscription events (and its subscription-mode sessions) to Chat. Nothing is
// written for a request that fails verification, nor for an event in
// another API version than the one read (see wrongVersion).
func (h *Handler) Handle(ctx context.Context, req httpapi.Request) (httpapi.Response, error) {
	arrived := h.Now()
	if cur := h.secrets(); cur.Live == "" && cur.Test == "" && !h.readSecretsAgain(ctx) {
		h.Alerts.Raise(ctx, alert.Alert{Severity: alert.Critical, Kind: alert.WebhookSecretMissing, Detail: "no Stripe webhook signing secret is configured; events are refused with 503 and Stripe will retry"})
		return httpapi.Error(ctx, h.Log, oracle.Errorf(oracle.CodeUnavailable, "webhook is not configured")), nil
	}
	if d, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d.Add(-reserve))
		defer cancel()
	}
	body, err := httpapi.Body(req, MaxBody)
	if err != nil {
		return httpapi.Error(ctx, h.Log, err), nil
	}
	header := httpapi.Header(req, "Stripe-Signature")
	event, err := h.verify(body, header)
	if err != nil && header != "" && !errors.Is(err, errUnreadable) && h.readSecretsAgain(ctx) {
		event, err = h.verify(body, header)
	}
	if err != nil {
		if errors.Is(err, errUnreadable) {
			return h.unreadable(ctx, h.Log, event.ID, err), nil
		}
		h.Metrics.Count(obs.WebhookRejected, 1)
		return httpapi.Error(ctx, h.Log, err), nil
	}
	// Every line written for the event names it, through the context (a
	// logger's With would format and copy a handler per event).
	ctx = obs.WithAttrs(ctx, slog.String("event_id", event.ID), slog.String("event_type", string(event.Type)), slog.Bool("livemode", event.Livemode))
	log := h.Log

	switch t := audit.Event(event.Type); {
	case t == audit.EventCheckoutCompleted, t == audit.EventAsyncSucceeded, t == audit.EventAsyncFailed, moneyEvents[t], chatEvents[event.Type]:
	default:
		log.InfoContext(ctx, "event type ignored")
		return httpapi.JSON(http.StatusOK, received), nil
	}
	// Every event taken is read in the one version its decoding knows;
	// another version's object could decode without error and still be
	// read wrong (a field moved decodes as zero). stripe-go's
	// ConstructEvent checks this too, but the handler reads its own
	// envelope (stripex.DecodeEnvelope).
	if version, ok := stripex.EventVersion(event.APIVersion); !ok {
		return h.wrongVersion(ctx, log, event.Livemode, version), nil
	}
	// A session's event has its object read now, before the Ledger is
	// asked, though a duplicate never uses it: the decoding's code is warm
	// from the envelope's here, and several times slower after a network
	// wait (docs/performance.md). What it found is acted on only after.
	money, chat := moneyEvents[audit.Event(event.Type)], chatEvents[event.Type]
	var (
		session    oracle.Session
		mode       string
		sessionErr error
	)
	if !money && !chat {
		session, mode, sessionErr = stripex.SessionModeFromJSON(event.Data.Raw)
		if sessionErr == nil && session.Livemode != event.Livemode {
			sessionErr = errors.New("event and session disagree on livemode")
		}
	}
	key := "event#" + event.ID
	remembers := h.claimRemembers(event, session, mode, money || chat || sessionErr != nil, arrived)
	if !remembers {
		seen, err := h.Ledger.Seen(ctx, key)
		if err != nil {
			return httpapi.Error(ctx, log, err), nil
		}
		if seen {
			h.Metrics.Count(obs.WebhookDuplicates, 1)
			log.InfoContext(ctx, "duplicate event ignored")
			return httpapi.JSON(http.StatusOK, received), nil
		}
	}
	switch {
	case money:
		return h.handOff(ctx, log, key, h.Money.handle, event, arrived, ""), nil
	case chat:
		return h.handOff(ctx, log, key, h.Chat.handle, event, arrived, ""), nil
	case sessionErr != nil:
		return h.unreadable(ctx, log, event.ID, fmt.Errorf("%w: %w", errUnreadable, sessionErr)), nil
	}
	// A Checkout Session in mode subscription is Sisters Chat's: its
	// completion links the subscription to its account, and its delayed
	// payment's outcome is the subscription's own events'. Every other
	// session is a verdict's, as it was before the chat.
	if mode == string(stripe.CheckoutSessionModeSubscription) {
		if event.Type == stripe.EventTypeCheckoutSessionCompleted {
			// A subscription bought: a trial's conversion.
			return h.handOff(ctx, log, key, h.Chat.handle, event, arrived, obs.ChatTrialConversions), nil
		}
		h.processed(ctx, log, key, "", slog.Bool("subscription_session", true))
		return httpapi.JSON(http.StatusOK, received), nil
	}
	// The order's trace began at the checkout, which handed its context to
	// Stripe with the session: the claim goes on in that trace, linked to
	// this invocation's (Stripe's request, its own trace).
	ctx, span := tracing.Continue(ctx, string(event.Type), tracing.FromParent(session.TraceParent, ""), trace.SpanKindInternal)
	defer span.End()
	ctx = tracing.WithOrder(ctx, session.ID)
	res, err := h.Fulfil.Fulfil(ctx, session, fulfil.Trigger{
		Source:     oracle.SourceWebhook,
		Event:      audit.Event(event.Type),
		EventID:    event.ID,
		ReceivedAt: arrived,
	})
	if err != nil {
		// Stripe retries any non-2xx answer; the retry finishes the work.
		return httpapi.Error(ctx, log, err), nil
	}
	attrs := []slog.Attr{slog.String("outcome", res.Outcome.String()), slog.String("status", string(res.Status))}
	if !remembers {
		h.processed(ctx, log, key, "", attrs...)
		return httpapi.JSON(http.StatusOK, received), nil
	}
	// The claim is what a redelivery reads: one that changed nothing is the
	// event done again. The mark is written only for a delivery to come
	// that the claim will not answer.
	if !h.markUnread(event, arrived) {
		h.mark(ctx, log, key)
	}
	h.done(ctx, log, "", res.Outcome != oracle.Done, attrs...)
	return httpapi.JSON(http.StatusOK, received), nil
}

// handOff has an event that is no verdict's claim (the money events, the
// chat's) handled, and answers for it: 200 and the event remembered once
// handled (counting also, when set), 500 alerted when it cannot be read,
// the error's status else.
func (h *Handler) handOff(ctx context.Context, log *slog.Logger, key string,
	handle func(context.Context, *slog.Logger, stripe.Event, time.Time) error, event stripe.Event, arrived time.Time, also string) httpapi.Response {
	if err := handle(ctx, log, event, arrived); err != nil {
		if errors.Is(err, errUnreadable) {
			return h.unreadable(ctx, log, event.ID, err)
		}
		return httpapi.Error(ctx, log, err)
	}
	h.processed(ctx, log, key, also)
	return httpapi.JSON(http.StatusOK, received)
}

// claimRemembers reports whether the claim alone answers a redelivery of
// event: a verdict's session event (not other, nor an unreadable one)
// whose first delivery made or found an order that is still kept. An order
// is kept OrderRetention from its claim, made after the event was created,
// so an event younger than that (less a day for a claim that came before
// the event, the landing path's) finds it, and the claim (ALL_OLD) says
// what became of it: the Ledger's read is not needed. Older events, whose
// order may have expired, and the smoke test's, whose order it deletes,
// are read in the Ledger first.
func (h *Handler) claimRemembers(event stripe.Event, s oracle.Session, mode string, other bool, arrived time.Time) bool {
	if other || mode == string(stripe.CheckoutSessionModeSubscription) || s.Smoke || event.Created <= 0 {
		return false
	}
	return arrived.Sub(time.Unix(event.Created, 0)) < h.OrderRetention-claimMargin
}

// claimMargin is how much earlier than its event an order may have been
// claimed: by the landing path, when the customer reached the result page
// first.
const claimMargin = 24 * time.Hour

// markUnread reports whether the Ledger's mark of a verdict's session event
// that claimRemembers, made on its arrival now, could never be read, so
// that it need not be written. The mark is read only by a delivery the
// claim does not answer (one at least OrderRetention less claimMargin
// after the event's creation) and lives eventTTL from its writing: it is
// never read when that age comes no sooner than the mark's end, that is
// when the event is at most OrderRetention - claimMargin - eventTTL old
// now. With the default retention (90 days) every delivery within Stripe's
// retries and the Dashboard's 30 days is one; with 31 days or less none is.
// A verdict's order is deleted only by its TTL (the smoke test's, which it
// deletes, are not claimRemembers'), so the claim finds it on every such
// delivery.
func (h *Handler) markUnread(event stripe.Event, arrived time.Time) bool {
	return arrived.Sub(time.Unix(event.Created, 0)) <= h.OrderRetention-claimMargin-eventTTL
}

// processed remembers the event under key, so that a redelivery is
// answered without repeating the work (a verdict's session event that
// claimRemembers is the claim's, see Handle). It counts the event (or
// the duplicate), and also when set, on the event's one metric line, and
// writes the event's one line (with attrs: what became of it), the only
// one of an event handled well. The line and the metric are the event's
// last words, written after the answer where the traces extension runs
// (tracing.Later): Stripe does not wait for them.
func (h *Handler) processed(ctx context.Context, log *slog.Logger, key, also string, attrs ...slog.Attr) {
	h.done(ctx, log, also, h.mark(ctx, log, key), attrs...)
}

// mark remembers the event under key for eventTTL; first is false when it
// was remembered already.
func (h *Handler) mark(ctx context.Context, log *slog.Logger, key string) (first bool) {
	first, err := h.Ledger.Mark(ctx, key, eventTTL)
	if err != nil {
		// The work is idempotent, so a redelivery after this only repeats
		// harmless work.
		log.WarnContext(ctx, "recording the processed event failed", "error", err.Error())
		return true
	}
	return first
}

// done counts the event (first: not a duplicate) and writes its one line,
// after the answer (see processed).
func (h *Handler) done(ctx context.Context, log *slog.Logger, also string, first bool, attrs ...slog.Attr) {
	tracing.Later(ctx, func() {
		if !first {
			h.Metrics.Count(obs.WebhookDuplicates, 1)
			log.LogAttrs(ctx, slog.LevelInfo, "duplicate event done again", attrs...)
			return
		}
		if also == "" {
			h.Metrics.Count(obs.WebhookProcessed, 1)
		} else {
			h.Metrics.Emit(obs.Figure{Name: obs.WebhookProcessed, Value: 1, Unit: obs.UnitCount}, obs.Figure{Name: also, Value: 1, Unit: obs.UnitCount})
		}
		log.LogAttrs(ctx, slog.LevelInfo, "event processed", attrs...)
	})
}

// wrongVersion refuses a signed event rendered in another API version
// than stripex.APIVersion, before anything is read or recorded of it, and
// alerts once per version and mode every versionAlertEvery. The answer is
// 409, not 5xx: the event is Stripe's and correct, the endpoint's setting
// is what conflicts, and a 5xx would also count against the API's error
// alarm, one per event. Stripe retries any non-2xx for three days.
func (h *Handler) wrongVersion(ctx context.Context, log *slog.Logger, livemode bool, version string) httpapi.Response {
	// Live events are customers' money; the test endpoint's are not.
	mode, severity := "test", alert.Error
	if livemode {
		mode, severity = "live", alert.Critical
	}
	log = log.With("api_version", version)
	first, err := h.Ledger.Mark(ctx, "apiversion#"+mode+"#"+version, versionAlertEvery)
	if err != nil {
		// Better a second alert than none.
		log.WarnContext(ctx, "recording the API version alert failed", "error", err.Error())
	}
	if err != nil || first {
		h.Alerts.Raise(ctx, alert.Alert{Severity: severity, Kind: alert.WebhookAPIVersion, Subject: mode + " " + version,
			Detail: "the " + mode + "-mode Stripe webhook endpoint sends events in API version " + version + "; this service reads only " +
				stripex.APIVersion + ", so each is refused with 409 and Stripe retries it. Recreate the endpoint with api_version " +
				stripex.APIVersion + " (docs/deploying.md). Repeated once a day while they come"})
	}
	return httpapi.Error(ctx, log, oracle.Errorf(oracle.CodeConflict,
		"event api_version %s is not %s, the version this endpoint must be given", version, stripex.APIVersion))
}

// unreadable answers a signed event that cannot be read: 500, so that
// Stripe keeps retrying while the operator, alerted, looks at it.
func (h *Handler) unreadable(ctx context.Context, log *slog.Logger, eventID string, err error) httpapi.Response {
	detail := "a correctly signed Stripe event could not be read; Stripe will retry it"
	if eventID != "" {
		detail += " (event " + eventID + ")"
	}
	h.Alerts.Raise(ctx, alert.Alert{Severity: alert.Error, Kind: alert.WebhookUnreadable, Session: eventID, Detail: detail})
	return httpapi.Error(ctx, log, oracle.Wrap(oracle.CodeInternal, err, "internal error"))
}

// verify checks the signature with the secret of each mode and returns the
// event when one matches and the event's livemode agrees with that secret.
// A bad signature is a CodeInvalid error; a correctly signed body that is
// not an event is errUnreadable (with the event's id when it has one).
func (h *Handler) verify(body []byte, header string) (stripe.Event, error) {
	if header == "" {
		return stripe.Event{}, oracle.Errorf(oracle.CodeInvalid, "missing Stripe-Signature header")
	}
	live, err := h.signedWith(body, header)
	if err != nil {
		return stripe.Event{}, err
	}
	env, err := stripex.DecodeEnvelope(body)
	if err != nil {
		return stripe.Event{}, fmt.Errorf("%w: %w", errUnreadable, err)
	}
	event := stripe.Event{ID: env.ID, Type: env.Type, Livemode: env.Livemode, Request: env.Request, APIVersion: env.APIVersion, Created: env.Created}
	if env.Data != nil {
		event.Data = &stripe.EventData{Raw: env.Data.Object}
	}
	if event.ID == "" || event.Data == nil {
		// The id, if any, still names the event in the alert.
		return stripe.Event{ID: event.ID}, fmt.Errorf("%w: event has no id or no data", errUnreadable)
	}
	if event.Livemode != live {
		return stripe.Event{}, oracle.Errorf(oracle.CodeInvalid, "event mode does not match its signing secret")
	}
	return event, nil
}

// secrets returns the signing secrets as last read.
func (h *Handler) secrets() Secrets {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.Secrets
}

// readSecretsAgain reads the signing secrets again after an event matched
// neither, and reports whether either changed.
func (h *Handler) readSecretsAgain(ctx context.Context) bool {
	if h.Signing == nil {
		return false
	}
	cur := h.secrets()
	live, liveChanged := h.Signing.Live.Renew(ctx, cur.Live)
	test, testChanged := h.Signing.Test.Renew(ctx, cur.Test)
	if !liveChanged && !testChanged {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.Secrets = Secrets{Live: live, Test: test}
	return true
}

// signedWith reports which secret signed body (true: the live one), with
// stripe-go's check: constant-time comparison, every v1 signature in the
// header (secret rotation), and the 300 s tolerance.
func (h *Handler) signedWith(body []byte, header string) (live bool, err error) {
	var lastErr error
	for _, c := range []struct {
		secret string
		live   bool
	}{{h.secrets().Live, true}, {h.secrets().Test, false}} {
		if c.secret == "" {
			continue
		}
		if lastErr = webhook.ValidatePayloadWithTolerance(body, header, c.secret, Tolerance); lastErr == nil {
			return c.live, nil
		}
	}
	if errors.Is(lastErr, webhook.ErrTooOld) {
		return false, oracle.Wrap(oracle.CodeInvalid, lastErr, "signature timestamp is outside the tolerance")
	}
	return false, oracle.Wrap(oracle.CodeInvalid, lastErr, "invalid signature")
}
