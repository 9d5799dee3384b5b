package auditfigures

import (
	"context"
	"slices"
	"time"

	"42sisters.ai/oracle/shared/oracle"
)

// SessionLister lists the Checkout Sessions that completed checkout and
// were created in [from, to), with one Stripe key (stripex.Client).
type SessionLister interface {
	CompletedSessions(ctx context.Context, from, to time.Time, each func(oracle.Session) error) error
}

// againstStripe compares the paid sessions counted with Stripe's paid
// sessions created in [from, to), mode by mode.
func (a *accumulator) againstStripe(ctx context.Context, stripe map[bool]SessionLister, from, to time.Time) *StripeCheck {
	c := &StripeCheck{Modes: []string{}, MissingFromLog: []string{}, NotInStripe: []string{}}
	var missing, extra []string
	var logged int64
	for _, live := range []bool{true, false} {
		lister, ok := stripe[live]
		if !ok || lister == nil {
			continue
		}
		c.Modes = append(c.Modes, modeName(live))
		paid := map[string]bool{}
		err := lister.CompletedSessions(ctx, from, to, func(s oracle.Session) error {
			if s.Paid() && !(s.Smoke && !s.Livemode) {
				paid[s.ID] = true
			}
			return nil
		})
		if err != nil {
			return &StripeCheck{Modes: c.Modes, MissingFromLog: []string{}, NotInStripe: []string{},
				Error: "listing Stripe's " + modeName(live) + " sessions: " + err.Error()}
		}
		c.StripePaid += int64(len(paid))
		for id := range paid {
			if a.sessions[id] != nil {
				logged++
			} else {
				missing = append(missing, id)
			}
		}
		for id, s := range a.sessions {
			if s.live == live && !paid[id] {
				extra = append(extra, id)
			}
		}
	}
	c.Logged = ratio(logged, c.StripePaid)
	c.MissingFromLog, c.NotInStripe = shortened(missing), shortened(extra)
	return c
}

func modeName(live bool) string {
	if live {
		return "live"
	}
	return "test"
}

// shortened is ids sorted, in their short form, at most MaxListed.
func shortened(ids []string) []string {
	slices.Sort(ids)
	out := []string{}
	for _, id := range ids[:min(len(ids), MaxListed)] {
		out = append(out, oracle.ShortID(id))
	}
	return out
}
