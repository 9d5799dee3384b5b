package health

import (
	"fmt"
	"time"

	"42sisters.ai/oracle/shared/alert"
)

// CheckState is what the Ledger keeps of one check between runs: the
// consecutive runs it failed, the worst alert raised since it was last ok
// (empty: none), and when the episode began.
type CheckState struct {
	Failures int            `dynamodbav:"failures"`
	Alerted  alert.Severity `dynamodbav:"alerted,omitempty"`
	Since    time.Time      `dynamodbav:"since,omitempty"`
}

// DefaultFailCritical is how many runs in a row a check fails before the
// alert is CRITICAL (SPEC_ORACLE_CACHE_HEALTH's
// CACHE_CONSECUTIVE_FAIL_CRITICAL).
const DefaultFailCritical = 2

var severityRank = map[alert.Severity]int{"": 0, alert.Info: 0, alert.Warn: 1, alert.Error: 2, alert.Critical: 3}

// Next is a check's state after a run that found c, and the alert the run
// raises about it, if any:
//   - failing (critical) runs are counted: the first raises ERROR, the
//     failCritical-th in a row CRITICAL, and the runs between and after
//     raise nothing more;
//   - a degraded (warn) run raises WARN once per episode;
//   - the first ok run after an alert raises one RECOVERED notice.
//
// A check that passed on its retry within the run has already counted as
// its second try's status: a failure that heals within the retry delay
// raises nothing (CACHE_ALERT's retry before alert).
func Next(prev CheckState, c Check, failCritical int, now time.Time) (CheckState, *alert.Alert) {
	if failCritical < 1 {
		failCritical = DefaultFailCritical
	}
	switch c.Status {
	case OK:
		if severityRank[prev.Alerted] == 0 {
			return CheckState{}, nil
		}
		return CheckState{}, &alert.Alert{Severity: alert.Info, Kind: alert.Recovered, Subject: c.Name,
			Detail: fmt.Sprintf("%s passes again (failing or degraded since %s): %s", c.Name, prev.Since.UTC().Format(time.RFC3339), c.Detail)}
	case Warn:
		next := CheckState{Alerted: prev.Alerted, Since: prev.Since}
		if next.Since.IsZero() {
			next.Since = now
		}
		if severityRank[prev.Alerted] > 0 {
			return next, nil
		}
		next.Alerted = alert.Warn
		return next, &alert.Alert{Severity: alert.Warn, Kind: alert.HealthDegraded, Subject: c.Name, Detail: c.Name + " degraded: " + c.Detail}
	}
	next := CheckState{Failures: prev.Failures + 1, Alerted: prev.Alerted, Since: prev.Since}
	if next.Since.IsZero() {
		next.Since = now
	}
	sev := alert.Error
	if next.Failures >= failCritical {
		sev = alert.Critical
	}
	if severityRank[sev] <= severityRank[prev.Alerted] {
		return next, nil
	}
	next.Alerted = sev
	return next, &alert.Alert{Severity: sev, Kind: alert.HealthCheckFailed, Subject: c.Name,
		Detail: fmt.Sprintf("%s failed on %d run(s) in a row: %s", c.Name, next.Failures, c.Detail)}
}
