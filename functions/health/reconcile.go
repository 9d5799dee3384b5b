package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/fulfil"
	"42sisters.ai/oracle/shared/health"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/queue"
	"42sisters.ai/oracle/shared/store"
)

// Index reads orders by state (store.OrderIndex).
type Index interface {
	ByStatus(ctx context.Context, status oracle.Status, exp store.Expiring, each func(store.Indexed) error) error
	CountByStatus(ctx context.Context, status oracle.Status, exp store.Expiring) (int64, error)
	Existing(ctx context.Context, ids []string) (map[string]bool, error)
}

// Orders reads and reclaims orders (store.Orders).
type Orders interface {
	Get(ctx context.Context, sessionID string) (oracle.Order, bool, error)
	Mail(ctx context.Context, sessionID string, kind oracle.MailKind) (oracle.Order, store.MailProgress, bool, error)
	Reclaim(ctx context.Context, seen oracle.Order, lease time.Duration) (oracle.Claim, bool, error)
}

// Fulfiller is the one idempotent claim and resend (fulfil.Service).
type Fulfiller interface {
	Fulfil(ctx context.Context, s oracle.Session, t fulfil.Trigger) (fulfil.Result, error)
	Redeliver(ctx context.Context, r fulfil.Reclaimer, seen oracle.Order) (bool, error)
}

// Sessions lists and reads Checkout Sessions with one Stripe key
// (stripex.Client).
type Sessions interface {
	CompletedSessions(ctx context.Context, from, to time.Time, each func(oracle.Session) error) error
	RetrieveSession(ctx context.Context, id string) (oracle.Session, error)
}

// Ledger keeps the reconciliation's markers (store.Ledger).
type Ledger interface {
	Mark(ctx context.Context, key string, ttl time.Duration) (bool, error)
}

// Sender sends a job to the mail queue.
type Sender interface {
	Send(ctx context.Context, j queue.Job) error
}

// Reconciler finds the paid orders left behind and sends what they are
// owed again, through the paths the webhook and the functions use, so that
// one verdict and one email still hold; and it reminds the operator of the
// orders that wait for them.
type Reconciler struct {
	Index    Index
	Orders   Orders
	Fulfil   Fulfiller
	Mail     Sender
	Ledger   Ledger
	Alerts   Alerter
	Log      *slog.Logger
	Now      func() time.Time
	Sessions map[bool]Sessions // by livemode; a mode without a key is absent

	StuckAfter      time.Duration
	MailStuckAfter  time.Duration
	ReconcileWindow time.Duration
	WebhookGrace    time.Duration
	RealertEvery    time.Duration
	Retention       time.Duration
}

// watched are the states whose every order the job reads each run: each
// is transient or waits for the operator, so they stay small.
var watched = []oracle.Status{oracle.StatusAwaitingPayment, oracle.StatusPaid, oracle.StatusGenerating,
	oracle.StatusDropped, oracle.StatusFailed, oracle.StatusHeld, oracle.StatusQuarantined}

// owedMail is the email each settled state owes its customer.
var owedMail = map[oracle.Status]oracle.MailKind{
	oracle.StatusReady: oracle.MailVerdict, oracle.StatusDropped: oracle.MailSilentDrop,
	oracle.StatusFailed: oracle.MailFailed, oracle.StatusHeld: oracle.MailReview, oracle.StatusQuarantined: oracle.MailReview,
}

// Run reconciles and returns its checks: the orders ("orders"), the
// missed webhooks ("stripe_reconcile"). Figures go to rec.
func (r *Reconciler) Run(ctx context.Context, rec *health.Record) []health.Check {
	rec.Orders = map[string]int64{}
	var checks []health.Check
	start := r.Now()
	ordersCheck := health.Check{Name: "orders", Status: health.OK}
	if err := r.orders(ctx, rec); err != nil {
		ordersCheck.Status, ordersCheck.Detail = health.Critical, err.Error()
	} else {
		ordersCheck.Detail = r.ordersDetail(rec.Reconcile)
		if rec.Reconcile.StillStuck > 0 {
			ordersCheck.Status = health.Critical
		} else if rec.Reconcile.Stuck > 0 || rec.PastTTL > 0 {
			ordersCheck.Status = health.Warn
		}
	}
	ordersCheck.DurationMs = r.Now().Sub(start).Milliseconds()
	checks = append(checks, ordersCheck)

	start = r.Now()
	stripeCheck := health.Check{Name: "stripe_reconcile", Status: health.OK}
	if err := r.missedWebhooks(ctx, rec); err != nil {
		stripeCheck.Status, stripeCheck.Detail = health.Critical, err.Error()
	} else {
		stripeCheck.Detail = fmt.Sprintf("%d paid session(s) in the last %s, %d without an order claimed", rec.Reconcile.SessionsListed, r.ReconcileWindow, rec.Reconcile.WebhooksMissed)
		if rec.Reconcile.WebhooksMissed > 0 {
			stripeCheck.Status = health.Warn
		}
	}
	stripeCheck.DurationMs = r.Now().Sub(start).Milliseconds()
	return append(checks, stripeCheck)
}

func (r *Reconciler) ordersDetail(c health.Reconciliation) string {
	return fmt.Sprintf("%d stuck (%d sent again, %d stuck again), %d email(s) sent again, %d reminder(s)",
		c.Stuck, c.Redelivered, c.StillStuck, c.MailResent, c.Reminded)
}

// orders walks the watched states and the READY orders whose email may be
// owed, counting each state and what is past its TTL.
func (r *Reconciler) orders(ctx context.Context, rec *health.Record) error {
	now := r.Now()
	var errs []error
	// An order the run sent on moves while the run walks: the generator
	// makes a PAID order GENERATING before the GENERATING walk reads it.
	// Each order is looked at once per run.
	visited := map[string]bool{}
	for _, status := range watched {
		var n int64
		err := r.Index.ByStatus(ctx, status, store.Expiring{From: now.Unix()}, func(x store.Indexed) error {
			n++
			if visited[x.SessionID] {
				return nil
			}
			visited[x.SessionID] = true
			if err := r.order(ctx, x, rec); err != nil {
				// One order's failure does not hide the others.
				errs = append(errs, fmt.Errorf("%s: %w", oracle.ShortID(x.SessionID), err))
			}
			return nil
		})
		if err != nil {
			return err
		}
		rec.Orders[string(status)] = n
	}
	// READY orders whose verdict email is unsent: within a window of their
	// generation, which their expiry follows by the retention.
	from := now.Add(r.Retention - r.ReconcileWindow).Unix()
	to := now.Add(r.Retention - r.MailStuckAfter).Unix()
	err := r.Index.ByStatus(ctx, oracle.StatusReady, store.Expiring{From: from, To: to}, func(x store.Indexed) error {
		if x.VerdictMailClosed || x.Regen || visited[x.SessionID] {
			return nil
		}
		if err := r.owedMail(ctx, x, oracle.MailVerdict, rec); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", oracle.ShortID(x.SessionID), err))
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, status := range append([]oracle.Status{oracle.StatusReady}, watched...) {
		n, err := r.Index.CountByStatus(ctx, status, store.Expiring{From: 1, To: now.Unix()})
		if err != nil {
			return err
		}
		rec.PastTTL += n
	}
	return errors.Join(errs...)
}

// order does what one watched order calls for.
func (r *Reconciler) order(ctx context.Context, x store.Indexed, rec *health.Record) error {
	now := r.Now()
	switch x.Status {
	case oracle.StatusPaid, oracle.StatusGenerating:
		return r.stuck(ctx, x, rec)
	case oracle.StatusAwaitingPayment:
		if oracle.IsAgentOrder(x.SessionID) {
			return r.unconfirmed(ctx, x, rec) // no Stripe session stands behind it
		}
		// Checkout Sessions expire within 24 hours; a delayed payment is
		// confirmed by its own event, which may have been missed.
		if now.Sub(x.SessionCreated) < 24*time.Hour {
			return nil
		}
		return r.awaiting(ctx, x, rec)
	case oracle.StatusDropped:
		if err := r.stuck(ctx, x, rec); err != nil {
			return err
		}
	}
	if kind, ok := owedMail[x.Status]; ok {
		if err := r.owedMail(ctx, x, kind, rec); err != nil {
			return err
		}
	}
	return r.remind(ctx, x, rec)
}

// stuck sends again the job of an order that made no progress for
// StuckAfter: its job was lost (deleted, or never sent by a claimer that
// died). A parked order is not stuck before its job comes back.
func (r *Reconciler) stuck(ctx context.Context, x store.Indexed, rec *health.Record) error {
	now := r.Now()
	last := x.UpdatedAt
	if x.JobDueAt != nil && x.JobDueAt.After(last) {
		last = *x.JobDueAt
	}
	if now.Sub(last) < r.StuckAfter {
		return nil
	}
	o, found, err := r.Orders.Get(ctx, x.SessionID)
	if err != nil || !found {
		return err
	}
	if o.Status != x.Status || (o.Status == oracle.StatusDropped && o.JobEnqueuedAt != nil) {
		return nil // it moved on, or a dropped order's notice was sent
	}
	if o.JobDueAt != nil && o.JobDueAt.After(o.UpdatedAt) {
		last = *o.JobDueAt
	} else {
		last = o.UpdatedAt
	}
	if now.Sub(last) < r.StuckAfter {
		return nil
	}
	rec.Reconcile.Stuck++
	sent, err := r.Fulfil.Redeliver(ctx, r.Orders, o)
	if err != nil {
		return fmt.Errorf("send its job again: %w", err)
	}
	if !sent {
		return nil // another run, or the order itself, moved first
	}
	rec.Reconcile.Redelivered++
	return r.escalate(ctx, o.SessionID, "stuck#"+o.SessionID, rec,
		fmt.Sprintf("%s with no progress for %s; its job was sent again", o.Status, now.Sub(last).Round(time.Second)))
}

// escalate alerts about a stuck order: WARN the first time, CRITICAL when
// it is found stuck again within a day, then nothing more that day. Each
// step is a Ledger mark, a conditional write that knows its own retried
// attempt, so a lost answer never skips the WARN nor repeats the CRITICAL.
func (r *Reconciler) escalate(ctx context.Context, session, key string, rec *health.Record, detail string) error {
	first, err := r.Ledger.Mark(ctx, key, 24*time.Hour)
	if err != nil || first {
		r.Alerts.Raise(ctx, alert.Alert{Severity: alert.Warn, Kind: alert.OrderStuck, Session: session, Subject: key, Detail: detail})
		return err
	}
	rec.Reconcile.StillStuck++
	again, err := r.Ledger.Mark(ctx, key+"#again", 24*time.Hour)
	if err != nil {
		return err
	}
	if again {
		r.Alerts.Raise(ctx, alert.Alert{Severity: alert.Critical, Kind: alert.OrderStuck, Session: session, Subject: key,
			Detail: detail + ", and it was stuck before: read the generator's and mailer's logs for this session"})
	}
	return nil
}

// owedMail sends again the mail job of an email still unsent
// MailStuckAfter after it was due: the mailer claims each attempt once, so
// a job that was not lost after all changes nothing.
func (r *Reconciler) owedMail(ctx context.Context, x store.Indexed, kind oracle.MailKind, rec *health.Record) error {
	now := r.Now()
	o, p, found, err := r.Orders.Mail(ctx, x.SessionID, kind)
	if err != nil || !found || p.Closed || o.Status != x.Status {
		return err
	}
	if o.Status == oracle.StatusDropped && o.JobEnqueuedAt == nil {
		return nil // the claim's job is the notice; stuck() sends it
	}
	due := p.NextAt
	if due.IsZero() {
		due = o.UpdatedAt
		if o.GeneratedAt != nil && o.Status == oracle.StatusReady {
			due = *o.GeneratedAt
		}
	}
	if now.Sub(due) < r.MailStuckAfter || p.LeaseUntil.After(now) {
		return nil
	}
	rec.Reconcile.Stuck++
	if err := r.Mail.Send(ctx, queue.Job{SessionID: o.SessionID, Kind: kind, Attempt: p.NextAttempt}); err != nil {
		return fmt.Errorf("send the %s email's job again: %w", kind, err)
	}
	rec.Reconcile.MailResent++
	return r.escalate(ctx, o.SessionID, "stuck#"+o.SessionID+"#"+string(kind), rec,
		fmt.Sprintf("the %s email is unsent %s after it was due; its job was sent again", kind, now.Sub(due).Round(time.Second)))
}

// awaiting asks Stripe about a delayed payment whose session has expired:
// paid means its confirmation event was missed, and the order is claimed
// through the same path.
func (r *Reconciler) awaiting(ctx context.Context, x store.Indexed, rec *health.Record) error {
	src, ok := r.Sessions[!strings.HasPrefix(x.SessionID, "cs_test_")]
	if !ok {
		return nil
	}
	s, err := src.RetrieveSession(ctx, x.SessionID)
	if err != nil {
		return fmt.Errorf("read the session from Stripe: %w", err)
	}
	if !s.Paid() {
		return nil
	}
	return r.claim(ctx, s, rec, "its payment was confirmed but the confirmation event never arrived")
}

// missedWebhooks lists the sessions completed in the window (but not in the
// last WebhookGrace, whose webhooks may be on their way) and claims every
// paid one that has no order.
func (r *Reconciler) missedWebhooks(ctx context.Context, rec *health.Record) error {
	now := r.Now()
	// Stripe's created is in whole seconds and the listing excludes to's
	// second: rounding it up to the next second takes in the sessions of
	// the second the grace ends in, at most a second younger than the
	// grace: a webhook that late is as good as missed, and the claim is
	// idempotent if it comes after all.
	from := now.Add(-r.ReconcileWindow)
	to := now.Add(-r.WebhookGrace).Truncate(time.Second).Add(time.Second)
	for _, live := range []bool{true, false} {
		src, ok := r.Sessions[live]
		if !ok {
			continue
		}
		var paid []oracle.Session
		err := src.CompletedSessions(ctx, from, to, func(s oracle.Session) error {
			if s.Paid() {
				paid = append(paid, s)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("list the completed sessions: %w", err)
		}
		rec.Reconcile.SessionsListed += len(paid)
		ids := make([]string, len(paid))
		for i, s := range paid {
			ids[i] = s.ID
		}
		have, err := r.Index.Existing(ctx, ids)
		if err != nil {
			return err
		}
		var errs []error
		for _, s := range paid {
			if have[s.ID] {
				continue
			}
			if err := r.claim(ctx, s, rec, "it was paid but had no order: its webhook never arrived"); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", oracle.ShortID(s.ID), err))
			}
		}
		if err := errors.Join(errs...); err != nil {
			return err
		}
	}
	return nil
}

// claim fulfils a session the webhook never delivered, as the webhook
// would have, and tells the operator once.
func (r *Reconciler) claim(ctx context.Context, s oracle.Session, rec *health.Record, why string) error {
	res, err := r.Fulfil.Fulfil(ctx, s, fulfil.Trigger{Source: oracle.SourceReconcile, Event: audit.EventReconcile, ReceivedAt: r.Now()})
	if err != nil {
		return fmt.Errorf("claim: %w", err)
	}
	if res.Outcome != oracle.Claimed {
		return nil // the webhook or the page claimed it meanwhile
	}
	rec.Reconcile.WebhooksMissed++
	r.Alerts.Raise(ctx, alert.Alert{Severity: alert.Error, Kind: alert.WebhookMissed, Session: s.ID,
		Detail: why + "; the health job claimed it and the customer is being served. Check the webhook endpoint and its signing secret in Stripe's Dashboard"})
	return nil
}

// reminders: what each state waiting for the operator repeats, and how
// severe it is (the first alert's severity).
var reminders = map[oracle.Status]struct {
	kind alert.Kind
	sev  alert.Severity
	what string
}{
	oracle.StatusQuarantined: {alert.QuarantineUnresolved, alert.Critical, "quarantined by the content filter: deliver a cleaned verdict or refund"},
	oracle.StatusDropped:     {alert.OrderUnresolved, alert.Critical, "DROPPED (paid without a usable tier or query): re-run it with the customer's question or refund"},
	oracle.StatusFailed:      {alert.OrderUnresolved, alert.Error, "FAILED (no verdict): refund it"},
	oracle.StatusHeld:        {alert.OrderUnresolved, alert.Error, "HELD by the crosscheck: regenerate or refund"},
}

// remind repeats the alert of an order waiting for the operator every
// RealertEvery, counted from when it began waiting, until it is resolved.
func (r *Reconciler) remind(ctx context.Context, x store.Indexed, rec *health.Record) error {
	rm, ok := reminders[x.Status]
	if !ok {
		return nil
	}
	since := x.UpdatedAt
	if x.QuarantinedAt != nil {
		since = *x.QuarantinedAt
	}
	if r.Now().Sub(since) < r.RealertEvery {
		return nil
	}
	first, err := r.Ledger.Mark(ctx, "remind#"+x.SessionID, r.RealertEvery)
	if err != nil || !first {
		return err
	}
	rec.Reconcile.Reminded++
	what := rm.what
	if x.Status == oracle.StatusHeld {
		// The index does not say why it is held; once a day the order does.
		o, found, err := r.Orders.Get(ctx, x.SessionID)
		if err != nil {
			return err
		}
		if found && o.Failure == oracle.HoldAmountMismatch {
			what = heldForAmount
		}
	}
	r.Alerts.Raise(ctx, alert.Alert{Severity: rm.sev, Kind: rm.kind, Session: x.SessionID,
		Detail: fmt.Sprintf("still %s (since %s)", what, since.UTC().Format(time.RFC3339))})
	return nil
}

// heldForAmount is the reminder of an order held at its claim.
const heldForAmount = "HELD (its amount is not its tier's price): refund it, or deliver it as the tier paid for"

// unconfirmed reminds the operator of an agent order still AWAITING_PAYMENT
// StuckAfter after its claim: a settlement settles or is refused within
// the agent's request, so its answer was lost (X402_SETTLE_UNCONFIRMED was
// raised then) or the agent function stopped mid-settlement (nothing was
// raised). Only the operator, who checks the chain, can confirm or void
// it; the reminder repeats every RealertEvery until they do.
func (r *Reconciler) unconfirmed(ctx context.Context, x store.Indexed, rec *health.Record) error {
	if r.Now().Sub(x.UpdatedAt) < r.StuckAfter {
		return nil // its request may still be settling it
	}
	first, err := r.Ledger.Mark(ctx, "remind#"+x.SessionID, r.RealertEvery)
	if err != nil || !first {
		return err
	}
	o, found, err := r.Orders.Get(ctx, x.SessionID)
	if err != nil || !found || o.Status != oracle.StatusAwaitingPayment {
		return err // moved on since the index saw it
	}
	rec.Reconcile.Reminded++
	payer, network := "the payer", "its network"
	if o.Agent != nil {
		payer, network = o.Agent.Payer, o.Agent.Network
	}
	r.Alerts.Raise(ctx, alert.Alert{Severity: alert.Error, Kind: alert.X402SettleUnconfirmed, Session: x.SessionID,
		Detail: fmt.Sprintf("still AWAITING_PAYMENT (since %s): its settlement was never confirmed. Look on %s's explorer for a transfer of %s USDC from %s to the pay-to wallet: "+
			"found, make ops ACTION=x402-confirm SESSION=<id> TX=<hash>; none and its authorization expired, make ops ACTION=x402-void SESSION=<id>",
			x.UpdatedAt.UTC().Format(time.RFC3339), network, oracle.FormatUSDC(o.AmountTotal), payer)})
	return nil
}
