package stack_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"42sisters.ai/oracle/infra/local/schedule"
	"42sisters.ai/oracle/infra/local/stack"
)

// The stack fires a schedule into the function's real bootstrap: the echo
// function (infra/local/testdata/echo, a template of its own) answers with
// the Scheduled Event it got, for the due time of its rate, the template's
// parameter resolved; its disabled schedule does not fire; Fire sends the
// same event now, for the schedule it names.
func TestScheduleFiresTheRealFunction(t *testing.T) {
	t.Parallel()
	o := options(t)
	root, err := filepath.Abs(filepath.Join("..", "testdata", "echo"))
	if err != nil {
		t.Fatal(err)
	}
	o.Root = root
	t0 := time.Date(2026, 11, 24, 12, 3, 20, 0, time.UTC)
	clock := schedule.NewManualClock(t0)
	o.ScheduleClock = clock
	fired := make(chan stack.Firing, 10)
	o.AfterSchedule = func(f stack.Firing) { fired <- f }
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	s, err := stack.Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })

	// Every (rate(5 minutes)) and Daily sleep; Off does not.
	due, daily := t0.Add(5*time.Minute), time.Date(2026, 11, 25, 7, 0, 0, 0, time.UTC)
	sleeping, err := clock.Sleepers(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(sleeping) != 2 || !sleeping[0].Equal(due) || !sleeping[1].Equal(daily) {
		t.Fatalf("schedules sleep until %v, want %s and %s", sleeping, due, daily)
	}
	clock.Set(due)
	f := <-fired
	if f.Function != "EchoFunction" || f.Event != "Every" || f.Err != nil {
		t.Fatalf("firing %s %s: %v", f.Function, f.Event, f.Err)
	}
	echoed(t, f.Response, o.Prefix+"EchoFunctionEvery", due)

	out, err := s.Fire(ctx, "EchoFunction.Daily")
	if err != nil {
		t.Fatal(err)
	}
	echoed(t, out, o.Prefix+"EchoFunctionDaily", due)
	if f := <-fired; f.Event != "Daily" || string(f.Response) != string(out) {
		t.Errorf("Fire's firing: %s %s", f.Event, f.Response)
	}
	if _, err := s.Fire(ctx, "EchoFunction"); err == nil || !strings.Contains(err.Error(), "name one of") {
		t.Errorf("Fire of a function with three schedules: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Closed: no schedule waits on the clock to fire again.
	if left, err := clock.Sleepers(ctx, 0); err != nil || len(left) != 0 {
		t.Errorf("after Close, schedules still sleep until %v (%v)", left, err)
	}
}

// echoed checks the echo function's response carries the Scheduled Event
// of rule for at.
func echoed(t *testing.T, response []byte, rule string, at time.Time) {
	t.Helper()
	var echo struct {
		Payload events.EventBridgeEvent `json:"payload"`
	}
	if err := json.Unmarshal(response, &echo); err != nil {
		t.Fatalf("echo response %s: %v", response, err)
	}
	ev := echo.Payload
	if ev.DetailType != "Scheduled Event" || ev.Source != "aws.events" || ev.Version != "0" || ev.ID == "" ||
		ev.AccountID != "123456789012" || ev.Region != stack.Region || !ev.Time.Equal(at.Truncate(time.Second)) ||
		len(ev.Resources) != 1 || ev.Resources[0] != "arn:aws:events:"+stack.Region+":123456789012:rule/"+rule || string(ev.Detail) != "{}" {
		t.Errorf("the function got %+v (detail %s), want the Scheduled Event of %s at %s", ev, ev.Detail, rule, at)
	}
}
