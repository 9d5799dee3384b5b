package fakestripe

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"42sisters.ai/oracle/infra/fakes/fakecontrol"
)

// Subscriptions are billed when the fake's time passes their moments: a
// period's end (the renewal, or the end of a subscription cancelled at the
// period's end) and an invoice's payment attempts. The fake's time is
// Options.Clock plus what POST /_clock added, so billing happens only when
// the clock is advanced, every moment passed in order, each event created
// at its moment.

// clockRequest is the body of POST /_clock: exactly one of the two.
type clockRequest struct {
	// Advance is a Go duration, such as "72h", to move the clock by.
	Advance string `json:"advance,omitempty"`
	// NextPeriod moves the clock to the earliest current_period_end of the
	// live subscriptions, plus the hour a renewal's invoice is a draft, so
	// that the renewal is charged.
	NextPeriod bool `json:"next_period,omitempty"`
}

// clockAnswer is what GET and POST /_clock answer.
type clockAnswer struct {
	Now     int64    `json:"now"`      // the fake's time, Unix seconds
	OffsetS int64    `json:"offset_s"` // how far ahead of Options.Clock it is
	Events  []string `json:"events"`   // the events the advance made, in order
}

// maxAdvance bounds one advance.
const maxAdvance = 5 * 366 * 24 * time.Hour

// handleClock serves GET /_clock (the time) and POST /_clock (advance it).
// The advance's events are delivered before it answers, shaped by the
// pending Control as a payment's are.
func (s *Server) handleClock(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet {
		s.writeJSON(w, http.StatusOK, clockAnswer{Now: s.now().Unix(), OffsetS: s.offset.Load() / int64(time.Second), Events: []string{}})
		return
	}
	req, err := fakecontrol.Decode[clockRequest](http.MaxBytesReader(w, r.Body, 4<<10))
	if err != nil {
		writeAPIError(w, invalidParam("", "", "Invalid clock request: %v", err))
		return
	}
	s.mu.Lock()
	target, err := s.clockTarget(req)
	var made []*event
	if err == nil {
		made, err = s.advanceTo(target)
	}
	var c Control
	if len(made) > 0 {
		c = s.takeControl()
	}
	s.mu.Unlock()
	if err != nil {
		s.writeAnswer(w, s.errorResponse(err))
		return
	}
	s.deliverAll(context.WithoutCancel(r.Context()), c, made)
	ans := clockAnswer{Now: s.now().Unix(), OffsetS: s.offset.Load() / int64(time.Second), Events: make([]string, len(made))}
	for i, ev := range made {
		ans.Events[i] = ev.id
	}
	s.log.Info("fakestripe: clock advanced", "now", time.Unix(ans.Now, 0).UTC(), "events", len(made))
	s.writeJSON(w, http.StatusOK, ans)
}

// clockTarget is the time a clock request asks for. The caller holds s.mu.
func (s *Server) clockTarget(req clockRequest) (time.Time, error) {
	now := s.now()
	switch {
	case req.NextPeriod && req.Advance != "":
		return now, invalidParam("", "", "Give either advance or next_period, not both.")
	case req.NextPeriod:
		var ends []int64
		for _, sub := range s.subscriptions {
			if sub.s.Status != subCanceled {
				ends = append(ends, sub.s.CurrentPeriodEnd)
			}
		}
		if len(ends) == 0 {
			return now, invalidParam("", "next_period", "There is no live subscription whose period could end.")
		}
		return time.Unix(slices.Min(ends), 0).Add(finalizeDelay), nil
	case req.Advance != "":
		d, err := time.ParseDuration(req.Advance)
		if err != nil || d <= 0 || d > maxAdvance {
			return now, invalidParam("", "advance", "Invalid advance: a positive Go duration up to %v, such as \"72h\", got %q.", maxAdvance, clip(req.Advance))
		}
		return now.Add(d), nil
	}
	return now, invalidParam("", "", "Give advance (a duration such as \"72h\") or next_period.")
}

// setTime moves the fake's time to t, never backwards. The caller holds s.mu.
func (s *Server) setTime(t time.Time) {
	if t.After(s.now()) {
		s.offset.Store(int64(t.Sub(s.wall())))
	}
}

// advanceTo passes every billing moment up to target in order, then sets
// the time to target. It returns the events made. The caller holds s.mu.
func (s *Server) advanceTo(target time.Time) ([]*event, error) {
	var made []*event
	for {
		sub, at := s.nextMoment(target)
		if sub == nil {
			break
		}
		s.setTime(at)
		evs, err := s.bill(sub)
		made = append(made, evs...)
		if err != nil {
			return made, fmt.Errorf("bill subscription %s: %w", sub.s.ID, err)
		}
	}
	s.setTime(target)
	return made, nil
}

// moment is when sub next needs billing, and whether it does: its pending
// invoice's next attempt, else its period's end. A subscription whose
// invoice is still being tried renews only once that invoice is settled;
// an unpaid one renews no more, and ends at its period's end only when
// cancelled.
func moment(sub *subscriptionRecord) (time.Time, bool) {
	switch {
	case sub.s.Status == subCanceled:
		return time.Time{}, false
	case sub.pending != nil:
		return sub.pending.nextAttempt, true
	case sub.s.Status == subUnpaid && !sub.s.CancelAtPeriodEnd:
		return time.Time{}, false
	}
	return time.Unix(sub.s.CurrentPeriodEnd, 0), true
}

// nextMoment is the subscription with the earliest moment at or before
// target, ties broken by creation and id so that runs repeat exactly.
func (s *Server) nextMoment(target time.Time) (*subscriptionRecord, time.Time) {
	var best *subscriptionRecord
	var bestAt time.Time
	for _, sub := range slices.SortedFunc(maps.Values(s.subscriptions), func(a, b *subscriptionRecord) int {
		return cmp.Or(cmp.Compare(a.s.Created, b.s.Created), strings.Compare(a.s.ID, b.s.ID))
	}) {
		at, ok := moment(sub)
		if ok && !at.After(target) && (best == nil || at.Before(bestAt)) {
			best, bestAt = sub, at
		}
	}
	return best, bestAt
}

// bill does what sub's moment calls for: charge its pending invoice, end
// it, or renew it. The caller holds s.mu.
func (s *Server) bill(sub *subscriptionRecord) ([]*event, error) {
	if sub.pending != nil {
		return s.attempt(sub)
	}
	if sub.s.CancelAtPeriodEnd {
		ev, err := s.end(sub, cancelRequested, eventRequest{})
		if err != nil {
			return nil, err
		}
		return []*event{ev}, nil
	}
	return s.renew(sub)
}

// renew starts sub's next period with a draft invoice for it, charged an
// hour later: customer.subscription.updated.
func (s *Server) renew(sub *subscriptionRecord) ([]*event, error) {
	previous := map[string]any{
		"current_period_end":   sub.s.CurrentPeriodEnd,
		"current_period_start": sub.s.CurrentPeriodStart,
		"latest_invoice":       sub.s.LatestInvoice,
	}
	prevStart, prevEnd := time.Unix(sub.s.CurrentPeriodStart, 0), time.Unix(sub.s.CurrentPeriodEnd, 0)
	sub.periods++
	anchor := time.Unix(sub.s.BillingCycleAnchor, 0).UTC()
	sub.s.CurrentPeriodStart = prevEnd.Unix()
	sub.s.CurrentPeriodEnd = addInterval(anchor, sub.recurring, sub.periods+1).Unix()
	inv, err := s.newInvoice(sub, reasonCycle, prevStart, prevEnd)
	if err != nil {
		return nil, err
	}
	inv.nextAttempt = s.now().Add(finalizeDelay)
	sub.pending = inv
	ev, err := s.subEvent(eventSubUpdated, sub, previous, eventRequest{})
	if err != nil {
		return nil, err
	}
	s.log.Info("fakestripe: subscription renewed", "subscription", sub.s.ID, "invoice", inv.i.ID, "period_end", time.Unix(sub.s.CurrentPeriodEnd, 0).UTC())
	return []*event{ev}, nil
}

// attempt charges sub's pending invoice, declined while Renewals says so.
// Paid: invoice.paid, and a past_due subscription is active again.
// Declined: invoice.payment_failed, the subscription past_due, and after
// the last attempt what Renewals.AfterRetries says.
func (s *Server) attempt(sub *subscriptionRecord) ([]*event, error) {
	inv := sub.pending
	s.finalize(inv)
	ok := s.renewals.FailRenewals == 0
	if !ok {
		s.renewals.FailRenewals--
	}
	if err := s.charge(sub, inv, ok); err != nil {
		return nil, err
	}
	s.log.Info("fakestripe: invoice charged", "invoice", inv.i.ID, "subscription", sub.s.ID, "paid", ok, "attempt", inv.i.AttemptCount)
	if ok {
		sub.pending = nil
		ev, err := s.invoiceEvent(eventInvoicePaid, sub, inv)
		if err != nil {
			return nil, err
		}
		more, err := s.setStatus(sub, subActive)
		return append([]*event{ev}, more...), err
	}

	last := int(inv.i.AttemptCount) > len(retryDelays)
	if last {
		sub.pending, inv.i.NextPaymentAttempt = nil, nil
	} else {
		inv.nextAttempt = s.now().Add(retryDelays[inv.i.AttemptCount-1])
		next := inv.nextAttempt.Unix()
		inv.i.NextPaymentAttempt = &next
	}
	ev, err := s.invoiceEvent(eventInvoiceFailed, sub, inv)
	if err != nil {
		return nil, err
	}
	evs := []*event{ev}
	after := cmp.Or(s.renewals.AfterRetries, subCanceled)
	switch {
	case !last:
		more, err := s.setStatus(sub, subPastDue)
		return append(evs, more...), err
	case after == subCanceled:
		sub.s.CancelAtPeriodEnd = false
		ev, err := s.end(sub, cancelPaymentFailed, eventRequest{})
		return append(evs, ev), err
	default:
		more, err := s.setStatus(sub, after)
		return append(evs, more...), err
	}
}

// deliverAll delivers events as c shapes a payment's: in order, or
// reversed when c.Reorder is set, each duplicated as c says.
func (s *Server) deliverAll(ctx context.Context, c Control, events []*event) {
	order := events
	if c.Reorder {
		order = slices.Clone(events)
		slices.Reverse(order)
	}
	for _, ev := range order {
		s.deliver(ctx, c, ev)
	}
}
