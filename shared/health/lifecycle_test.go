package health_test

import (
	"testing"
	"time"

	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/health"
)

// TestLifecycle runs one check through sequences of runs and names the
// alerts each run raises: retry before alert is the caller's (a check that
// healed on its retry arrives here ok), this is what runs in a row make.
func TestLifecycle(t *testing.T) {
	cases := []struct {
		name string
		runs []health.Status
		want []string // the alert each run raises, "" for none
	}{
		{"always ok", []health.Status{health.OK, health.OK}, []string{"", ""}},
		{"critical after two runs, one recovery", []health.Status{health.Critical, health.Critical, health.Critical, health.OK, health.OK},
			[]string{"ERROR HEALTH_CHECK_FAILED", "CRITICAL HEALTH_CHECK_FAILED", "", "INFO RECOVERED", ""}},
		{"one failed run then ok", []health.Status{health.Critical, health.OK}, []string{"ERROR HEALTH_CHECK_FAILED", "INFO RECOVERED"}},
		{"degraded once per episode", []health.Status{health.Warn, health.Warn, health.OK, health.Warn},
			[]string{"WARN HEALTH_DEGRADED", "", "INFO RECOVERED", "WARN HEALTH_DEGRADED"}},
		{"degraded then failing escalates", []health.Status{health.Warn, health.Critical, health.Critical, health.Warn, health.OK},
			[]string{"WARN HEALTH_DEGRADED", "ERROR HEALTH_CHECK_FAILED", "CRITICAL HEALTH_CHECK_FAILED", "", "INFO RECOVERED"}},
		{"failures are counted in a row only", []health.Status{health.Critical, health.OK, health.Critical},
			[]string{"ERROR HEALTH_CHECK_FAILED", "INFO RECOVERED", "ERROR HEALTH_CHECK_FAILED"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var st health.CheckState
			now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
			for i, s := range tc.runs {
				var a *alert.Alert
				st, a = health.Next(st, health.Check{Name: "audit_bucket", Status: s, Detail: "x"}, health.DefaultFailCritical, now)
				got := ""
				if a != nil {
					got = string(a.Severity) + " " + string(a.Kind)
					if a.Subject != "audit_bucket" {
						t.Errorf("run %d: alert about %q, want the check's name", i, a.Subject)
					}
				}
				if got != tc.want[i] {
					t.Errorf("run %d (%s): raised %q, want %q", i, s, got, tc.want[i])
				}
				now = now.Add(5 * time.Minute)
			}
		})
	}
}

func TestSummarize(t *testing.T) {
	at := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	r := health.Record{At: at, Overall: health.Warn, Checks: []health.Check{{Name: "orders_table", Status: health.OK}, {Name: "queues", Status: health.Warn}}}
	cases := []struct {
		now     time.Time
		overall health.Status
		want    health.Status
		healthy bool
	}{
		{at.Add(time.Minute), health.Warn, health.Warn, true},
		{at.Add(time.Minute), health.OK, health.OK, true},
		{at.Add(time.Minute), health.Critical, health.Critical, false},
		{at.Add(15 * time.Minute), health.OK, health.OK, true},
		{at.Add(15*time.Minute + time.Second), health.OK, health.Critical, false},
	}
	for _, tc := range cases {
		r.Overall = tc.overall
		s := health.Summarize(r, tc.now, 5*time.Minute)
		if s.Status != tc.want || s.Healthy() != tc.healthy || len(s.Checks) != 2 || s.Checks["queues"] != health.Warn {
			t.Errorf("at +%s with %s: %+v, want %s (healthy %v)", tc.now.Sub(at), tc.overall, s, tc.want, tc.healthy)
		}
	}
}
