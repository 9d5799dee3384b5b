package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/fulfil"
	"42sisters.ai/oracle/shared/httpapi"
	"42sisters.ai/oracle/shared/obs"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/queue"
	"42sisters.ai/oracle/shared/repair"
	"42sisters.ai/oracle/shared/tracing"
)

// Orders is the order store (shared/store).
type Orders interface {
	Get(ctx context.Context, sessionID string) (oracle.Order, bool, error)
}

// Sessions retrieves Checkout Sessions from Stripe.
type Sessions interface {
	RetrieveSession(ctx context.Context, id string) (oracle.Session, error)
}

// Fulfiller is the idempotent claim the webhook also makes (shared/fulfil).
type Fulfiller interface {
	Fulfil(ctx context.Context, s oracle.Session, t fulfil.Trigger) (fulfil.Result, error)
}

// Limiter is a "first caller in this window" guard (store.Ledger).
type Limiter interface {
	Mark(ctx context.Context, key string, ttl time.Duration) (bool, error)
	Release(ctx context.Context, key string) error
}

// Originals are the first verdicts kept past their orders (store.Ledger).
type Originals interface {
	Original(ctx context.Context, sessionID string) (oracle.Original, bool, error)
}

// Sender sends a job to the generate queue.
type Sender interface {
	Send(ctx context.Context, j queue.Job) error
}

// Auditor appends audit records, alerting when one cannot be written
// (audit.Recorder).
type Auditor interface {
	Record(ctx context.Context, r audit.Record, id string)
}

// Counter emits a metric (obs.Metrics).
type Counter interface {
	Count(name string, n float64)
}

// Alerter raises operator alerts.
type Alerter interface {
	Raise(ctx context.Context, a alert.Alert)
}

// Verdicts checks a stored verdict before it is served, setting a corrupt
// one aside (repair.Guard).
type Verdicts interface {
	Check(ctx context.Context, o oracle.Order) (repair.Outcome, error)
}

// Handler serves GET /api/verdict, and GET /api/health through Health. It
// never calls the model: a verdict that is not there yet is generated
// behind the queue and the page polls.
type Handler struct {
	Orders Orders
	// Live and Test read sessions of each mode; a session id says its mode.
	Live, Test Sessions
	Fulfil     Fulfiller
	Regen      Limiter
	Originals  Originals
	Generate   Sender
	Audit      Auditor
	Alerts     Alerter
	// Verdicts is asked before every stored verdict is served.
	Verdicts Verdicts
	// Metrics count stored verdicts served (CacheHits) against
	// regenerations (Regenerations), REGEN-GAP-05.
	Metrics   Counter
	Hasher    *audit.Hasher
	Log       *slog.Logger
	Now       func() time.Time
	Support   string        // the address the refund text names
	Retention time.Duration // stated to the customer with the verdict
	// Health answers GET /api/health (health.go).
	Health *HealthEndpoint
}

// RegenWindow is the least time between two regenerations of one session.
const RegenWindow = 5 * time.Minute

// answer is the JSON the result page reads.
type answer struct {
	Status        string          `json:"status"` // ready, pending, dropped, under_review, refunded
	Tier          oracle.Tier     `json:"tier,omitempty"`
	TierName      string          `json:"tier_name,omitempty"`
	Query         string          `json:"query,omitempty"`
	Verdict       json.RawMessage `json:"verdict,omitempty"`
	CachedAt      *time.Time      `json:"cached_at,omitempty"`
	RetentionDays int             `json:"retention_days,omitempty"`
	Message       string          `json:"message,omitempty"`
	// Regen marks a verdict generated again after the first one expired
	// (SPEC_ORACLE_REGEN_CONSISTENCY); the emailed one stays authoritative.
	Regen       bool   `json:"regen,omitempty"`
	RegenReason string `json:"regen_reason,omitempty"`
	// RegeneratedAt is when the verdict was generated again: the page
	// says so for every regenerated verdict (invariant 4).
	RegeneratedAt *time.Time `json:"regenerated_at,omitempty"`
	// Divergence is how far a regenerated verdict moved from the emailed
	// one: none, minor, significant, or unknown when the original is lost.
	Divergence string `json:"divergence,omitempty"`
	// OriginalVerdict is the label of the verdict delivered before,
	// sent whenever the regenerated one has another colour (the page
	// says what was delivered before) and with the disclaimer the page
	// shows when the divergence owes the customer a notice (significant
	// or unknown).
	OriginalVerdict  oracle.Verdict `json:"original_verdict,omitempty"`
	DivergenceNotice bool           `json:"divergence_notice,omitempty"`
	// Email is emailUndelivered when the verdict's email is known not to
	// have reached the customer, which the page then says; absent
	// otherwise. It is one plain state: why it failed (a bounce, a
	// suppressed address, a send that never went out) is not the page's.
	Email string `json:"email,omitempty"`
}

// emailUndelivered is the answer's email field when the verdict's email is
// known not to have reached the customer (oracle.MailState.Undelivered).
const emailUndelivered = "undelivered"

// The answers that carry only a state and its text.
var (
	pending = answer{Status: "pending", Message: "Your verdict is being prepared."}
	// preparingAgain answers while an order whose stored verdict was set
	// aside as corrupt is generated again: never a bare error.
	preparingAgain = answer{Status: "preparing_again", Message: "Your verdict is being prepared again. This page updates by itself when it is ready."}
	underReview    = answer{Status: "under_review", Message: "Your verdict is under review. We will email you when it is ready."}
	// agentUnderReview and agentFailed are underReview and the failure's
	// answer for an agent, which reads them here instead of an email.
	agentUnderReview = answer{Status: "under_review", Message: "Your verdict is under review. This address gives it once it is ready, or says the payment was refunded."}
	agentFailed      = answer{Status: "failed", Message: "Analysis failed. The payment will be refunded to the wallet that paid it."}
	// paymentUnconfirmed answers an agent whose settlement's outcome was
	// lost on the way, while the operator confirms it on the chain.
	paymentUnconfirmed = answer{Status: "payment_unconfirmed", Message: "Your payment is being confirmed. This address will give your verdict once it is."}
	dropped            = answer{Status: "dropped", Message: "We received your payment but could not process your submission. " +
		"Check your email: reply with your question and tier, or ask for a refund, and we will put it right."}
)

// Handle routes a request: GET /api/health to Health, every other one (the
// function has no other route) to the verdict.
func (h *Handler) Handle(ctx context.Context, req httpapi.Request) (httpapi.Response, error) {
	if isHealthRoute(req) {
		return h.Health.Answer(ctx), nil
	}
	return h.verdict(ctx, req)
}

// verdict answers the result page's poll for one session.
func (h *Handler) verdict(ctx context.Context, req httpapi.Request) (httpapi.Response, error) {
	arrived := h.Now()
	id := req.QueryStringParameters["session_id"]
	if pid, ok := req.PathParameters["id"]; ok {
		// GET /x402/result/{id}: where an agent polls for its order.
		id = pid
	}
	if !oracle.ValidSessionID(id) {
		return httpapi.Error(ctx, h.Log, oracle.Errorf(oracle.CodeInvalid, "session_id is missing or malformed")), nil
	}
	ctx = tracing.WithOrder(ctx, id)
	log := h.Log
	o, found, err := h.Orders.Get(ctx, id)
	if err != nil {
		return httpapi.Error(ctx, log, err), nil
	}
	if oracle.IsAgentOrder(id) && (!found || o.Status == oracle.StatusAwaitingPayment) {
		// No Stripe session stands behind an agent's order: one awaiting
		// payment is a settlement the operator is confirming.
		if !found {
			return httpapi.Error(ctx, log, oracle.Errorf(oracle.CodeNotFound, "unknown order")), nil
		}
		return httpapi.JSON(http.StatusAccepted, paymentUnconfirmed), nil
	}
	if !found || o.Status == oracle.StatusAwaitingPayment {
		return h.landing(ctx, log, id, arrived), nil
	}
	if o.Status == oracle.StatusReady {
		if !o.Expires.IsZero() && !o.Expires.After(arrived) {
			return h.regenerate(ctx, log, o), nil
		}
		// Nothing is served, audited or counted before the verdict is
		// known to be intact.
		switch outcome, err := h.Verdicts.Check(ctx, o); {
		case err != nil:
			log.ErrorContext(ctx, "a corrupt stored verdict could not be set aside; the next load tries again", "error", err.Error())
			return httpapi.JSON(http.StatusAccepted, preparingAgain), nil
		case outcome == repair.Held:
			return httpapi.JSON(http.StatusAccepted, underReview), nil
		case outcome == repair.Regenerating:
			return httpapi.JSON(http.StatusAccepted, preparingAgain), nil
		}
		return h.serve(ctx, o, arrived), nil
	}
	if o.BeingRepaired() {
		return httpapi.JSON(http.StatusAccepted, preparingAgain), nil
	}
	if oracle.IsAgentOrder(id) {
		// An agent has no address: what a customer is told by email, it
		// reads here.
		switch o.Status {
		case oracle.StatusHeld, oracle.StatusQuarantined:
			return httpapi.JSON(http.StatusAccepted, agentUnderReview), nil
		case oracle.StatusFailed:
			return httpapi.JSON(http.StatusInternalServerError, agentFailed), nil
		}
	}
	return h.unserved(ctx, log, o.Status), nil
}

// unserved answers an order with no verdict to serve, by its state: the
// poll and the landing claim alike.
func (h *Handler) unserved(ctx context.Context, log *slog.Logger, status oracle.Status) httpapi.Response {
	switch status {
	case oracle.StatusPaid, oracle.StatusGenerating:
		return httpapi.JSON(http.StatusAccepted, pending)
	case oracle.StatusFailed:
		return httpapi.JSON(http.StatusInternalServerError, map[string]string{
			"status": "failed",
			"error":  "Analysis failed. Please contact " + h.Support + " for a refund.",
		})
	case oracle.StatusDropped:
		return httpapi.JSON(http.StatusOK, dropped)
	case oracle.StatusHeld, oracle.StatusQuarantined:
		return httpapi.JSON(http.StatusAccepted, underReview)
	case oracle.StatusRefunded:
		return httpapi.JSON(http.StatusOK, answer{Status: "refunded", Message: "This order was refunded."})
	case oracle.StatusPaymentFailed:
		return httpapi.Error(ctx, log, oracle.Errorf(oracle.CodePaymentRequired, "the payment for this session did not go through"))
	}
	return httpapi.Error(ctx, log, fmt.Errorf("order in unknown state %q", status))
}

// landing handles a customer who reached the page before the webhook: the
// session is read from Stripe and, when paid, claimed exactly as the
// webhook claims it.
func (h *Handler) landing(ctx context.Context, log *slog.Logger, id string, arrived time.Time) httpapi.Response {
	src := h.Live
	if strings.HasPrefix(id, "cs_test_") {
		src = h.Test
	}
	if src == nil {
		return httpapi.Error(ctx, log, oracle.Errorf(oracle.CodeNotFound, "unknown checkout session"))
	}
	s, err := src.RetrieveSession(ctx, id)
	if err != nil {
		return httpapi.Error(ctx, log, err)
	}
	if !s.Paid() {
		return httpapi.Error(ctx, log, oracle.Errorf(oracle.CodePaymentRequired, "the payment for this session is not complete"))
	}
	// An order deleted at the end of its retention whose first verdict is
	// still kept comes back as a regeneration, compared with that verdict
	// and not emailed again.
	trigger := fulfil.Trigger{Source: oracle.SourceResultPage, Event: audit.EventLanding, ReceivedAt: arrived}
	orig, kept, err := h.Originals.Original(ctx, id)
	if err != nil {
		return httpapi.Error(ctx, log, err)
	}
	if kept {
		trigger.Original = &orig
	}
	if !kept && !s.Created.IsZero() && arrived.Sub(s.Created) > h.Retention {
		// Past the retention the order is gone and no verdict of it is
		// kept: claiming it again would count the payment twice and could
		// email a second, different verdict (or one for a refunded order).
		// The webhook never meets such a session: an order outlives every
		// Stripe retry (oracle.MinRetentionDays).
		log.WarnContext(ctx, "paid session past its retention with nothing kept; not claimed again")
		return httpapi.JSON(http.StatusGone, answer{Status: "expired", Message: fmt.Sprintf(
			"This order is more than %d days old and we no longer keep it. Write to %s and we will help.", int(h.Retention/(24*time.Hour)), h.Support)})
	}
	res, err := h.Fulfil.Fulfil(ctx, s, trigger)
	if kept && err == nil && res.Outcome == oracle.Claimed {
		h.Metrics.Count(obs.Regenerations, 1)
	}
	if oracle.ErrorCode(err) == oracle.CodeConflict {
		return httpapi.JSON(http.StatusAccepted, pending) // the webhook is claiming it right now
	}
	if err != nil {
		return httpapi.Error(ctx, log, err)
	}
	log.InfoContext(ctx, "landing claim", "outcome", res.Outcome.String(), "status", string(res.Status))
	if res.Status == oracle.StatusReady {
		// Claimed by another first and already done: the next poll serves it.
		return httpapi.JSON(http.StatusAccepted, pending)
	}
	return h.unserved(ctx, log, res.Status)
}

// serve answers the stored verdict and records that it was served.
func (h *Handler) serve(ctx context.Context, o oracle.Order, arrived time.Time) httpapi.Response {
	// Every load counts on the metric; the audit log keeps one record per
	// session and hour, the first load's: its objects are locked for years,
	// and anyone holding a session id could otherwise grow the bucket
	// without bound by reloading the page. Every load is served from the
	// store, a regenerated verdict too: the generator's own record counts
	// the regeneration, once.
	h.Metrics.Count(obs.CacheHits, 1)
	now := h.Now()
	r := audit.OfOrder(h.Hasher, o, audit.SourceCacheHit, audit.EventVerdictServed, audit.StatusCached, arrived, now)
	// A failed audit write alerts; the customer still gets the verdict.
	h.Audit.Record(ctx, r, audit.RecordID(o.SessionID, audit.NameServed, audit.Hourly(now)))
	a := answer{
		Status: "ready", Tier: o.Tier, TierName: o.Tier.Name(), Query: o.Query, Verdict: json.RawMessage(o.Verdict),
		CachedAt: o.GeneratedAt, RetentionDays: int(h.Retention / (24 * time.Hour)),
	}
	if o.Regen {
		a.Regen, a.RegenReason, a.Divergence, a.RegeneratedAt = true, o.RegenReason, o.Divergence, o.GeneratedAt
		if o.OriginalVerdict != "" && o.OriginalVerdict != o.VerdictLabel {
			a.OriginalVerdict = o.OriginalVerdict
		}
		if oracle.NotifyDivergence(o.Divergence) {
			a.DivergenceNotice, a.OriginalVerdict = true, o.OriginalVerdict
		}
	}
	if o.Mail[oracle.MailVerdict].Undelivered() {
		a.Email = emailUndelivered
	}
	return httpapi.JSON(http.StatusOK, a)
}

// regenerate asks the generator for a new verdict in place of an expired
// one, at most once per session per RegenWindow, and answers pending. The
// generator itself resets the order, so a lost job leaves it as it was.
func (h *Handler) regenerate(ctx context.Context, log *slog.Logger, o oracle.Order) httpapi.Response {
	key := "regen#" + o.SessionID
	first, err := h.Regen.Mark(ctx, key, RegenWindow)
	if err != nil {
		return httpapi.Error(ctx, log, err)
	}
	if first {
		if err := h.Generate.Send(ctx, queue.Job{SessionID: o.SessionID, Reason: queue.ReasonRegenerate}); err != nil {
			// The next load may try again at once, not after the window.
			if rerr := h.Regen.Release(ctx, key); rerr != nil {
				log.ErrorContext(ctx, "releasing the regeneration mark failed", "error", rerr.Error())
			}
			return httpapi.Error(ctx, log, err)
		}
		h.Metrics.Count(obs.Regenerations, 1)
		log.InfoContext(ctx, "expired verdict: regeneration queued")
	}
	return httpapi.JSON(http.StatusAccepted, pending)
}
