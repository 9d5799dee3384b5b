// Package fulfil is the one idempotent claim through which a Checkout
// Session becomes an order: the webhook and the landing path (the customer
// reaching the result page first) both call it, and whichever comes first
// enqueues the single job the order is owed.
package fulfil

import (
	"context"
	"errors"
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

// Orders is the order store (shared/store).
type Orders interface {
	ClaimOrder(ctx context.Context, want oracle.Order, lease time.Duration) (oracle.Claim, error)
	JobEnqueued(ctx context.Context, sessionID, lease string) error
	ReleaseJobLease(ctx context.Context, sessionID, lease string) error
}

// Sender sends a job to one queue.
type Sender interface {
	Send(ctx context.Context, j queue.Job) error
}

// Auditor appends audit records, alerting when one cannot be written
// (audit.Recorder).
type Auditor interface {
	Require(ctx context.Context, r audit.Record, id string) error
}

// Alerter raises operator alerts.
type Alerter interface {
	Raise(ctx context.Context, a alert.Alert)
}

// Counter emits a metric (obs.Metrics).
type Counter interface {
	Count(name string, n float64)
}

// DefaultLease is the job lease's default: three times the verdict API's
// 10 s timeout, and the webhook's lease is lengthened to its own deadline.
const DefaultLease = 30 * time.Second

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
	// Lease is the shortest time a claimer may take to enqueue before
	// another attempt may take over; it is lengthened to outlast the
	// caller's own deadline, so a live claimer is never overtaken.
	Lease time.Duration
	// Retention is how long an order is kept from its claim (its TTL).
	Retention time.Duration
}

// Trigger is what caused a claim.
type Trigger struct {
	Source     oracle.Source
	Event      audit.Event // the Stripe event type, or landing
	EventID    string      // the Stripe event id, when there is one
	ReceivedAt time.Time   // when this request arrived, for latency
	// Original is set when the session's order has expired and been
	// deleted but its first verdict is still kept: the order claimed again
	// is a regeneration, compared with that verdict, and it is not a new
	// payment (no payment audit record, no verdict email).
	Original *oracle.Original
}

// Result is what a claim did.
type Result struct {
	Outcome oracle.ClaimOutcome
	Status  oracle.Status
}

// Fulfil records what s implies (awaiting payment, paid, dropped or failed
// payment) exactly once and does what the recorded state owes, each step
// guarded so that a retry after a failure or a crash finishes the work and
// a duplicate changes nothing:
//   - a PAID order is owed one generation job;
//   - a DROPPED order is owed the [SILENT-DROP] alert and the notice mail job;
//   - a paid, dropped or failed payment gets one audit record per session.
//
// It returns a CodeConflict error while another attempt holds the order's
// job lease, and an internal error when the job or the audit record could
// not be written: the caller answers so that the trigger is retried.
func (f *Service) Fulfil(ctx context.Context, s oracle.Session, t Trigger) (Result, error) {
	now := f.Now()
	want := f.order(s, t, now)
	ctx = obs.WithOrder(ctx, s.ID)

	claim, err := f.Orders.ClaimOrder(ctx, want, f.lease(ctx, now))
	if err != nil {
		return Result{}, fmt.Errorf("claim: %w", err)
	}
	res := Result{Outcome: claim.Outcome, Status: claim.Order.Status}
	// A claim that went well writes no line here: its caller's line says
	// what became of the trigger (one line an event on the webhook's hot
	// path). What goes wrong is written with what the claim found.
	log := func(level slog.Level, msg string, attrs ...slog.Attr) {
		f.Log.LogAttrs(ctx, level, msg, append(attrs, slog.String("event", string(t.Event)), slog.Bool("livemode", s.Livemode),
			slog.String("outcome", claim.Outcome.String()), slog.String("status", string(claim.Order.Status)))...)
	}
	if claim.Outcome == oracle.InFlight {
		log(slog.LevelInfo, "order is being claimed by another attempt")
		return res, oracle.Errorf(oracle.CodeConflict, "this session is being processed; retry later")
	}
	if claim.MustEnqueue() {
		if err := f.deliverOwed(ctx, s, claim); err != nil {
			if rerr := f.Orders.ReleaseJobLease(ctx, s.ID, claim.Lease); rerr != nil {
				log(slog.LevelError, "releasing job lease failed", slog.String("error", rerr.Error()))
			}
			return res, err
		}
	}
	if err := f.audit(ctx, s, want, claim.Order, t); err != nil {
		// Alerted by the recorder; the trigger is retried.
		return res, err
	}
	return res, nil
}

// ClaimPaid records an order paid outside Stripe (an agent's settled x402
// payment), built whole by the caller, through the same claim as a
// session's: the order becomes PAID once however many callers race, and
// the one that claims it enqueues its single generation job. The caller
// writes the payment's own audit record.
func (f *Service) ClaimPaid(ctx context.Context, want oracle.Order) (Result, error) {
	return f.claimPaid(ctx, want, f.Orders.ClaimOrder)
}

// claimPaid is ClaimPaid whose claim of the order is claim.
func (f *Service) claimPaid(ctx context.Context, want oracle.Order, claim func(context.Context, oracle.Order, time.Duration) (oracle.Claim, error)) (Result, error) {
	now := f.Now()
	paid := now.UTC()
	want.Status, want.PaidAt = oracle.StatusPaid, &paid
	if want.Expires.IsZero() {
		want.Expires = now.Add(want.Retention(f.Retention))
	}
	c, err := claim(ctx, want, f.lease(ctx, now))
	if err != nil {
		return Result{}, fmt.Errorf("claim: %w", err)
	}
	res := Result{Outcome: c.Outcome, Status: c.Order.Status}
	if c.Outcome == oracle.InFlight {
		return res, oracle.Errorf(oracle.CodeConflict, "this order is being processed; retry later")
	}
	if c.MustEnqueue() {
		s := oracle.Session{ID: want.SessionID, AmountTotal: want.AmountTotal, Currency: want.Currency, Livemode: want.Livemode}
		if err := f.deliverOwed(ctx, s, c); err != nil {
			if rerr := f.Orders.ReleaseJobLease(ctx, want.SessionID, c.Lease); rerr != nil {
				f.Log.ErrorContext(ctx, "releasing job lease failed", obs.Order(want.SessionID), "error", rerr.Error())
			}
			return res, err
		}
	}
	return res, nil
}

// Reclaimer takes the job lease of an order whose job was lost
// (store.Orders).
type Reclaimer interface {
	Reclaim(ctx context.Context, seen oracle.Order, lease time.Duration) (oracle.Claim, bool, error)
}

// Redeliver sends again the job an order is owed when that job was lost
// (the health job found it without progress): it takes the order's job
// lease as it was seen, so one caller at a time sends it, then enqueues and
// records the job exactly as a claim does. sent is false when the order
// moved on or another caller took it first. The job's consumer is
// idempotent, so a job that was not lost after all changes nothing.
func (f *Service) Redeliver(ctx context.Context, r Reclaimer, seen oracle.Order) (sent bool, err error) {
	claim, ok, err := r.Reclaim(ctx, seen, f.lease(ctx, f.Now()))
	if err != nil || !ok {
		return false, err
	}
	o := claim.Order
	s := oracle.Session{ID: o.SessionID, TierRaw: o.TierRaw, Query: o.Query, AmountTotal: o.AmountTotal, Currency: o.Currency, Livemode: o.Livemode}
	if err := f.deliverOwed(ctx, s, claim); err != nil {
		if rerr := f.Orders.ReleaseJobLease(ctx, o.SessionID, claim.Lease); rerr != nil {
			f.Log.ErrorContext(ctx, "releasing job lease failed", obs.Order(o.SessionID), "error", rerr.Error())
		}
		return false, err
	}
	f.Log.WarnContext(ctx, "owed job sent again", obs.Order(o.SessionID), "status", string(o.Status))
	return true, nil
}

// lease is the job lease for a claim made now: at least f.Lease, and longer
// than the caller has left to live, so that only a claimer that is gone can
// be overtaken.
func (f *Service) lease(ctx context.Context, now time.Time) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		return max(f.Lease, d.Sub(now)+5*time.Second)
	}
	return f.Lease
}

// deliverOwed does what a claimed order is owed: the job, and for a dropped
// order first the operator alert. Tying the alert to the job lease means a
// claimer that dies before alerting is followed by one that alerts. A mail
// job is recorded here (JobEnqueued); a generation job by the generator's
// claim.
func (f *Service) deliverOwed(ctx context.Context, s oracle.Session, c oracle.Claim) error {
	o := c.Order
	var err error
	switch o.Status {
	case oracle.StatusPaid:
		reason := queue.ReasonPaid
		if o.Regen {
			reason = queue.ReasonRegenerate
		}
		if err := f.Generate.Send(ctx, queue.Job{SessionID: o.SessionID, Reason: reason}); err != nil {
			return fmt.Errorf("enqueue job: %w", err)
		}
		// The generator's claim (store.Orders.StartGeneration) records
		// that the job reached its queue, and frees the lease, in the
		// write that takes the order: until then a claim finds the order
		// in flight (or, the lease lapsed, sends the job again, which
		// the generator's claim makes harmless).
		return nil
	case oracle.StatusDropped:
		f.Metrics.Count(obs.SilentDrops, 1)
		f.Alerts.Raise(ctx, f.silentDrop(s, o))
		err = f.Mail.Send(ctx, queue.Job{SessionID: o.SessionID, Kind: oracle.MailSilentDrop})
	case oracle.StatusHeld:
		f.Alerts.Raise(ctx, alert.Alert{Severity: alert.Critical, Kind: alert.AmountMismatch, Session: o.SessionID,
			Detail: fmt.Sprintf("priced at %s for the %s tier, whose price is %s: the order is HELD; refund it, or deliver it as the tier paid for",
				oracle.FormatAmount(s.AmountSubtotal, s.Currency), o.Tier, oracle.FormatAmount(o.Tier.PriceCents(), oracle.Currency))})
		err = f.Mail.Send(ctx, queue.Job{SessionID: o.SessionID, Kind: oracle.MailReview})
	default:
		return nil
	}
	if err != nil {
		return fmt.Errorf("enqueue job: %w", err)
	}
	if err := f.Orders.JobEnqueued(ctx, o.SessionID, c.Lease); err != nil {
		// The job is on its queue. Its consumer must be idempotent anyway
		// (SQS delivers at least once); a later claim may enqueue it again,
		// which then changes nothing.
		f.Log.ErrorContext(ctx, "recording the enqueued job failed", obs.Order(o.SessionID), "error", err.Error())
	}
	return nil
}

// order is the order that s implies.
func (f *Service) order(s oracle.Session, t Trigger, now time.Time) oracle.Order {
	tier, query, drop := s.Tier, s.Query, s.Drop
	o := oracle.Order{
		SessionID:   s.ID,
		Tier:        tier,
		TierRaw:     oracle.Clip(s.TierRaw, 64),
		Query:       query,
		Livemode:    s.Livemode,
		Smoke:       !s.Livemode && s.Smoke,
		AmountTotal: s.AmountTotal,
		Currency:    s.Currency,
		// Kept for the charge events, which name the payment intent only.
		PaymentIntent: s.PaymentIntent,
		Referral:      s.Referral,
		Source:        t.Source,
	}
	o.Expires = now.Add(o.Retention(f.Retention))
	o.SessionCreated = s.Created.UTC()
	if s.Created.IsZero() {
		o.SessionCreated = now.UTC()
	}
	switch {
	case t.Event == audit.EventAsyncFailed:
		o.Status = oracle.StatusPaymentFailed
	case !s.Paid():
		o.Status = oracle.StatusAwaitingPayment
	case drop != oracle.DropNone:
		o.Status, o.DropReason = oracle.StatusDropped, drop
	case !s.PricedAsTier():
		// Not delivered as a tier it was not paid for, nor as another.
		o.Status, o.Failure = oracle.StatusHeld, oracle.HoldAmountMismatch
	default:
		o.Status = oracle.StatusPaid
	}
	if o.Status.Paid() {
		paid := now.UTC()
		o.PaidAt = &paid
	}
	if t.Original != nil && o.Status == oracle.StatusPaid {
		o.Regen, o.RegenReason = true, oracle.RegenExpired
		o.OriginalVerdict, o.OriginalVerdictHash = t.Original.Verdict, t.Original.Hash
	}
	return o
}

// silentDrop is the operator alert in SPEC_ORACLE_SILENT_DROP's format, with
// the session by its name (oracle.ShortID) and the email as its keyed hash.
func (f *Service) silentDrop(s oracle.Session, o oracle.Order) alert.Alert {
	email := "NULL"
	if s.Email != "" {
		email = f.Hasher.Email(s.Email)
	}
	line := fmt.Sprintf("[SILENT-DROP] session=%s tier=%q query_len=%d email=%s amount=%s %s",
		oracle.ShortID(s.ID), oracle.Clip(o.TierRaw, 32), oracle.QueryUnits(o.Query), email,
		oracle.FormatAmount(s.AmountTotal, s.Currency), f.Now().UTC().Format(time.RFC3339))
	return alert.Alert{Severity: alert.Critical, Kind: alert.SilentDrop, Session: s.ID, Detail: string(o.DropReason), Line: line}
}

// audit writes the record of what the session says (want), with the
// order's stored state beside it: one record per session and outcome, so
// the log holds exactly one webhook record for a paid session however many
// events or retries reported it. A payment not yet confirmed is no paid
// event and gets none.
func (f *Service) audit(ctx context.Context, s oracle.Session, want, stored oracle.Order, t Trigger) error {
	if want.Status == oracle.StatusAwaitingPayment || want.Regen {
		// A restored order is no new payment: the session's payment record
		// was written when it was first claimed.
		return nil
	}
	r := audit.OfOrder(f.Hasher, want, audit.Source(t.Source), t.Event, audit.StatusOK, t.ReceivedAt, f.Now())
	// The payment fields as Stripe reported them now; the status the store kept.
	r.SessionID, r.EventID, r.OrderStatus = s.ID, t.EventID, string(stored.Status)
	r.Livemode, r.AmountTotal, r.Currency = s.Livemode, s.AmountTotal, s.Currency
	if s.Email != "" {
		r.Email = f.Hasher.Email(s.Email)
	}
	switch want.Status {
	case oracle.StatusDropped:
		r.Status, r.ErrorDetail = audit.StatusError, audit.Detail("silent drop: "+string(want.DropReason))
	case oracle.StatusPaymentFailed:
		r.Status, r.ErrorDetail = audit.StatusError, audit.Detail("delayed payment failed")
	case oracle.StatusHeld:
		r.Status, r.ErrorDetail = audit.StatusError, audit.Detail(fmt.Sprintf("amount mismatch: priced at %s for %s",
			oracle.FormatAmount(s.AmountSubtotal, s.Currency), want.Tier))
	}
	if err := f.Audit.Require(ctx, r, audit.RecordID(s.ID, claimRecords[want.Status])); err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	return nil
}

// claimRecords name the record of each outcome of a claim that is audited.
var claimRecords = map[oracle.Status]audit.RecordName{
	oracle.StatusPaid:          audit.NamePaid,
	oracle.StatusHeld:          audit.NamePaid, // held at its claim: a payment all the same
	oracle.StatusDropped:       audit.NameDropped,
	oracle.StatusPaymentFailed: audit.NamePaymentFailed,
}

// Refunder records full refunds (store.Orders).
type Refunder interface {
	Get(ctx context.Context, sessionID string) (oracle.Order, bool, error)
	MarkRefunded(ctx context.Context, sessionID string, r store.Refund) (bool, error)
}

// ErrNotRefundable means the order was never paid, so there is nothing to
// refund.
var ErrNotRefundable = errors.New("the order was never paid")

// Refunded records a full refund of the session's order, whoever made it
// (the operator's action, or Stripe's Dashboard as a charge event tells):
// the order becomes REFUNDED once, and the customer is owed the refund
// notice. The notice's job is sent again while its delivery is not closed,
// so a caller retried after a crash still owes it; the mailer sends each
// kind once. changed reports whether this call made the order REFUNDED.
func Refunded(ctx context.Context, orders Refunder, mail Sender, sessionID string, r store.Refund) (o oracle.Order, changed bool, err error) {
	changed, err = orders.MarkRefunded(ctx, sessionID, r)
	if err != nil {
		return oracle.Order{}, false, err
	}
	o, found, err := orders.Get(ctx, sessionID)
	if err != nil {
		return oracle.Order{}, false, err
	}
	if !found || o.Status != oracle.StatusRefunded {
		return o, false, fmt.Errorf("refund of %s: %w", oracle.ShortID(sessionID), ErrNotRefundable)
	}
	if _, notified := o.Mail[oracle.MailRefund]; !notified {
		if err := mail.Send(ctx, queue.Job{SessionID: sessionID, Kind: oracle.MailRefund}); err != nil {
			return o, changed, fmt.Errorf("enqueue the refund notice: %w", err)
		}
	}
	return o, changed, nil
}
