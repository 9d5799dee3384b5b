package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"42sisters.ai/oracle/shared/mail"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/store"
)

// The mailer's decisions, as functions of what they decide from: no I/O,
// so each is tested as a table.

// step is what a mail job calls for, given its order.
type step int

const (
	stepSend         step = iota // compose the email and send it
	stepUnknownOrder             // no such order: acknowledge
	stepNotOwed                  // the order is not in the state the email tells of: acknowledge
	stepFollowUps                // the verdict was quarantined: queue its follow-ups again
)

// next is what a mail job of kind calls for when its order is o (found
// false: there is none). Each email is owed only while the order is in
// the state it tells of (store.MailOwed, which the delivery's claim also
// requires); an unknown kind is sent, so that composing it fails loudly.
func next(kind oracle.MailKind, o oracle.Order, found bool) step {
	if !found {
		return stepUnknownOrder
	}
	if oracle.IsAgentOrder(o.SessionID) {
		// An agent paid over x402 has no address to write to.
		return stepNotOwed
	}
	if o.Status == oracle.StatusQuarantined && (kind == oracle.MailVerdict || kind == oracle.MailDivergence) {
		return stepFollowUps
	}
	if !store.MailOwed(kind, o) {
		return stepNotOwed
	}
	return stepSend
}

// outcome is what the result of a send calls for.
type outcome int

const (
	// sent: the delivery is closed with the message id.
	sent outcome = iota
	// retry: the failure may pass; the next attempt of the schedule is
	// queued, due after the wait afterSend returns.
	retry
	// deadLetter: the last attempt of the schedule failed too; the delivery
	// is closed as undeliverable, recorded as a dead letter, and the
	// operator alerted (EMAIL_DEAD_LETTER).
	deadLetter
	// refused: the same message would be refused again; no retry, the
	// delivery is closed as undeliverable, recorded as a dead letter, and
	// the operator alerted (EMAIL_FAILED).
	refused
	// blocked: nothing leaves the account until the operator acts, and
	// then every held email should: the job is parked, its attempt not
	// spent, and the operator alerted (EMAIL_BLOCKED).
	blocked
)

var outcomeNames = [...]string{"sent", "retry", "dead letter", "refused", "blocked"}

func (o outcome) String() string { return outcomeNames[o] }

// afterSend is what attempt (0 for the first) of an email calls for when
// its send returned err, on schedule (the delay before each attempt, the
// first one 0); for a retry, wait is how long until the next attempt: the
// schedule's step, or longer when the server asked for longer (Retry-After).
// A failure no transport classified is retried: the schedule bounds it, and
// its end is a dead letter that the operator hears of.
func afterSend(err error, attempt int, schedule []time.Duration) (o outcome, wait time.Duration) {
	if err == nil {
		return sent, 0
	}
	switch mail.ClassOf(err) {
	case mail.Permanent:
		return refused, 0
	case mail.Blocked:
		return blocked, 0
	}
	next := attempt + 1
	if next >= len(schedule) {
		return deadLetter, 0
	}
	return retry, max(schedule[next], mail.RetryAfter(err))
}

// failureClass names a send failure for records and logs.
func failureClass(err error) string {
	if c := mail.ClassOf(err); c != 0 {
		return c.String()
	}
	return "unclassified"
}

// failureCode is the server's error code, or the HTTP status when it gave
// none, or "" when it did not answer.
func failureCode(err error) string {
	var e *mail.Error
	switch {
	case !errors.As(err, &e):
		return ""
	case e.Code != "":
		return e.Code
	case e.Status != 0:
		return strconv.Itoa(e.Status)
	}
	return ""
}

// parseSchedule reads MAIL_RETRY_SCHEDULE: the delay before each attempt,
// comma-separated Go durations, the first one 0 (attempt 1 goes at once).
func parseSchedule(s string) ([]time.Duration, error) {
	parts := strings.Split(s, ",")
	if len(parts) > maxAttempts {
		return nil, fmt.Errorf("at most %d attempts, got %d", maxAttempts, len(parts))
	}
	out := make([]time.Duration, 0, len(parts))
	for i, p := range parts {
		d, err := time.ParseDuration(strings.TrimSpace(p))
		switch {
		case err != nil:
			return nil, fmt.Errorf("step %d: %q is not a duration such as 5m", i+1, strings.TrimSpace(p))
		case i == 0 && d != 0:
			return nil, fmt.Errorf("the first attempt goes at once: its delay must be 0, got %s", d)
		case d < 0:
			return nil, fmt.Errorf("step %d: a negative delay", i+1)
		}
		out = append(out, d)
	}
	return out, nil
}

// maxAttempts bounds the schedule, so that a typo cannot keep an email
// retrying for days.
const maxAttempts = 10

// DefaultSchedule is SPEC_ORACLE_EMAIL_RETRY's: at once, then 5 minutes,
// 30 minutes and 2 hours after each failure; four attempts, never a fifth.
const DefaultSchedule = "0,5m,30m,2h"
