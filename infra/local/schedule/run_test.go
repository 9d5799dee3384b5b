package schedule_test

import (
	"context"
	"errors"
	"log"
	"strings"
	"testing"
	"time"

	"42sisters.ai/oracle/infra/local/schedule"
	"42sisters.ai/oracle/infra/testkit"
)

var t0 = time.Date(2026, 11, 24, 12, 3, 20, 0, time.UTC)

// runner runs one job on a manual clock: each firing's due time arrives on
// fired, and done closes when Run returns.
type runner struct {
	clock  *schedule.ManualClock
	fired  chan time.Time
	done   chan struct{}
	cancel context.CancelFunc
	logs   *testkit.Buffer
}

func start(t *testing.T, expr schedule.Expression, fire func(at time.Time) error) *runner {
	t.Helper()
	r := &runner{clock: schedule.NewManualClock(t0), fired: make(chan time.Time, 100), done: make(chan struct{}), logs: &testkit.Buffer{}}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	job := schedule.Job{Name: "HealthFunction Every", Expression: expr, Fire: func(_ context.Context, at time.Time) error {
		r.fired <- at
		if fire != nil {
			return fire(at)
		}
		return nil
	}}
	go func() {
		defer close(r.done)
		schedule.Run(ctx, r.clock, t0, log.New(r.logs, "[schedule] ", 0), job)
	}()
	t.Cleanup(func() {
		cancel()
		<-r.done
		if t.Failed() {
			t.Logf("logs:\n%s", r.logs)
		}
	})
	return r
}

// sleeping waits for the job to sleep until want, which also means the
// firing before it is over.
func (r *runner) sleeping(t *testing.T, want time.Time) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, err := r.clock.Sleepers(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !got[0].Equal(want) {
		t.Fatalf("the job sleeps until %v, want %s", got, want)
	}
}

// firings takes what fired so far.
func (r *runner) firings() []time.Time {
	var out []time.Time
	for {
		select {
		case at := <-r.fired:
			out = append(out, at)
		default:
			return out
		}
	}
}

func TestRunFiresAtEachDueTimeUntilStopped(t *testing.T) {
	r := start(t, schedule.Rate{Period: 5 * time.Minute}, nil)
	for i := 1; i <= 3; i++ {
		due := t0.Add(time.Duration(i) * 5 * time.Minute)
		r.sleeping(t, due)
		if got := r.firings(); len(got) != 0 {
			t.Fatalf("fired at %v before %s", got, due)
		}
		r.clock.Set(due)
		if at := <-r.fired; !at.Equal(due) {
			t.Fatalf("fired for %s, want %s", at, due)
		}
	}
	r.sleeping(t, t0.Add(20*time.Minute))
	r.cancel()
	<-r.done // stopped: Run returns once cancelled
	if n := strings.Count(r.logs.String(), "[schedule] HealthFunction Every fired\n"); n != 3 {
		t.Errorf("%d firings logged, want 3:\n%s", n, r.logs)
	}
}

func TestRunCronFiresAtTheNextMatch(t *testing.T) {
	e, err := schedule.Parse("cron(0/15 * * * ? *)")
	if err != nil {
		t.Fatal(err)
	}
	r := start(t, e, nil)
	for _, due := range []time.Time{
		time.Date(2026, 11, 24, 12, 15, 0, 0, time.UTC),
		time.Date(2026, 11, 24, 12, 30, 0, 0, time.UTC),
	} {
		r.sleeping(t, due)
		r.clock.Set(due)
		if at := <-r.fired; !at.Equal(due) {
			t.Fatalf("fired for %s, want %s", at, due)
		}
	}
	r.sleeping(t, time.Date(2026, 11, 24, 12, 45, 0, 0, time.UTC))
}

func TestRunLogsAFailureAndGoesOn(t *testing.T) {
	r := start(t, schedule.Rate{Period: time.Minute}, func(at time.Time) error {
		if at.Equal(t0.Add(time.Minute)) {
			return errors.New("invoke HealthFunction: boom")
		}
		return nil
	})
	r.clock.Set(t0.Add(time.Minute))
	r.sleeping(t, t0.Add(2*time.Minute))
	r.clock.Set(t0.Add(2 * time.Minute))
	r.sleeping(t, t0.Add(3*time.Minute))
	if got := r.firings(); len(got) != 2 {
		t.Fatalf("fired at %v, want twice", got)
	}
	logs := r.logs.String()
	if !strings.Contains(logs, "[schedule] HealthFunction Every failed: invoke HealthFunction: boom\n") || strings.Count(logs, "failed") != 1 {
		t.Errorf("logs:\n%s", logs)
	}
}

// A firing that outlasts the period skips the due times it overran, instead
// of firing them late one after another.
func TestRunSkipsWhatALongFiringMissed(t *testing.T) {
	var r *runner
	r = start(t, schedule.Rate{Period: 5 * time.Minute}, func(at time.Time) error {
		r.clock.Set(at.Add(12 * time.Minute))
		return nil
	})
	r.clock.Set(t0.Add(5 * time.Minute))
	r.sleeping(t, t0.Add(5*time.Minute+12*time.Minute+5*time.Minute))
	if got := r.firings(); len(got) != 1 {
		t.Fatalf("fired at %v, want once", got)
	}
	if !strings.Contains(r.logs.String(), "missed ones are skipped") {
		t.Errorf("logs:\n%s", r.logs)
	}
}

func TestRunEndsWhenNeverDueAgain(t *testing.T) {
	e, err := schedule.Parse("cron(0 0 1 1 ? 2027)")
	if err != nil {
		t.Fatal(err)
	}
	r := start(t, e, nil)
	due := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	r.sleeping(t, due)
	r.clock.Set(due)
	<-r.done
	if got := r.firings(); len(got) != 1 || !got[0].Equal(due) {
		t.Errorf("fired at %v, want once at %s", got, due)
	}
	if !strings.Contains(r.logs.String(), "never due again") {
		t.Errorf("logs:\n%s", r.logs)
	}
}

func TestManualClock(t *testing.T) {
	c := schedule.NewManualClock(t0)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if !c.SleepUntil(ctx, t0) {
		t.Fatal("sleeping until now did not return at once")
	}
	woke := make(chan time.Time, 2)
	for _, d := range []time.Duration{2 * time.Minute, time.Minute} {
		go func() {
			if c.SleepUntil(ctx, t0.Add(d)) {
				woke <- t0.Add(d)
			}
		}()
	}
	got, err := c.Sleepers(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !got[0].Equal(t0.Add(time.Minute)) || !got[1].Equal(t0.Add(2*time.Minute)) {
		t.Fatalf("Sleepers = %v", got)
	}
	c.Set(t0.Add(90 * time.Second))
	if at := <-woke; !at.Equal(t0.Add(time.Minute)) {
		t.Fatalf("woke %s first", at)
	}
	if !c.Now().Equal(t0.Add(90 * time.Second)) {
		t.Errorf("Now = %s", c.Now())
	}
	if got, err := c.Sleepers(ctx, 1); err != nil || len(got) != 1 || !got[0].Equal(t0.Add(2*time.Minute)) {
		t.Fatalf("Sleepers = %v, %v", got, err)
	}
	// A sleeper whose context ends leaves without the clock moving.
	short, stop := context.WithCancel(ctx)
	left := make(chan bool)
	go func() { left <- c.SleepUntil(short, t0.Add(time.Hour)) }()
	if _, err := c.Sleepers(ctx, 2); err != nil {
		t.Fatal(err)
	}
	stop()
	if <-left {
		t.Error("a cancelled sleep reported its time came")
	}
	if got, err := c.Sleepers(ctx, 1); err != nil || len(got) != 1 {
		t.Fatalf("Sleepers after a cancelled sleep = %v, %v", got, err)
	}
	quick, cancelQuick := context.WithCancel(ctx)
	cancelQuick()
	if _, err := c.Sleepers(quick, 5); !errors.Is(err, context.Canceled) {
		t.Errorf("Sleepers on an ended context = %v", err)
	}
}
