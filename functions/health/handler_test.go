package main

import (
	"context"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/health"
	"42sisters.ai/oracle/shared/obs"
	"42sisters.ai/oracle/shared/store"
)

// lifecycleEnv is a health job whose one check writes to the audit bucket
// through a fault-injecting transport in front of moto, keeping its state
// in the Ledger and alerting through the real topic.
type lifecycleEnv struct {
	h      *Handler
	fault  *testkit.Faulty
	clock  *testkit.Clock
	alerts func() []string
	ledger *store.Ledger
	// healOnRetry brings the bucket back while the run waits to retry.
	healOnRetry bool
}

func newLifecycleEnv(t *testing.T) *lifecycleEnv {
	t.Helper()
	f := provision.ForTest(t, nil)
	e := &lifecycleEnv{fault: &testkit.Faulty{}, clock: testkit.NewClock(time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC))}
	bucket := s3.NewFromConfig(f.AWS, func(o *s3.Options) {
		o.UsePathStyle = true
		o.HTTPClient = &http.Client{Transport: e.fault}
		o.RetryMaxAttempts = 1
	})
	db := awsenv.NewTables(f.AWS)
	e.ledger = store.NewLedger(db, f.Ref("LedgerTable"), e.clock.Now)
	log := obs.NewLogger(&testkit.Buffer{}, "DEBUG")
	e.alerts = testkit.AlertTap(t, f.AWS, f.Ref("AlertsTopic"), provision.TestRegion, provision.Account)
	e.h = &Handler{
		Checks:  []Check{auditCheck(audit.NewWriter(bucket, f.Ref("AuditBucket")), e.clock.Now)},
		States:  e.ledger,
		Alerts:  &alert.Alerter{SNS: awsenv.NewTopics(f.AWS), Topic: f.Ref("AlertsTopic"), Timeout: testAlertTimeout, Dedupe: e.ledger, Log: log, Now: e.clock.Now},
		Metrics: &testkit.Metrics{}, Log: log, Now: e.clock.Now,
		Sleep: func(_ context.Context, d time.Duration) error {
			e.clock.Add(d)
			if e.healOnRetry {
				e.fault.Up()
			}
			return nil
		},
		RetryDelay: 5 * time.Second, FailCritical: health.DefaultFailCritical, History: time.Hour,
	}
	return e
}

// run is one scheduled run, a period after the last; it returns the
// alerts it published.
func (e *lifecycleEnv) run(t *testing.T) (health.Record, []string) {
	t.Helper()
	e.alerts() // drains what came before
	e.clock.Add(DefaultPeriod)
	rec, err := e.h.Handle(context.Background(), nil)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	// moto delivers from SNS to the tap's queue as it publishes.
	return rec, e.alerts()
}

// TestFailingDependencyIsCriticalAfterTwoRunsAndRecoversOnce is
// CACHE_HEALTH VC-2 and CACHE_ALERT VC-1 and VC-3: the audit bucket
// unreachable is ERROR on the first run (after its retry), CRITICAL on the
// second, silent on the third; when it heals, one RECOVERED notice.
func TestFailingDependencyIsCriticalAfterTwoRunsAndRecoversOnce(t *testing.T) {
	e := newLifecycleEnv(t)
	e.fault.Down()
	want := []struct {
		down   bool
		status health.Status
		alert  string // "" for none
	}{
		{true, health.Critical, "ERROR | "},
		{true, health.Critical, "CRITICAL | "},
		{true, health.Critical, ""},
		{false, health.OK, "INFO | "},
		{false, health.OK, ""},
	}
	for i, w := range want {
		if w.down {
			e.fault.Down()
		} else {
			e.fault.Up()
		}
		refusedBefore := e.fault.Refused()
		rec, alerts := e.run(t)
		c := rec.Checks[0]
		if c.Status != w.status || rec.Overall != w.status {
			t.Fatalf("run %d: check %+v overall %s, want %s", i+1, c, rec.Overall, w.status)
		}
		if w.down && (!c.Retried || e.fault.Refused()-refusedBefore < 2) {
			t.Errorf("run %d: the failing check was not tried again before it counted (%+v)", i+1, c)
		}
		switch {
		case w.alert == "" && len(alerts) != 0:
			t.Errorf("run %d: raised %q, want nothing", i+1, alerts)
		case w.alert != "" && (len(alerts) != 1 || !strings.Contains(alerts[0], w.alert) || !strings.Contains(alerts[0], "audit_bucket")):
			t.Errorf("run %d: raised %q, want one %q about audit_bucket", i+1, alerts, w.alert)
		}
	}
}

// TestFailureHealedWithinTheRetryDelayRaisesNothing is CACHE_ALERT's retry
// before alert (invariant 2, VC-2): the first try fails, the retry after
// HEALTH_RETRY_DELAY passes, and no alert is raised; the record says so.
func TestFailureHealedWithinTheRetryDelayRaisesNothing(t *testing.T) {
	e := newLifecycleEnv(t)
	e.healOnRetry = true
	e.fault.Down()
	rec, alerts := e.run(t)
	c := rec.Checks[0]
	if c.Status != health.OK || !c.Retried || !strings.Contains(c.Detail, "passed on its retry") {
		t.Fatalf("check %+v, want ok on its retry", c)
	}
	if len(alerts) != 0 {
		t.Fatalf("a failure that healed within the retry delay raised %q", alerts)
	}
	if _, alerts = e.run(t); len(alerts) != 0 {
		t.Fatalf("the next run raised %q", alerts)
	}
}

// TestTheRunIsKeptAndCounted: each run's record is the latest in the
// Ledger (what GET /api/health reads) and counts HealthRuns, which the
// missing-runs alarm watches.
func TestTheRunIsKeptAndCounted(t *testing.T) {
	e := newLifecycleEnv(t)
	rec, _ := e.run(t)
	latest, found, err := e.ledger.LatestHealth(context.Background())
	if err != nil || !found || !latest.At.Equal(rec.At) || len(latest.Checks) != 1 || latest.Checks[0].Name != "audit_bucket" {
		t.Fatalf("latest %+v %v %v, want the run's record", latest, found, err)
	}
	if n := e.h.Metrics.(*testkit.Metrics).Counts()["HealthRuns"]; n != 1 {
		t.Fatalf("HealthRuns %v, want 1", n)
	}
}

// TestOnlyAFailedDependencyIsTriedAgain: a critical check is tried again
// after the retry delay; a warning (a dependency that answered) and a
// finding (new dead letters, a verdict sample), whose second try would
// lose or redraw what the first found, are not.
func TestOnlyAFailedDependencyIsTriedAgain(t *testing.T) {
	calls := map[string]int{}
	check := func(name string, status health.Status, finding bool) Check {
		return Check{Name: name, Finding: finding, Run: func(context.Context, *health.Record) (health.Status, string, error) {
			calls[name]++
			return status, "", nil
		}}
	}
	h := &Handler{
		Checks: []Check{
			check("dependency", health.Critical, false),
			check("warning", health.Warn, false),
			check("finding", health.Critical, true),
		},
		RetryDelay: time.Second,
		Sleep:      func(context.Context, time.Duration) error { return nil },
		Now:        time.Now,
	}
	h.runChecks(context.Background(), &health.Record{})
	if want := map[string]int{"dependency": 2, "warning": 1, "finding": 1}; !maps.Equal(calls, want) {
		t.Errorf("tries %v, want %v", calls, want)
	}
}

// testAlertTimeout is a test's budget for an alert, not Lambda's: the
// alert's Ledger dedupe gets a third of it, and make test's shared moto
// can take over a second to answer under load.
const testAlertTimeout = 30 * time.Second
