package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/health"
	"42sisters.ai/oracle/shared/stripex"
	"42sisters.ai/oracle/shared/subscription"
)

// ChatBilling lists the chat's subscriptions with one Stripe key
// (stripex.Billing).
type ChatBilling interface {
	ChatSubscriptions(ctx context.Context, endedSince time.Time, each func(stripex.Subscription) error) error
}

// ChatSubscriptions reads and repairs the stored subscriptions
// (subscription.Store).
type ChatSubscriptions interface {
	Get(ctx context.Context, account, id string) (subscription.State, bool, error)
	Apply(ctx context.Context, st subscription.State) (subscription.State, bool, error)
}

// SubscriptionReconciler compares the chat's subscriptions Stripe has not
// ended, and those it cancelled within EndedWindow, with the chat table, as
// Reconciler compares paid sessions with the orders: a subscription the
// table lacks, or holds in another status, period or cancellation, is
// stored as Stripe has it (an event was lost or refused) and alerted once.
type SubscriptionReconciler struct {
	Billing map[bool]ChatBilling // by livemode; a mode without a key is absent
	Store   ChatSubscriptions
	Ledger  Ledger
	Alerts  Alerter
	Log     *slog.Logger
	Now     func() time.Time
}

// EndedWindow is how far back the reconciliation looks at subscriptions
// Stripe cancelled, by the end of their last period: a cancellation whose
// event was lost within it is repaired on the next run (the job runs every
// few minutes), however long ago the table's state was stored.
const EndedWindow = 35 * 24 * time.Hour

// repairAlertTTL is how long a repair is remembered as alerted: a
// subscription repaired to the same state again within it (its events
// keep failing) is not alerted again.
const repairAlertTTL = 35 * 24 * time.Hour

// Run reconciles the subscriptions and returns the check
// "chat_subscriptions": OK, WARN when it repaired one or found one naming
// no account, or the Price under the chat's lookup key is another price,
// CRITICAL when Stripe or the table could not be read. Without
// the chat's Price in Stripe (make chat-price not run yet) there is no
// subscription to reconcile: OK, and the detail says so.
func (r *SubscriptionReconciler) Run(ctx context.Context) health.Check {
	start := r.Now()
	c := health.Check{Name: "chat_subscriptions", Status: health.OK}
	listed, repaired, unknown, err := r.reconcile(ctx)
	switch {
	case errors.Is(err, stripex.ErrNoChatPrice):
		c.Detail = "nothing to reconcile: " + err.Error()
	case errors.Is(err, stripex.ErrChatPrice):
		c.Status, c.Detail = health.Warn, err.Error()
	case err != nil:
		c.Status, c.Detail = health.Critical, err.Error()
	default:
		c.Detail = fmt.Sprintf("%d chat subscription(s) in Stripe (live or ended lately), %d repaired from Stripe's state, %d naming no account", listed, repaired, unknown)
		if repaired > 0 || unknown > 0 {
			c.Status = health.Warn
		}
	}
	c.DurationMs = r.Now().Sub(start).Milliseconds()
	return c
}

func (r *SubscriptionReconciler) reconcile(ctx context.Context) (listed, repaired, unknown int, err error) {
	var errs []error
	for _, live := range []bool{true, false} {
		b, ok := r.Billing[live]
		if !ok {
			continue
		}
		// Stripe's state as of the listing's start: an event made after it
		// is newer and wins over the repair (Apply's order), one made before
		// it is in what the listing shows.
		asOf := r.Now().Truncate(time.Second)
		err := b.ChatSubscriptions(ctx, asOf.Add(-EndedWindow), func(s stripex.Subscription) error {
			listed++
			fixed, known, err := r.one(ctx, s, asOf)
			if err != nil {
				errs = append(errs, fmt.Errorf("subscription %s: %w", s.ID, err))
			}
			if fixed {
				repaired++
			}
			if !known {
				unknown++
			}
			return nil
		})
		if err != nil {
			return listed, repaired, unknown, fmt.Errorf("list the chat subscriptions: %w", err)
		}
	}
	return listed, repaired, unknown, errors.Join(errs...)
}

// one compares a subscription with the stored state and repairs it.
func (r *SubscriptionReconciler) one(ctx context.Context, s stripex.Subscription, asOf time.Time) (repaired, known bool, err error) {
	if !subscription.ValidAccount(s.Account) {
		return false, false, r.alertOnce(ctx, alert.ChatSubscriptionUnknown, s, "has no chat account in its metadata")
	}
	// Each subscription has its own state: a second one of the account
	// is repaired beside the first, never in its place.
	stored, found, err := r.Store.Get(ctx, s.Account, s.ID)
	if err != nil {
		return false, true, err
	}
	if found && (stored.EventCreated.After(asOf) ||
		stored.Status == s.Status && stored.PeriodEnd.Equal(s.PeriodEnd) && stored.CancelAtPeriodEnd == s.CancelAtPeriodEnd) {
		return false, true, nil
	}
	st := subscription.State{Account: s.Account, ID: s.ID, Customer: s.Customer, Status: s.Status, PeriodEnd: s.PeriodEnd,
		CancelAtPeriodEnd: s.CancelAtPeriodEnd, EventCreated: asOf, EventID: "evt_reconcile_" + strconv.FormatInt(asOf.Unix(), 10)}
	_, applied, err := r.Store.Apply(ctx, st)
	switch {
	case errors.Is(err, subscription.ErrNoAccount) && subscription.Ended(s.Status):
		// Ended, for an account that is gone (erased, its subscription
		// cancelled first): nothing is charged, nothing to repair.
		return false, true, nil
	case errors.Is(err, subscription.ErrNoAccount), errors.Is(err, subscription.ErrOtherAccount):
		return false, false, r.alertOnce(ctx, alert.ChatSubscriptionUnknown, s, "names an account that does not exist, or not its own: "+err.Error())
	case err != nil:
		return false, true, err
	case !applied:
		return false, true, nil // an event stored a newer state meanwhile
	}
	was := "nothing"
	if found {
		was = fmt.Sprintf("%s until %s (cancel at period end %t)", stored.Status, stored.PeriodEnd.Format(time.RFC3339), stored.CancelAtPeriodEnd)
	}
	r.Log.WarnContext(ctx, "chat subscription repaired from Stripe's state", "subscription", s.ID, "status", s.Status)
	return true, true, r.alertOnce(ctx, alert.ChatSubscriptionRepaired, s, "was stored as "+was+"; stored Stripe's state")
}

// alertOnce raises kind about s once per subscription and state.
func (r *SubscriptionReconciler) alertOnce(ctx context.Context, kind alert.Kind, s stripex.Subscription, why string) error {
	key := fmt.Sprintf("chatreconcile#%s#%s#%s#%d#%t", kind, s.ID, s.Status, s.PeriodEnd.Unix(), s.CancelAtPeriodEnd)
	first, err := r.Ledger.Mark(ctx, key, repairAlertTTL)
	if err != nil {
		return err
	}
	if !first {
		return nil
	}
	severity := alert.Warn
	if kind == alert.ChatSubscriptionUnknown {
		severity = alert.Error
	}
	r.Alerts.Raise(ctx, alert.Alert{Severity: severity, Kind: kind, Subject: s.ID,
		Detail: fmt.Sprintf("Stripe has subscription %s %s until %s (cancel at period end %t); it %s",
			s.ID, s.Status, s.PeriodEnd.UTC().Format(time.RFC3339), s.CancelAtPeriodEnd, why)})
	return nil
}
