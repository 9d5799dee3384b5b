// Package health is the health job's record and its alert lifecycle: what a
// run found (every check with its status, duration and detail, the figures
// of the store and the queues) and how consecutive runs turn a failing check
// into alerts (SPEC_ORACLE_CACHE_HEALTH, SPEC_ORACLE_CACHE_ALERT). The
// record holds no session id, no address and no query.
package health

import (
	"fmt"
	"time"
)

// The job's period: its default and the bounds of SPEC_ORACLE_CACHE_HEALTH
// invariant 1. The health endpoint reads the same setting (HEALTH_PERIOD)
// to tell a stale record.
const (
	DefaultPeriod = 5 * time.Minute
	MinPeriod     = 30 * time.Second
	MaxPeriod     = time.Hour
)

// DefaultStuckAfter is how long a PAID or GENERATING order may go without
// progress before it counts as stuck: the health job re-sends its job, and
// the operator's list shows it.
const DefaultStuckAfter = 15 * time.Minute

// CheckPeriod refuses a period outside [MinPeriod, MaxPeriod].
func CheckPeriod(d time.Duration) error {
	if d < MinPeriod || d > MaxPeriod {
		return fmt.Errorf("must be between 30s and 1h, got %s", d)
	}
	return nil
}

// Status is a check's or a run's status.
type Status string

// Statuses, from best to worst.
const (
	OK       Status = "ok"
	Warn     Status = "warn"
	Critical Status = "critical"
)

// worse reports whether s is worse than t.
func (s Status) worse(t Status) bool { return rank[s] > rank[t] }

var rank = map[Status]int{OK: 0, Warn: 1, Critical: 2}

// Check is one check's result in a run.
type Check struct {
	Name       string `json:"name"`
	Status     Status `json:"status"`
	DurationMs int64  `json:"duration_ms"`
	// Detail says what was measured or what failed, without ids or PII.
	Detail string `json:"detail"`
	// Retried is set when the first try failed and the check was tried
	// again after the retry delay; Status is the second try's.
	Retried bool `json:"retried,omitempty"`
}

// Queue is one queue's figures.
type Queue struct {
	Name    string `json:"name"`
	Visible int64  `json:"visible"`
	// InFlight are received and not yet deleted; Delayed wait out a delay.
	InFlight int64 `json:"in_flight"`
	Delayed  int64 `json:"delayed"`
	// OldestAgeSeconds is CloudWatch's ApproximateAgeOfOldestMessage, -1
	// when no datapoint is published yet.
	OldestAgeSeconds int64 `json:"oldest_age_seconds"`
	// NewDeadLetters counts dead letters recorded since the last run (a
	// dead-letter queue only).
	NewDeadLetters int64 `json:"new_dead_letters,omitempty"`
}

// Reconciliation is what a run did about orders left behind.
type Reconciliation struct {
	Stuck          int `json:"stuck"`
	Redelivered    int `json:"redelivered"`
	StillStuck     int `json:"still_stuck"`
	MailResent     int `json:"mail_resent"`
	SessionsListed int `json:"sessions_listed"`
	WebhooksMissed int `json:"webhooks_missed"`
	Reminded       int `json:"reminded"`
}

// Record is one run of the health job.
type Record struct {
	At         time.Time `json:"at"`
	Overall    Status    `json:"overall"`
	DurationMs int64     `json:"duration_ms"`
	Checks     []Check   `json:"checks"`
	// Orders counts the orders in each state the job watches; OrdersTotal
	// is the table's item count as DynamoDB last published it (every six
	// hours or so).
	Orders      map[string]int64 `json:"orders"`
	OrdersTotal int64            `json:"orders_total"`
	// PastTTL counts orders past their retention that DynamoDB's TTL has
	// not deleted yet (it deletes within days): never served.
	PastTTL   int64          `json:"past_ttl"`
	Queues    []Queue        `json:"queues"`
	Reconcile Reconciliation `json:"reconcile"`
	// X402Junk counts, by UTC date (yesterday and today so far), the agent
	// rail's payment headers refused without an audit record each.
	X402Junk map[string]PaymentJunk `json:"x402_junk,omitempty"`
}

// PaymentJunk is one day's count of payment headers that were no payment
// (undecodable) or no well-formed one (malformed).
type PaymentJunk struct {
	Undecodable int64 `json:"undecodable"`
	Malformed   int64 `json:"malformed"`
}

// OverallOf is the worst status of the checks.
func OverallOf(checks []Check) Status {
	overall := OK
	for _, c := range checks {
		if c.Status.worse(overall) {
			overall = c.Status
		}
	}
	return overall
}

// Summary is what the public health endpoint answers: the overall status
// and each check's name and status, nothing more.
type Summary struct {
	Status Status            `json:"status"`
	At     time.Time         `json:"at"`
	Checks map[string]Status `json:"checks"`
	// Stale is set when the latest record is older than three periods:
	// the job itself has stopped, which is critical.
	Stale bool `json:"stale,omitempty"`
}

// Summarize is the endpoint's answer from the latest record, given the
// job's period: critical when the record is older than three periods.
func Summarize(r Record, now time.Time, period time.Duration) Summary {
	s := Summary{Status: r.Overall, At: r.At, Checks: make(map[string]Status, len(r.Checks))}
	for _, c := range r.Checks {
		s.Checks[c.Name] = c.Status
	}
	if now.Sub(r.At) > 3*period {
		s.Status, s.Stale = Critical, true
	}
	return s
}

// Healthy reports whether an uptime monitor should see 200: ok or warn.
func (s Summary) Healthy() bool { return s.Status == OK || s.Status == Warn }
