package storeguard_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/infra/sam"
	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/obs"
	"42sisters.ai/oracle/shared/store"
	"42sisters.ai/oracle/shared/storeguard"
)

const session = "cs_test_storeGuardSession0001"

// guarded is cfg with the guard and transport in front of moto and the
// SDK's standard retryer without its waits (the attempts are the same).
func guarded(cfg aws.Config, g *storeguard.Guard, transport http.RoundTripper) aws.Config {
	cfg = cfg.Copy()
	cfg.HTTPClient = &http.Client{Transport: transport}
	cfg.Retryer = zeroBackoff
	g.Options(&cfg)
	return cfg
}

// noWait is a store client's retryer with the SDK's attempts and no wait
// between them (the clients wait awsenv.StoreRetryDelay).
func noWait(o *dynamodb.Options) { o.Retryer = zeroBackoff() }

func zeroBackoff() aws.Retryer {
	return retry.NewStandard(func(o *retry.StandardOptions) {
		o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
	})
}

// TestFailingStoreCallAlertsAtOnceAfterItsRetries: a store that refuses
// every connection makes the very call that met it raise STORE_FAILED
// after the SDK's three attempts, not the health job's next run; once per
// table and operation within the window, again after it; a failed
// condition is an answer, not a failure, and raises nothing.
func TestFailingStoreCallAlertsAtOnceAfterItsRetries(t *testing.T) {
	f := provision.ForTest(t, nil)
	clk := testkit.NewClock(time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC))
	alerts := &testkit.Alerts{}
	g := &storeguard.Guard{Alerts: alerts, Now: clk.Now, Log: obs.NewLogger(&bytes.Buffer{}, "DEBUG")}
	faulty := &testkit.Faulty{}
	db := awsenv.NewTables(guarded(f.AWS, g, faulty), noWait)
	orders := store.NewOrders(db, f.Ref("OrdersTable"), clk.Now)
	ledger := store.NewLedger(db, f.Ref("LedgerTable"), clk.Now)
	ctx := context.Background()

	if _, err := ledger.Mark(ctx, "k", time.Hour); err != nil {
		t.Fatal(err)
	}
	if first, err := ledger.Mark(ctx, "k", time.Hour); err != nil || first {
		t.Fatalf("second mark: first=%v err=%v", first, err)
	}
	if got := alerts.Raised(); len(got) != 0 {
		t.Fatalf("a healthy store and a failed condition raised %v", got)
	}

	faulty.Down()
	if _, _, err := orders.Get(ctx, session); err == nil {
		t.Fatal("a read from a store that is down succeeded")
	}
	if n := faulty.Refused(); n != 3 {
		t.Fatalf("the store was tried %d times before the alert, want the SDK's 3 attempts", n)
	}
	got := alerts.Raised()
	if len(got) != 1 || got[0].Kind != alert.StoreFailed || got[0].Severity != alert.Error {
		t.Fatalf("raised %+v, want one STORE_FAILED (ERROR)", got)
	}
	if want := "GetItem " + f.Ref("OrdersTable"); got[0].Subject != want || !strings.Contains(got[0].Detail, "after 3 attempts") {
		t.Fatalf("alert %+v, want subject %q and the attempts in the detail", got[0], want)
	}
	if strings.Contains(got[0].Detail, session) || got[0].Session != "" {
		t.Fatalf("the alert names the whole session: %+v", got[0])
	}

	_, _, _ = orders.Get(ctx, session)          // the same operation within the window
	_, _ = ledger.Mark(ctx, "other", time.Hour) // another table and operation
	clk.Add(alert.DefaultWindow)                // the window has passed
	_, _, _ = orders.Get(ctx, session)          // heard again
	if got := alerts.Kinds(); len(got) != 3 {
		t.Fatalf("raised %v, want 3: one per operation within the window, again after it", got)
	}
}

// hanging is a store that accepts each request and never answers.
type hanging struct{ requests int }

func (h *hanging) RoundTrip(r *http.Request) (*http.Response, error) {
	h.requests++
	<-r.Context().Done()
	return nil, r.Context().Err()
}

// TestHangingStoreCallIsCutAtItsOwnDeadline (ALERT-GAP-01): a store that
// never answers holds the call no longer than the guard's deadline, far
// inside the caller's own, with each attempt cut shorter still, and the
// call alerts.
func TestHangingStoreCallIsCutAtItsOwnDeadline(t *testing.T) {
	f := provision.ForTest(t, nil)
	alerts := &testkit.Alerts{}
	g := &storeguard.Guard{Alerts: alerts, AttemptTimeout: 150 * time.Millisecond, CallTimeout: 250 * time.Millisecond}
	h := &hanging{}
	orders := store.NewOrders(awsenv.NewTables(guarded(f.AWS, g, h), noWait), f.Ref("OrdersTable"), nil)
	// The caller's deadline stands for the function's: without the
	// guard, the call would spend all of it.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, _, err := orders.Get(ctx, session)
	if err == nil || !errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
		t.Fatalf("err %v (caller's context: %v), want the call's own deadline", err, ctx.Err())
	}
	if h.requests != 2 {
		t.Fatalf("%d attempts, want 2: the first cut at the attempt deadline, the second at the call's", h.requests)
	}
	got := alerts.Raised()
	if len(got) != 1 || got[0].Kind != alert.StoreFailed || !strings.Contains(got[0].Detail, "did not answer within 250ms") {
		t.Fatalf("raised %+v, want STORE_FAILED naming the deadline", got)
	}
}

// TestRetryThatSucceededWarns (CACHE_ALERT VC-2): a call whose first
// attempt failed and whose retry succeeded is a WARN log line and counts
// StoreRetries (which StoreRetriesAlarm watches), never an ERROR alert; a
// call that succeeded at once records nothing.
func TestRetryThatSucceededWarns(t *testing.T) {
	f := provision.ForTest(t, nil)
	alerts, metrics, logs := &testkit.Alerts{}, &testkit.Metrics{}, &testkit.Buffer{}
	g := &storeguard.Guard{Alerts: alerts, Metrics: metrics, Log: obs.NewLogger(logs, "INFO")}
	lossy := &testkit.Lossy{}
	ledger := store.NewLedger(awsenv.NewTables(guarded(f.AWS, g, lossy), noWait), f.Ref("LedgerTable"), nil)
	ctx := context.Background()
	if _, err := ledger.Seen(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if n := metrics.Counts()["StoreRetries"]; n != 0 || logs.String() != "" {
		t.Fatalf("a call that succeeded at once recorded %v retries: %s", n, logs.String())
	}
	lossy.Arm("GetItem")
	if _, err := ledger.Seen(ctx, "k"); err != nil {
		t.Fatalf("the retried read failed: %v", err)
	}
	if lossy.Armed() {
		t.Fatal("no answer was lost")
	}
	if n := metrics.Counts()["StoreRetries"]; n != 1 {
		t.Fatalf("StoreRetries %v, want 1", n)
	}
	line := logs.String()
	if !strings.Contains(line, `"level":"WARN"`) || !strings.Contains(line, "store call succeeded on a retry") || !strings.Contains(line, `"attempts":2`) {
		t.Fatalf("no WARN line naming the attempts: %s", line)
	}
	if got := alerts.Raised(); len(got) != 0 {
		t.Fatalf("a retry that succeeded raised %+v, want no alert", got)
	}
}

// TestLedgerDownStillAlertsOnce: when the Ledger itself is down, the
// alert's own dedupe (a Ledger write) fails too; that failure raises no
// second alert and no loop, and the alert is published all the same.
func TestLedgerDownStillAlertsOnce(t *testing.T) {
	f := provision.ForTest(t, nil)
	logs := &testkit.Buffer{}
	log := obs.NewLogger(logs, "DEBUG")
	faulty := &testkit.Faulty{}
	g := &storeguard.Guard{Log: log}
	ledger := store.NewLedger(awsenv.NewTables(guarded(f.AWS, g, faulty), noWait), f.Ref("LedgerTable"), nil)
	tap := testkit.AlertTap(t, f.AWS, f.Ref("AlertsTopic"), provision.TestRegion, provision.Account)
	g.Alerts = &alert.Alerter{SNS: awsenv.NewTopics(f.AWS), Topic: f.Ref("AlertsTopic"), Dedupe: ledger, Log: log}
	faulty.Down()
	if _, err := ledger.Seen(context.Background(), "event#evt_1"); err == nil {
		t.Fatal("a read from a Ledger that is down succeeded")
	}
	got := tap()
	if len(got) != 1 || !strings.Contains(got[0], "STORE_FAILED") {
		t.Fatalf("published %q, want one STORE_FAILED", got)
	}
	if !strings.Contains(logs.String(), "alert dedupe unavailable; sending anyway") {
		t.Fatalf("the alert's failed dedupe left no line: %s", logs.String())
	}
	if n := faulty.Refused(); n != 6 {
		t.Fatalf("%d refused requests, want 6: the read's 3 attempts and the dedupe's 3, nothing more", n)
	}
}

// TestStoreDeadlinesFitInsideEveryFunction: a store call with its alert
// ends before the function that makes it is killed, for every function of
// the template, with the defaults.
func TestStoreDeadlinesFitInsideEveryFunction(t *testing.T) {
	tmpl, err := sam.Load(provision.TemplatePath())
	if err != nil {
		t.Fatal(err)
	}
	if storeguard.AttemptTimeout >= storeguard.CallTimeout {
		t.Fatalf("an attempt's deadline %s is not shorter than the call's %s", storeguard.AttemptTimeout, storeguard.CallTimeout)
	}
	worst := storeguard.CallTimeout + alert.DefaultTimeout
	fns := tmpl.Functions()
	if len(fns) == 0 {
		t.Fatal("no functions in the template")
	}
	for _, fn := range fns {
		if limit := time.Duration(fn.Timeout) * time.Second; limit <= worst {
			t.Errorf("%s times out at %s, not after a store call and its alert (%s)", fn.LogicalID, limit, worst)
		}
	}
}
