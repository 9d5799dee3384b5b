package circuit_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/circuit"
	"42sisters.ai/oracle/shared/obs"
)

var ctx = context.Background()

// ledger provisions the template into moto and returns a client, the Ledger
// table's name and a settable clock.
func ledger(tb testing.TB) (*awsenv.Tables, string, *testkit.Clock) {
	tb.Helper()
	f := provision.ForTest(tb, nil)
	return awsenv.NewTables(f.AWS), f.Ref("LedgerTable"), testkit.NewClock(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
}

// containers returns n breakers sharing one circuit, as n generator
// containers would, and their shared clock.
func containers(t *testing.T, n int, o circuit.Options) ([]*circuit.Breaker, *testkit.Clock) {
	t.Helper()
	db, table, clk := ledger(t)
	bs := make([]*circuit.Breaker, n)
	for i := range bs {
		bs[i] = circuit.New(db, table, "gemini", o, clk.Now)
	}
	return bs, clk
}

const (
	fast = time.Second
	slow = 31 * time.Second // over the default SlowThreshold
)

func allow(t *testing.T, b *circuit.Breaker) circuit.Permit {
	t.Helper()
	p, err := b.Allow(ctx)
	if err != nil {
		t.Fatalf("allow: %v", err)
	}
	return p
}

func openError(t *testing.T, err error) *circuit.OpenError {
	t.Helper()
	var oe *circuit.OpenError
	if !errors.As(err, &oe) || !errors.Is(err, circuit.ErrOpen) {
		t.Fatalf("want an open circuit, got %v", err)
	}
	return oe
}

func state(t *testing.T, b *circuit.Breaker) circuit.Snapshot {
	t.Helper()
	s, err := b.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// report hands back p with an outcome: F a final failure, f a fast
// success, s a slow success.
func report(b *circuit.Breaker, p circuit.Permit, outcome rune) (circuit.Transition, error) {
	switch outcome {
	case 'F':
		return b.Failed(ctx, p)
	case 'f':
		return b.Succeeded(ctx, p, fast)
	case 's':
		return b.Succeeded(ctx, p, slow)
	}
	panic("unknown outcome " + string(outcome))
}

// trip opens the circuit with final failures.
func trip(t *testing.T, b *circuit.Breaker, threshold int) {
	t.Helper()
	for i := range threshold {
		tr, err := b.Failed(ctx, allow(t, b))
		if err != nil || tr.Tripped() != (i == threshold-1) {
			t.Fatalf("failure %d: %v %v", i+1, tr, err)
		}
	}
}

func TestClosedAllows(t *testing.T) {
	bs, _ := containers(t, 1, circuit.Options{})
	p := allow(t, bs[0])
	if p.Probe() {
		t.Fatal("a closed circuit handed out a probe")
	}
	if s := state(t, bs[0]); s != (circuit.Snapshot{State: circuit.Closed}) {
		t.Fatalf("state of a new circuit: %+v", s)
	}
	if tr, err := bs[0].Succeeded(ctx, p, fast); err != nil || tr.Changed() {
		t.Fatalf("success: %v %v", tr, err)
	}
}

// TestStreaks plays outcomes (see report) through a closed circuit.
func TestStreaks(t *testing.T) {
	db, table, clk := ledger(t)
	cases := []struct {
		name      string
		o         circuit.Options
		outcomes  string
		tripsAt   int // index of the outcome that trips; -1 for none
		reason    circuit.Reason
		fails     int // counts afterwards
		slowCount int
	}{
		{"one short of the threshold stays closed", circuit.Options{}, "FFFF", -1, "", 4, 0},
		{"the threshold opens", circuit.Options{}, "FFFFF", 4, circuit.ReasonFailures, 5, 0},
		{"a custom threshold opens", circuit.Options{FailureThreshold: 2}, "FF", 1, circuit.ReasonFailures, 2, 0},
		{"a success ends the failure streak", circuit.Options{}, "FFFFfFFFF", -1, "", 4, 0},
		{"a slow success ends the failure streak", circuit.Options{}, "FFFFsFFFF", -1, "", 4, 1},
		{"slow successes open", circuit.Options{}, "sssss", 4, circuit.ReasonSlow, 0, 5},
		{"a fast success ends the slow streak", circuit.Options{}, "ssssfssss", -1, "", 0, 4},
		{"a failure does not end the slow streak", circuit.Options{}, "ssFsss", 5, circuit.ReasonSlow, 0, 5},
		{"a custom slow threshold", circuit.Options{SlowThreshold: 500 * time.Millisecond, SlowCalls: 2}, "ff", 1, circuit.ReasonSlow, 0, 2},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := circuit.New(db, table, fmt.Sprint("streak", i), c.o, clk.Now)
			tripped := -1
			for j, o := range c.outcomes {
				tr, err := report(b, allow(t, b), o)
				if err != nil {
					t.Fatal(err)
				}
				if tr.Tripped() {
					if tripped != -1 {
						t.Fatalf("tripped twice, at %d and %d", tripped, j)
					}
					tripped = j
					if tr.Reason != c.reason {
						t.Fatalf("tripped for %q, want %q", tr.Reason, c.reason)
					}
				}
				if tripped != -1 {
					break
				}
			}
			if tripped != c.tripsAt {
				t.Fatalf("tripped at %d, want %d", tripped, c.tripsAt)
			}
			s := state(t, b)
			want := circuit.Closed
			if c.tripsAt >= 0 {
				want = circuit.Open
				openError(t, func() error { _, err := b.Allow(ctx); return err }())
			}
			if s.State != want || s.Reason != c.reason || s.Failures != c.fails || s.Slow != c.slowCount {
				t.Fatalf("state %+v, want %s/%q with %d failures and %d slow", s, want, c.reason, c.fails, c.slowCount)
			}
		})
	}
}

func TestOpenRejectsUntilItHalfOpens(t *testing.T) {
	bs, clk := containers(t, 2, circuit.Options{})
	trip(t, bs[0], 5)
	openedAt := clk.Now()
	until := openedAt.Add(time.Minute)

	for _, b := range bs { // the other container sees it too
		oe := openError(t, func() error { _, err := b.Allow(ctx); return err }())
		if !oe.Until.Equal(until) || oe.Reason != circuit.ReasonFailures {
			t.Fatalf("rejection %+v, want until %s", oe, until)
		}
	}
	s := state(t, bs[1])
	if s.State != circuit.Open || !s.OpenedAt.Equal(openedAt) || !s.Until.Equal(until) {
		t.Fatalf("state %+v", s)
	}
	clk.Add(time.Minute - time.Millisecond)
	if _, err := bs[1].Allow(ctx); !errors.Is(err, circuit.ErrOpen) {
		t.Fatalf("a millisecond before half-open: %v", err)
	}
	clk.Add(time.Millisecond)
	if s := state(t, bs[1]); s.State != circuit.HalfOpen {
		t.Fatalf("state after OpenFor: %+v", s)
	}
}

func TestOneProbeAcrossContainers(t *testing.T) {
	bs, clk := containers(t, 2, circuit.Options{})
	trip(t, bs[0], 5)
	clk.Add(time.Minute)

	const n = 10
	var wg sync.WaitGroup
	var mu sync.Mutex
	var probes, rejected int
	for i := range n {
		wg.Go(func() {
			p, err := bs[i%2].Allow(ctx)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil && p.Probe():
				probes++
			case errors.Is(err, circuit.ErrOpen):
				var oe *circuit.OpenError
				if !errors.As(err, &oe) || !oe.Until.Equal(clk.Now().Add(2*time.Minute)) {
					t.Errorf("rejected with %v, want until the probe lease's end", err)
				}
				rejected++
			default:
				t.Errorf("allow: %v %v", p, err)
			}
		})
	}
	wg.Wait()
	if probes != 1 || rejected != n-1 {
		t.Fatalf("%d probes and %d rejections, want 1 and %d", probes, rejected, n-1)
	}
}

func TestProbeOutcome(t *testing.T) {
	cases := []struct {
		name    string
		outcome rune // see report
		want    circuit.Transition
		slow    int
	}{
		{"a success closes and resets", 'f', circuit.Transition{From: circuit.HalfOpen, To: circuit.Closed}, 0},
		{"a slow success closes and starts a slow streak", 's', circuit.Transition{From: circuit.HalfOpen, To: circuit.Closed}, 1},
		{"a failure reopens for a fresh window", 'F', circuit.Transition{From: circuit.HalfOpen, To: circuit.Open, Reason: circuit.ReasonFailures}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			bs, clk := containers(t, 2, circuit.Options{})
			trip(t, bs[0], 5)
			clk.Add(time.Minute)
			p := allow(t, bs[1])
			if !p.Probe() {
				t.Fatal("no probe after OpenFor")
			}
			clk.Add(10 * time.Second)
			tr, err := report(bs[1], p, c.outcome)
			if err != nil || tr != c.want {
				t.Fatalf("probe outcome %v %v, want %v", tr, err, c.want)
			}
			s := state(t, bs[0])
			if c.want.To == circuit.Closed {
				if s != (circuit.Snapshot{State: circuit.Closed, Slow: c.slow}) {
					t.Fatalf("state after close: %+v", s)
				}
				if p := allow(t, bs[0]); p.Probe() {
					t.Fatal("a closed circuit handed out a probe")
				}
				// The streak starts again from nothing.
				trip(t, bs[0], 5)
				return
			}
			until := clk.Now().Add(time.Minute)
			if s.State != circuit.Open || !s.OpenedAt.Equal(clk.Now()) || !s.Until.Equal(until) {
				t.Fatalf("state after reopen: %+v", s)
			}
			if oe := openError(t, func() error { _, err := bs[0].Allow(ctx); return err }()); !oe.Until.Equal(until) {
				t.Fatalf("rejected until %s, want %s", oe.Until, until)
			}
			clk.Add(time.Minute)
			if p := allow(t, bs[0]); !p.Probe() {
				t.Fatal("no probe after the fresh window")
			}
		})
	}
}

func TestConcurrentFailuresTripOnce(t *testing.T) {
	bs, _ := containers(t, 2, circuit.Options{})
	const n = 10
	permits := make([]circuit.Permit, n)
	for i := range permits {
		permits[i] = allow(t, bs[i%2])
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	trips := 0
	for i := range n {
		wg.Go(func() {
			tr, err := bs[i%2].Failed(ctx, permits[i])
			if err != nil {
				t.Error(err)
			}
			if tr.Tripped() {
				mu.Lock()
				trips++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if trips != 1 {
		t.Fatalf("%d trips, want exactly 1", trips)
	}
	if s := state(t, bs[0]); s.State != circuit.Open || s.Reason != circuit.ReasonFailures {
		t.Fatalf("state %+v", s)
	}
}

func TestStalePermitsDoNotMoveTheCircuit(t *testing.T) {
	bs, clk := containers(t, 2, circuit.Options{FailureThreshold: 1})
	old := allow(t, bs[0])
	trip(t, bs[1], 1)

	// Calls that started before the trip report while it is open.
	for _, latency := range []time.Duration{fast, slow} {
		if tr, err := bs[0].Succeeded(ctx, old, latency); err != nil || tr.Changed() {
			t.Fatalf("an old success moved the circuit: %v %v", tr, err)
		}
	}
	if tr, err := bs[0].Failed(ctx, old); err != nil || tr.Changed() {
		t.Fatalf("an old failure moved the circuit: %v %v", tr, err)
	}
	if s := state(t, bs[0]); s.State != circuit.Open {
		t.Fatalf("state %+v", s)
	}
	// Nor once the probe has closed it: the old failure is not counted
	// against the new episode (with a threshold of 1 it would trip it).
	clk.Add(time.Minute)
	if _, err := bs[1].Succeeded(ctx, allow(t, bs[1]), fast); err != nil {
		t.Fatal(err)
	}
	if tr, err := bs[0].Failed(ctx, old); err != nil || tr.Changed() {
		t.Fatalf("an old failure moved the closed circuit: %v %v", tr, err)
	}
	if s := state(t, bs[0]); s != (circuit.Snapshot{State: circuit.Closed}) {
		t.Fatalf("state %+v", s)
	}
}

func TestExpiredProbeLeaseLetsAnotherProbe(t *testing.T) {
	bs, clk := containers(t, 2, circuit.Options{ProbeLease: 90 * time.Second})
	trip(t, bs[0], 5)
	clk.Add(time.Minute)
	first := allow(t, bs[0])
	if !first.Probe() {
		t.Fatal("no probe")
	}
	clk.Add(90*time.Second - time.Millisecond)
	if _, err := bs[1].Allow(ctx); !errors.Is(err, circuit.ErrOpen) {
		t.Fatalf("a second probe within the lease: %v", err)
	}
	clk.Add(time.Millisecond)
	second := allow(t, bs[1])
	if !second.Probe() {
		t.Fatal("no probe after the lease expired")
	}
	// The first probe's late report no longer decides anything.
	if tr, err := bs[0].Succeeded(ctx, first, fast); err != nil || tr.Changed() {
		t.Fatalf("the lapsed probe closed the circuit: %v %v", tr, err)
	}
	if s := state(t, bs[0]); s.State != circuit.HalfOpen {
		t.Fatalf("state %+v", s)
	}
	if tr, err := bs[1].Failed(ctx, second); err != nil || tr.To != circuit.Open {
		t.Fatalf("the live probe's failure: %v %v", tr, err)
	}
}

// An unreadable Ledger lets the call through and says so.
func TestUnreadableLedgerAllows(t *testing.T) {
	db, _, clk := ledger(t)
	b := circuit.New(db, "no-such-table", "gemini", circuit.Options{}, clk.Now)
	p, err := b.Allow(ctx)
	if err == nil || errors.Is(err, circuit.ErrOpen) {
		t.Fatalf("want a Ledger error, got %v", err)
	}
	if tr, err := b.Failed(ctx, p); err != nil || tr.Changed() {
		t.Fatalf("an unrecorded permit's failure: %v %v", tr, err)
	}
	if tr, err := b.Succeeded(ctx, p, fast); err != nil || tr.Changed() {
		t.Fatalf("an unrecorded permit's success: %v %v", tr, err)
	}
	if _, err := b.State(ctx); err == nil {
		t.Fatal("State hid the Ledger error")
	}
}

// BenchmarkAllowClosed is the per-call overhead of a closed circuit: one
// consistent GetItem (here against moto over HTTP).
func BenchmarkAllowClosed(b *testing.B) {
	db, table, clk := ledger(b)
	br := circuit.New(db, table, "gemini", circuit.Options{}, clk.Now)
	for b.Loop() {
		if _, err := br.Allow(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// A change whose answer is lost and retried by the SDK is reported as made
// by its caller: the trip alerts, the probe is taken, the close alerts.
func TestRetriedChangesKnowTheirOwnFirstAttempt(t *testing.T) {
	f := provision.ForTest(t, nil)
	l := &testkit.Lossy{}
	db := awsenv.NewTables(f.AWS, func(o *dynamodb.Options) { o.HTTPClient = &http.Client{Transport: l} })
	clk := testkit.NewClock(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
	b := circuit.New(db, f.Ref("LedgerTable"), "gemini", circuit.Options{}, clk.Now)
	lost := func(what string) {
		t.Helper()
		if l.Armed() {
			t.Fatalf("%s: no answer was lost: the test proves nothing", what)
		}
	}
	for range 4 {
		if _, err := b.Failed(ctx, allow(t, b)); err != nil {
			t.Fatal(err)
		}
	}
	p := allow(t, b)
	l.ArmAfter("UpdateItem", 1) // the count's answer arrives, the trip's is lost
	if tr, err := b.Failed(ctx, p); err != nil || !tr.Tripped() {
		t.Fatalf("trip: %v %v", tr, err)
	}
	lost("trip")
	clk.Add(time.Minute)
	l.Arm("UpdateItem")
	probe := allow(t, b)
	lost("probe")
	if !probe.Probe() {
		t.Fatal("the probe taken by the lost request was not handed out")
	}
	l.Arm("UpdateItem")
	if tr, err := b.Succeeded(ctx, probe, fast); err != nil || !tr.Changed() || tr.To != circuit.Closed {
		t.Fatalf("close: %v %v", tr, err)
	}
	lost("close")
}

// Each transition a breaker makes is the circuit's state on the
// dashboard: CircuitOpen 1 when it opens or reopens, 0 when it closes;
// a report that moves nothing emits nothing.
func TestTransitionsAreMeasured(t *testing.T) {
	var out bytes.Buffer
	bs, clk := containers(t, 1, circuit.Options{FailureThreshold: 2, Metrics: obs.NewMetrics(&out, "Oracle/test", nil)})
	b := bs[0]
	want := []string{}
	check := func(step string) {
		t.Helper()
		got := []string{}
		for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			if l != "" {
				got = append(got, l[strings.LastIndex(l, ","):])
			}
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Fatalf("after %s: lines ending %q, want %q", step, got, want)
		}
	}
	if _, err := b.Failed(ctx, allow(t, b)); err != nil {
		t.Fatal(err)
	}
	check("a failure under the threshold")
	if _, err := b.Failed(ctx, allow(t, b)); err != nil {
		t.Fatal(err)
	}
	want = append(want, `,"CircuitOpen":1}`)
	check("the trip")
	clk.Add(time.Minute)
	if _, err := b.Failed(ctx, allow(t, b)); err != nil {
		t.Fatal(err)
	}
	want = append(want, `,"CircuitOpen":1}`)
	check("the failed probe")
	clk.Add(time.Minute)
	if _, err := b.Succeeded(ctx, allow(t, b), fast); err != nil {
		t.Fatal(err)
	}
	want = append(want, `,"CircuitOpen":0}`)
	check("the closing probe")
}
