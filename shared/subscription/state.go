// Package subscription keeps Sisters Chat's subscriptions: the state
// Stripe's events last said of each (stored in the chat table under its
// account, never regressing when events arrive out of order or twice),
// and the rule by which a state grants the chat.
package subscription

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// Stripe's subscription statuses (API version 2023-10-16).
const (
	Incomplete        = "incomplete"
	IncompleteExpired = "incomplete_expired"
	Trialing          = "trialing"
	Active            = "active"
	PastDue           = "past_due"
	Unpaid            = "unpaid"
	Canceled          = "canceled"
	Paused            = "paused"
)

// rank orders the statuses as a subscription's life passes through them
// within one period: it breaks ties between events created in the same
// second (Stripe's created has whole seconds). A subscription starts
// incomplete (or trialing), is active, falls past_due when a renewal's
// payment fails, and ends unpaid, paused or canceled; incomplete_expired
// ends one that never started. A later rank is the later state. The one
// step back it cannot see, past_due to active when a retry succeeds, comes
// a retry's delay (days) after the failure, never in its second.
var rank = map[string]int{
	Incomplete:        0,
	Trialing:          1,
	Active:            2,
	PastDue:           3,
	Paused:            4,
	Unpaid:            4,
	Canceled:          5,
	IncompleteExpired: 5,
}

// Ended reports whether Stripe has ended a subscription of status for
// good (canceled, incomplete_expired): it charges nothing more.
func Ended(status string) bool { return status == Canceled || status == IncompleteExpired }

// KnownStatus reports whether status is one of Stripe's.
func KnownStatus(status string) bool {
	_, ok := rank[status]
	return ok
}

// State is a subscription as the newest applied event of Stripe's left it.
type State struct {
	// Account is the chat account it belongs to (audit.Hasher.Email).
	Account string
	// ID and Customer are Stripe's (sub_…, cus_…).
	ID       string
	Customer string
	// Status is Stripe's subscription status.
	Status string
	// PeriodEnd is the end of the period paid for (current_period_end).
	PeriodEnd time.Time
	// CancelAtPeriodEnd: the subscription ends at PeriodEnd.
	CancelAtPeriodEnd bool
	// CancelUnknown marks a state read from an invoice, which does not say
	// whether the subscription is to end: the stored CancelAtPeriodEnd is
	// kept (false when none is stored).
	CancelUnknown bool
	// EventCreated and EventID name the event the state was read from.
	EventCreated time.Time
	EventID      string
}

// Grants reports whether the state gives the chat at now: active and
// trialing grant, a subscription to be cancelled until its period's end;
// past_due grants while Stripe retries the renewal's payment, within the
// period it bills; canceled, unpaid and incomplete_expired grant nothing.
// Stripe ends a subscription itself, at the period's end for one the person
// cancelled and after the last retry for one that could not be paid, so its
// status, not our clock, says when a paid period is over: a status that
// ends access comes when that period has ended (an immediate cancellation
// is the operator's, with a refund), and a Stripe test clock or the local
// fake, whose time runs ahead of ours, ends access when it says so.
func (s State) Grants(now time.Time) bool {
	inPeriod := now.Before(s.PeriodEnd)
	switch s.Status {
	case Active, Trialing:
		return !s.CancelAtPeriodEnd || inPeriod
	case PastDue:
		return inPeriod
	}
	return false
}

var accountForm = regexp.MustCompile(`^hmac-sha256:[0-9a-f]{32}$`)

// stripeID reports whether id is prefix and 1 to 250 of [A-Za-z0-9_]: the
// form of Stripe's ids. Not a regular expression: `{1,250}` compiles into
// 250 nested copies, about 0.3 ms and 2,800 allocations each at every cold
// start of the functions that link this package.
func stripeID(prefix, id string) bool {
	rest, ok := strings.CutPrefix(id, prefix)
	if !ok || len(rest) < 1 || len(rest) > 250 {
		return false
	}
	for _, c := range []byte(rest) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// ValidID reports whether id has the form of a subscription's id.
func ValidID(id string) bool { return stripeID("sub_", id) }

// ValidAccount reports whether account has the form of an account's name
// (a keyed hash of its address).
func ValidAccount(account string) bool { return accountForm.MatchString(account) }

// Validate checks that s can be stored: every id in its form, a known
// status, an event and, unless it ends with nothing paid for, a period.
func (s State) Validate() error {
	switch {
	case !ValidAccount(s.Account):
		return fmt.Errorf("subscription state: invalid account")
	case !ValidID(s.ID):
		return fmt.Errorf("subscription state: invalid subscription id")
	case s.Customer != "" && !stripeID("cus_", s.Customer):
		return fmt.Errorf("subscription state of %s: invalid customer id", s.ID)
	case !KnownStatus(s.Status):
		return fmt.Errorf("subscription state of %s: unknown status %.40q", s.ID, s.Status)
	case !stripeID("evt_", s.EventID) || s.EventCreated.Unix() <= 0:
		return fmt.Errorf("subscription state of %s: no event", s.ID)
	case s.PeriodEnd.Unix() < 0:
		return fmt.Errorf("subscription state of %s: negative period end", s.ID)
	}
	return nil
}

// order is the key by which a state is newer than another: the event's
// created second, then (for events of one second) the period's end, the
// status's rank, a cancellation scheduled after one not, and last the
// event's id, so that the same events give the same state in any order of
// arrival. Fixed-width numbers make the strings compare as the tuples do.
func (s State) order() string {
	cancel := 0
	if s.CancelAtPeriodEnd && !s.CancelUnknown {
		cancel = 1
	}
	return fmt.Sprintf("%012d#%012d#%d#%d#%s", s.EventCreated.Unix(), max(s.PeriodEnd.Unix(), 0), rank[s.Status], cancel, s.EventID)
}

// Current is the subscription of states (an account's) that says what the
// account has at now: one that grants the chat, since access lasts while
// any does (of several, the one paid furthest ahead); when none grants,
// the one of the newest event. found is false when states is empty.
func Current(states []State, now time.Time) (current State, found bool) {
	for _, st := range states {
		switch {
		case !found:
		case st.Grants(now) != current.Grants(now):
			if !st.Grants(now) {
				continue
			}
		case st.Grants(now) && !st.PeriodEnd.Equal(current.PeriodEnd):
			if st.PeriodEnd.Before(current.PeriodEnd) {
				continue
			}
		case st.order() <= current.order():
			continue
		}
		current, found = st, true
	}
	return current, found
}
