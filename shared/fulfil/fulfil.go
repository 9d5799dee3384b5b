// Package fulfil is the one idempotent claim through which a Checkout
// Session becomes an order: the webhook and the landing path (the customer
// reaching the result page first) both call it, and whichever comes first
// enqueues the single job the order is owed.
package fulfil

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/obs"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/queue"
	"42sisters.ai/oracle/shared/store"
)

// Stripe event types the service acts on.
const (
	EventCompleted      = "checkout.session.completed"
	EventAsyncSucceeded = "checkout.session.async_payment_succeeded"
	EventAsyncFailed    = "checkout.session.async_payment_failed"
)

// Orders is the order store.
type Orders interface {
	ClaimOrder(ctx context.Context, want oracle.Order, lease time.Duration) (store.Claim, error)
	JobEnqueued(ctx context.Context, sessionID string) error
	ReleaseJobLease(ctx context.Context, sessionID string) error
}

// Sender sends a job to one queue.
type Sender interface {
	Send(ctx context.Context, j queue.Job) error
}

// Auditor appends audit records.
type Auditor interface {
	Write(ctx context.Context, r audit.Record, id string) (bool, error)
}

// Alerter raises operator alerts.
type Alerter interface {
	Raise(ctx context.Context, a alert.Alert)
}

// Counter emits a metric (obs.Metrics).
type Counter interface {
	Count(name string, n float64)
}

// Service claims orders.
type Service struct {
	Orders   Orders
	Generate Sender // the generate queue
	Mail     Sender // the mail queue
	Audit    Auditor
	Alerts   Alerter
	Metrics  Counter
	Hasher   *audit.Hasher
	Log      *slog.Logger
	Now      func() time.Time
	// Lease is how long a claimer may take to enqueue before another
	// attempt may take over.
	Lease time.Duration
	// Retention is how long an order is kept (its TTL); the generator
	// restarts it from the verdict's time.
	Retention time.Duration
}

// Trigger is what caused a claim.
type Trigger struct {
	Source     oracle.Source
	Event      string    // the Stripe event type, or "landing"
	RecordID   string    // unique per triggering event: the audit record's id
	EventTime  time.Time // when the event happened
	ReceivedAt time.Time // when this request arrived, for latency
}

// Result is what a claim did.
type Result struct {
	Outcome store.Outcome
	Status  oracle.Status
}

// Fulfil records what s implies (awaiting payment, paid, dropped or failed
// payment) exactly once, enqueues the job a paid order is owed (generation,
// or the silent-drop notice), raises the one [SILENT-DROP] alert of a dropped
// order, and writes the audit record of the trigger. It returns a
// CodeConflict error while another attempt holds the order's job lease, and
// an internal error when the job or the audit record could not be written:
// the caller answers so that the trigger is retried, and the retry finishes
// the work.
func (f *Service) Fulfil(ctx context.Context, s oracle.Session, t Trigger) (Result, error) {
	now := f.Now()
	want := f.order(s, t, now)
	log := f.Log.With(obs.Session(s.ID), "event", t.Event, "livemode", s.Livemode)

	claim, err := f.Orders.ClaimOrder(ctx, want, f.Lease)
	if err != nil {
		return Result{}, fmt.Errorf("claim: %w", err)
	}
	res := Result{Outcome: claim.Outcome, Status: claim.Order.Status}
	log = log.With("outcome", claim.Outcome.String(), "status", string(claim.Order.Status))
	if claim.Outcome == store.InFlight {
		log.Info("order is being claimed by another attempt")
		return res, oracle.Errorf(oracle.CodeConflict, "this session is being processed; retry later")
	}
	if claim.Outcome == store.Claimed && claim.Order.Status == oracle.StatusDropped {
		f.Metrics.Count("SilentDrops", 1)
		f.Alerts.Raise(ctx, f.silentDrop(s, want, now))
	}
	if claim.MustEnqueue() {
		if err := f.enqueue(ctx, claim.Order); err != nil {
			if rerr := f.Orders.ReleaseJobLease(ctx, s.ID); rerr != nil {
				log.Error("releasing job lease failed", "error", rerr.Error())
			}
			return res, err
		}
	}
	if err := f.audit(ctx, s, claim.Order, t); err != nil {
		f.Alerts.Raise(ctx, alert.Alert{Severity: alert.Error, Kind: "AUDIT_WRITE_FAILED", Session: s.ID, Detail: "audit record not written; the trigger will be retried"})
		return res, err
	}
	log.Info("session fulfilled")
	return res, nil
}

// order is the order that s implies.
func (f *Service) order(s oracle.Session, t Trigger, now time.Time) oracle.Order {
	tier, query, drop := oracle.Resolve(s.Metadata, s.Idea)
	o := oracle.Order{
		SessionID:   s.ID,
		Tier:        tier,
		TierRaw:     oracle.Clip(s.Metadata[oracle.MetaTier], 64),
		Query:       query,
		Livemode:    s.Livemode,
		Smoke:       !s.Livemode && s.Metadata[oracle.MetaSmoke] == "1",
		AmountTotal: s.AmountTotal,
		Currency:    s.Currency,
		EmailHash:   f.Hasher.Email(s.Email),
		Referral:    s.Metadata[oracle.MetaReferral],
		Source:      t.Source,
		ExpiresAt:   now.Add(f.Retention).Unix(),
	}
	switch {
	case t.Event == EventAsyncFailed:
		o.Status = oracle.StatusPaymentFailed
	case !s.Paid():
		o.Status = oracle.StatusAwaitingPayment
	case drop != oracle.DropNone:
		o.Status, o.DropReason = oracle.StatusDropped, drop
	default:
		o.Status = oracle.StatusPaid
	}
	if o.Status.Paid() {
		paid := now.UTC()
		o.PaidAt = &paid
	}
	return o
}

func (f *Service) enqueue(ctx context.Context, o oracle.Order) error {
	var err error
	switch o.Status {
	case oracle.StatusPaid:
		err = f.Generate.Send(ctx, queue.Job{SessionID: o.SessionID, Reason: queue.ReasonPaid})
	case oracle.StatusDropped:
		err = f.Mail.Send(ctx, queue.Job{SessionID: o.SessionID, Kind: queue.MailSilentDrop})
	default:
		return nil
	}
	if err != nil {
		return fmt.Errorf("enqueue job: %w", err)
	}
	if err := f.Orders.JobEnqueued(ctx, o.SessionID); err != nil {
		// The job is on its queue and its consumer is idempotent; a later
		// duplicate delivery may enqueue it again, which changes nothing.
		f.Log.Error("recording the enqueued job failed", obs.Session(o.SessionID), "error", err.Error())
	}
	return nil
}

// silentDrop is the operator alert in SPEC_ORACLE_SILENT_DROP's format, with
// the session cut to 12 characters and the email as its keyed hash.
func (f *Service) silentDrop(s oracle.Session, o oracle.Order, now time.Time) alert.Alert {
	email := o.EmailHash
	if email == "" {
		email = "NULL"
	}
	line := fmt.Sprintf("[SILENT-DROP] session=%s tier=%q query_len=%d email=%s amount=%s %s",
		oracle.ShortID(s.ID), oracle.Clip(o.TierRaw, 32), oracle.QueryUnits(o.Query), email,
		oracle.FormatAmount(s.AmountTotal, s.Currency), now.UTC().Format(time.RFC3339))
	return alert.Alert{Severity: alert.Critical, Kind: "SILENT-DROP", Session: s.ID, Detail: string(o.DropReason), Line: line}
}

func (f *Service) audit(ctx context.Context, s oracle.Session, o oracle.Order, t Trigger) error {
	now := f.Now()
	r := audit.Record{
		Timestamp:   now.UTC(),
		SessionID:   s.ID,
		Tier:        string(o.Tier), // a valid tier exactly as in metadata; a dropped one is named in error_detail
		QueryHash:   f.Hasher.Hash(o.Query),
		Email:       f.Hasher.Email(s.Email),
		LatencyMS:   max(now.Sub(t.ReceivedAt).Milliseconds(), 0),
		Status:      audit.StatusOK,
		Source:      audit.Source(t.Source),
		EventTime:   t.EventTime.UTC(),
		Event:       t.Event,
		Livemode:    s.Livemode,
		AmountTotal: s.AmountTotal,
		Currency:    s.Currency,
		OrderStatus: string(o.Status),
	}
	if t.Source == oracle.SourceWebhook {
		r.EventID = t.RecordID
	}
	switch o.Status {
	case oracle.StatusDropped:
		r.Status, r.ErrorDetail = audit.StatusError, audit.Detail("silent drop: "+string(o.DropReason))
	case oracle.StatusPaymentFailed:
		r.Status, r.ErrorDetail = audit.StatusError, audit.Detail("delayed payment failed")
	}
	if _, err := f.Audit.Write(ctx, r, t.RecordID); err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	return nil
}
