package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/crosscheck"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/store"
)

// failed handles a generation that produced no verdict, as remedyFor
// decides; nothing partial is stored whatever the cause.
func (h *Handler) failed(ctx context.Context, t *task, cause error) error {
	class := failureClass(cause)
	r := remedyFor(cause, t.receives, h.MaxReceives)
	t.log.WarnContext(ctx, "generation failed", "class", class, "remedy", r.String(), "error", cause.Error())
	switch r {
	case remedyHold:
		var rej *rejected
		errors.As(cause, &rej)
		d := rej.decision
		why := fmt.Sprintf("two replies failed the crosscheck (%s, C=%.4f)", d.Reason, d.CoherenceScore)
		if x := d.Contradiction; d.Rule == crosscheck.RuleMajority && x != nil {
			why = fmt.Sprintf("two replies failed the crosscheck, the last because its verdict contradicted its dimensions (%s over %d of %d dimensions %s; %s by the majority rule)",
				x.Verdict, len(x.Dimensions), x.Present, x.Majority, d.Reason)
		}
		return h.hold(ctx, t, "crosscheck_"+string(d.Reason), why)
	case remedyHoldRefused:
		return h.hold(ctx, t, "model_refused", "the model refused the prompt twice, the second time on the stricter retry ("+cause.Error()+")")
	}
	h.abandon(ctx, t)
	h.audit(ctx, t, audit.StatusError, audit.Detail("generation failed: "+class), audit.RecordID(t.order.SessionID, audit.NameAttempt, t.order.Attempts), "")
	switch r {
	case remedyParkKey:
		until := h.Key.Reject(h.Now())
		h.Alerts.Raise(ctx, alert.Alert{Severity: alert.Critical, Kind: alert.GeminiAuthFailure,
			Detail: "the model refused the API key; orders are parked until a working key is in its secret (read again within a minute of the next refusal, no deploy)"})
		return h.park(ctx, t, until, "the model key is refused")
	case remedyGiveUp:
		return h.giveUp(ctx, t, class)
	case remedyRetry:
		t.job.Attempt++
		return h.park(ctx, t, h.Now().Add(backoff(h.RetryBase, t.job.Attempt, h.Rand())), "the model failed ("+class+")")
	case remedyLastDelivery:
		_ = h.giveUp(ctx, t, class)
	}
	return cause
}

// abandon gives up the task's generation lease after an attempt that
// stored nothing, so that the next attempt may start at once.
func (h *Handler) abandon(ctx context.Context, t *task) {
	if err := h.Orders.AbandonGeneration(ctx, t.order.SessionID, t.lease); err != nil {
		t.log.ErrorContext(ctx, "releasing the generation lease failed", "error", err.Error())
	}
}

// park puts the job back on the queue until the model can be asked again,
// keeping the order as it is; past the parking budget the order fails.
func (h *Handler) park(ctx context.Context, t *task, until time.Time, why string) error {
	now := h.Now()
	since := now
	if t.order.ParkedSince != nil {
		since = *t.order.ParkedSince
	}
	at, ok := parkUntil(since, until, now, h.ParkingBudget)
	if !ok {
		return h.giveUp(ctx, t, "model_unavailable")
	}
	var first time.Time
	var err error
	if t.lease != "" && !t.asked {
		// The model was never asked: the lease and its attempt are given
		// back in the same write that parks the order.
		first, err = h.Orders.ParkLeased(ctx, t.order, t.lease, at)
	} else {
		first, err = h.Orders.Park(ctx, t.order.SessionID, at)
	}
	var notOwed *store.ErrNotOwed
	if errors.As(err, &notOwed) {
		t.log.InfoContext(ctx, "generation not owed; job acknowledged", "status", string(notOwed.Order.Status))
		return nil
	}
	if err != nil {
		return err
	}
	// The budget runs from the first park as stored, which a concurrent
	// job may have made before the order this one read.
	if at, ok = parkUntil(first, until, now, h.ParkingBudget); !ok {
		return h.giveUp(ctx, t, "model_unavailable")
	}
	since = first
	job := t.job
	job.NotBefore = &at
	if err := h.Requeue.Send(ctx, job); err != nil {
		return fmt.Errorf("park: %w", err) // the item fails; SQS brings it back
	}
	t.log.InfoContext(ctx, "job parked", "why", why, "until", at.UTC().Format(time.RFC3339), "parked_since", since.UTC().Format(time.RFC3339))
	return nil
}

// giveUp marks the order FAILED, tells the operator and the customer once.
func (h *Handler) giveUp(ctx context.Context, t *task, class string) error {
	changed, err := h.Orders.MarkFailed(ctx, t.order.SessionID, class)
	if err != nil {
		return fmt.Errorf("mark failed: %w", err)
	}
	if !changed {
		return nil
	}
	t.log.ErrorContext(ctx, "generation failed for good", "class", class)
	h.Alerts.Raise(ctx, alert.Alert{Severity: alert.Error, Kind: alert.GenerationFailed, Session: t.order.SessionID,
		Detail: "no verdict (" + class + "); the customer is told to ask for a refund"})
	return h.notify(ctx, t.order, oracle.MailFailed)
}

// hold sets aside, for the operator, an order the model gave no usable
// verdict for on content grounds: two replies the crosscheck refused, or a
// prompt refused twice. Nothing is stored or sent but the review notice.
// reason is kept on the order; why is the alert's and the audit's account.
func (h *Handler) hold(ctx context.Context, t *task, reason, why string) error {
	o := t.order
	held, err := h.Orders.Hold(ctx, o.SessionID, t.lease, reason)
	if err != nil {
		h.abandon(ctx, t)
		return err
	}
	if !held {
		t.log.WarnContext(ctx, "generation lease lost before holding the order")
		return nil
	}
	t.log.ErrorContext(ctx, "verdict held for review", "reason", reason)
	h.audit(ctx, t, audit.StatusError, audit.Detail("held for review: "+why), audit.RecordID(o.SessionID, audit.NameHeld), "")
	h.Alerts.Raise(ctx, alert.Alert{Severity: alert.Error, Kind: alert.VerdictHeld, Session: o.SessionID,
		Detail: why + "; the order is HELD for review"})
	return h.notify(ctx, o, oracle.MailReview)
}

// settled queues again what an order settled without a verdict is owed:
// the failure notice or the review notice. The mailer sends each notice
// once, so a repeat changes nothing.
func (h *Handler) settled(ctx context.Context, t *task) error {
	o := t.order
	kind := oracle.MailReview
	if o.Status == oracle.StatusFailed {
		kind = oracle.MailFailed
	}
	if err := h.notify(ctx, o, kind); err != nil {
		return fmt.Errorf("enqueue %s notice: %w", kind, err)
	}
	t.log.InfoContext(ctx, "settled order's notices queued again", "status", string(o.Status), "kind", kind)
	return nil
}
