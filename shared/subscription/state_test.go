package subscription

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// The access rule, state by state, inside and past the period paid for.
func TestGrants(t *testing.T) {
	end := time.Date(2026, 12, 27, 12, 0, 0, 0, time.UTC)
	before, after := end.Add(-time.Second), end
	for _, c := range []struct {
		status        string
		cancel        bool
		before, after bool
	}{
		{Active, false, true, true},
		{Trialing, false, true, true},
		// Stripe is retrying the payment: access is kept meanwhile, within
		// the period the renewal bills.
		{PastDue, false, true, false},
		// Cancelled at the period's end: until then.
		{Active, true, true, false},
		{PastDue, true, true, false},
		// Ended by Stripe: at once, whatever the period says (Stripe ends
		// a cancelled subscription at its period's end, an unpaid one after
		// its last retry).
		{Canceled, false, false, false},
		{Unpaid, false, false, false},
		{IncompleteExpired, false, false, false},
		{Incomplete, false, false, false},
		{Paused, false, false, false},
		{"", false, false, false},
		{"something_new", false, false, false},
	} {
		s := State{Status: c.status, CancelAtPeriodEnd: c.cancel, PeriodEnd: end}
		if got := s.Grants(before); got != c.before {
			t.Errorf("%s (cancel %v) before the period's end: Grants = %v", c.status, c.cancel, got)
		}
		if got := s.Grants(after); got != c.after {
			t.Errorf("%s (cancel %v) at the period's end: Grants = %v", c.status, c.cancel, got)
		}
	}
}

// The order of states: a later created second wins whatever it says;
// within one second, a later period, then a later status, then a
// scheduled cancellation, then the event id.
func TestOrder(t *testing.T) {
	at := time.Unix(1_800_000_000, 0)
	p1, p2 := at.Add(30*24*time.Hour), at.Add(61*24*time.Hour)
	st := func(created time.Time, end time.Time, status string, cancel bool, id string) State {
		return State{EventCreated: created, PeriodEnd: end, Status: status, CancelAtPeriodEnd: cancel, EventID: id}
	}
	for _, c := range []struct {
		name         string
		older, newer State
	}{
		{"a later second, even back to active", st(at, p1, Canceled, false, "evt_b"), st(at.Add(time.Second), p1, Active, false, "evt_a")},
		{"a later second, across a digit count", st(time.Unix(999_999_999, 0), p1, Active, false, "evt_a"), st(time.Unix(1_000_000_000, 0), p1, Active, false, "evt_a")},
		{"the same second, a later period", st(at, p1, PastDue, false, "evt_b"), st(at, p2, Active, false, "evt_a")},
		{"the same second, active then past due", st(at, p1, Active, false, "evt_b"), st(at, p1, PastDue, false, "evt_a")},
		{"the same second, past due then canceled", st(at, p1, PastDue, false, "evt_b"), st(at, p1, Canceled, false, "evt_a")},
		{"the same second, incomplete then active", st(at, p1, Incomplete, false, "evt_b"), st(at, p1, Active, false, "evt_a")},
		{"the same second, cancellation scheduled", st(at, p1, Active, false, "evt_b"), st(at, p1, Active, true, "evt_a")},
		{"all else equal, the event id", st(at, p1, Active, false, "evt_a"), st(at, p1, Active, false, "evt_b")},
	} {
		if !(c.older.order() < c.newer.order()) {
			t.Errorf("%s: %q is not before %q", c.name, c.older.order(), c.newer.order())
		}
	}
}

// stripeID takes exactly what `^<prefix>[A-Za-z0-9_]{1,250}$` takes.
func TestStripeIDIsTheIDForm(t *testing.T) {
	for _, prefix := range []string{"sub_", "cus_", "evt_"} {
		form := regexp.MustCompile(`^` + prefix + `[A-Za-z0-9_]{1,250}$`)
		for _, id := range []string{
			prefix, prefix + "a", prefix + "1MZ_x9", prefix + strings.Repeat("z", 250), prefix + strings.Repeat("z", 251),
			prefix + "a-b", prefix + "a b", prefix + "é", prefix + "a\n", "x" + prefix + "a", strings.ToUpper(prefix) + "a",
			"sub_a", "cus_a", "evt_a", "", prefix + "a\x00", prefix + "Z09_",
		} {
			if got, want := stripeID(prefix, id), form.MatchString(id); got != want {
				t.Errorf("stripeID(%q, %q) = %v, the form says %v", prefix, id, got, want)
			}
		}
	}
}
