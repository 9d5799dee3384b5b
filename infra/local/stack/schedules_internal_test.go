package stack

import (
	"context"
	"encoding/json"
	"errors"
	"log"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"

	"42sisters.ai/oracle/infra/local/poller"
	"42sisters.ai/oracle/infra/local/schedule"
	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/infra/sam"
	"42sisters.ai/oracle/infra/testkit"
)

// templateWith is a template whose HealthFunction has the given Events
// (YAML indented for them), beside SmokeFunction's daily cron and a
// PlainFunction with no schedule, provisioned under the prefix "p-" with
// params; with nothing to create, provisioning calls no AWS API.
func templateWith(t *testing.T, healthEvents string, params map[string]string) (*provision.Stack, []sam.Function) {
	t.Helper()
	tmpl, err := sam.Parse([]byte(`
Parameters:
  HealthPeriodMinutes: {Type: Number, Default: 5}
Resources:
  HealthFunction:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: functions/health/
      Events:
` + healthEvents + `
  SmokeFunction:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: functions/smoke/
      Events:
        Daily:
          Type: Schedule
          Properties:
            Schedule: cron(0 7 * * ? *)
  PlainFunction:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: functions/plain/
`))
	if err != nil {
		t.Fatal(err)
	}
	res, err := provision.Provision(context.Background(), provision.Options{Template: tmpl, AWS: aws.Config{Region: Region}, Prefix: "p-", Params: params})
	if err != nil {
		t.Fatal(err)
	}
	return res, tmpl.Functions()
}

const healthEvents = `
        Every:
          Type: Schedule
          Properties:
            Schedule: !Sub "rate(${HealthPeriodMinutes} minutes)"
        Off:
          Type: Schedule
          Properties:
            Schedule: rate(1 hour)
            Enabled: false`

func TestPlanSchedules(t *testing.T) {
	tests := []struct {
		name   string
		events string
		params map[string]string
		every  map[string]time.Duration
		want   []string // function event rule expression enabled, one per schedule
		err    string
	}{
		{"the template's", healthEvents, nil, nil, []string{
			"HealthFunction Every p-HealthFunctionEvery rate(5 minutes) true",
			"HealthFunction Off p-HealthFunctionOff rate(1 hour) false",
			"SmokeFunction Daily p-SmokeFunctionDaily cron(0 7 * * ? *) true",
		}, ""},
		{"a parameter", healthEvents, map[string]string{"HealthPeriodMinutes": "2"}, nil, []string{
			"HealthFunction Every p-HealthFunctionEvery rate(2 minutes) true",
			"HealthFunction Off p-HealthFunctionOff rate(1 hour) false",
			"SmokeFunction Daily p-SmokeFunctionDaily cron(0 7 * * ? *) true",
		}, ""},
		{"an interval", healthEvents, nil, map[string]time.Duration{"HealthFunction": 30 * time.Second}, []string{
			"HealthFunction Every p-HealthFunctionEvery every 30s true",
			"HealthFunction Off p-HealthFunctionOff every 30s false",
			"SmokeFunction Daily p-SmokeFunctionDaily cron(0 7 * * ? *) true",
		}, ""},
		{"an interval for a cron", healthEvents, nil, map[string]time.Duration{"SmokeFunction": time.Minute}, []string{
			"HealthFunction Every p-HealthFunctionEvery rate(5 minutes) true",
			"HealthFunction Off p-HealthFunctionOff rate(1 hour) false",
			"SmokeFunction Daily p-SmokeFunctionDaily rate(1 minute) true",
		}, ""},
		{"a parameter AWS would refuse too", healthEvents, map[string]string{"HealthPeriodMinutes": "1"}, nil, nil, `HealthFunction Every: schedule "rate(1 minutes)": a rate of 1 takes the singular unit`},
		{"an interval for no function", healthEvents, nil, map[string]time.Duration{"HealthFuncton": time.Second}, nil, `"HealthFuncton", which is not a function of the template with a schedule`},
		{"an interval for a function without schedule", healthEvents, nil, map[string]time.Duration{"PlainFunction": time.Second}, nil, `"PlainFunction", which is not a function of the template with a schedule`},
		{"a zero interval", healthEvents, nil, map[string]time.Duration{"HealthFunction": 0}, nil, "must be positive"},
		{"a cron AWS refuses", `
        Every: {Type: Schedule, Properties: {Schedule: "cron(0 7 * * * *)"}}`, nil, nil, nil, "HealthFunction Every: schedule"},
		{"a time zone", `
        Every: {Type: ScheduleV2, Properties: {ScheduleExpression: rate(1 hour), ScheduleExpressionTimezone: America/Toronto}}`, nil, nil, nil, "UTC only"},
		{"an Input that is not JSON", `
        Every: {Type: Schedule, Properties: {Schedule: rate(1 hour), Input: "{nope"}}`, nil, nil, nil, "Input is not JSON"},
		{"both Enabled and State", `
        Every: {Type: Schedule, Properties: {Schedule: rate(1 hour), Enabled: true, State: ENABLED}}`, nil, nil, nil, "HealthFunction schedule Every: set Enabled or State, not both"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, fns := templateWith(t, tc.events, tc.params)
			plan, err := planSchedules(res, fns, tc.every)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("planSchedules = %v; want an error saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, sc := range plan {
				got = append(got, strings.Join([]string{sc.function, sc.event, sc.rule, describe(sc.expr), map[bool]string{true: "true", false: "false"}[sc.enabled]}, " "))
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("plan:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func describe(e schedule.Expression) string {
	if s, ok := e.(interface{ String() string }); ok {
		return s.String()
	}
	return "?"
}

// fakeFunction answers every invocation, failing those whose number is in
// fail, and counts them.
type fakeFunction struct {
	mu    sync.Mutex
	calls int
	fail  map[int]bool
}

func (f *fakeFunction) Invoke(_ context.Context, payload []byte) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.fail[f.calls] {
		return nil, errors.New("boom")
	}
	return []byte(`{"ok":true}`), nil
}

var t0 = time.Date(2026, 11, 24, 12, 3, 20, 0, time.UTC)

// scheduledStack is a Stack with only its schedules: HealthFunction's and
// SmokeFunction's, on fake functions and a manual clock from t0.
func scheduledStack(t *testing.T, every map[string]time.Duration) (*Stack, *schedule.ManualClock, chan Firing, *testkit.Buffer) {
	t.Helper()
	res, fns := templateWith(t, healthEvents, nil)
	plan, err := planSchedules(res, fns, every)
	if err != nil {
		t.Fatal(err)
	}
	_, cancel := context.WithCancel(context.Background())
	clock := schedule.NewManualClock(t0)
	fired := make(chan Firing, 100)
	logs := &testkit.Buffer{}
	s := &Stack{cancel: cancel}
	s.scheduling = scheduling{
		schedules:     plan,
		invokers:      map[string]poller.Invoker{"HealthFunction": &fakeFunction{fail: map[int]bool{2: true}}, "SmokeFunction": &fakeFunction{}},
		clock:         clock,
		scheduleLog:   log.New(logs, "[schedule] ", 0),
		afterSchedule: func(f Firing) { fired <- f },
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("logs:\n%s", logs)
		}
	})
	return s, clock, fired, logs
}

// sleepers waits for n schedules to sleep on the clock and returns until when.
func sleepers(t *testing.T, c *schedule.ManualClock, n int) []time.Time {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, err := c.Sleepers(ctx, n)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// The enabled schedules fire at their due times, HealthFunction's at the
// interval that overrides its rate, the disabled one never; a failed
// invocation is logged and the schedule goes on; Close stops them all.
func TestSchedulesFireUntilClose(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s, clock, fired, logs := scheduledStack(t, map[string]time.Duration{"HealthFunction": 30 * time.Second})
	s.cancel = cancel
	s.startSchedules(ctx, &Options{})
	daily := time.Date(2026, 11, 25, 7, 0, 0, 0, time.UTC)
	// Two schedules sleep: the disabled one is not among them.
	if got := sleepers(t, clock, 2); len(got) != 2 || !got[0].Equal(t0.Add(30*time.Second)) || !got[1].Equal(daily) {
		t.Fatalf("schedules sleep until %v", got)
	}
	for i := 1; i <= 3; i++ {
		due := t0.Add(time.Duration(i) * 30 * time.Second)
		clock.Set(due)
		f := <-fired
		if f.Function != "HealthFunction" || f.Event != "Every" || !f.At.Equal(due) {
			t.Fatalf("firing %d: %s %s at %s, want HealthFunction Every at %s", i, f.Function, f.Event, f.At, due)
		}
		if (f.Err != nil) != (i == 2) {
			t.Errorf("firing %d failed with %v", i, f.Err)
		}
		checkEvent(t, f.Payload, "p-HealthFunctionEvery", due)
		if got := sleepers(t, clock, 2); !got[0].Equal(due.Add(30 * time.Second)) {
			t.Fatalf("after firing %d, schedules sleep until %v", i, got)
		}
	}
	// The clock jumps to the daily due time: SmokeFunction fires, and
	// HealthFunction once (not once per due time it missed), then both
	// sleep until their next due time from now.
	clock.Set(daily)
	got := map[string]time.Time{}
	for range 2 {
		f := <-fired
		got[f.Function+" "+f.Event] = f.At
	}
	if len(got) != 2 || !got["SmokeFunction Daily"].Equal(daily) || !got["HealthFunction Every"].Equal(t0.Add(120*time.Second)) {
		t.Fatalf("the jump fired %v", got)
	}
	if next := sleepers(t, clock, 2); !next[0].Equal(daily.Add(30*time.Second)) || !next[1].Equal(daily.Add(24*time.Hour)) {
		t.Fatalf("after the jump, schedules sleep until %v", next)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Closed: no schedule waits on the clock to fire again.
	if left := sleepers(t, clock, 0); len(left) != 0 {
		t.Errorf("after Close, schedules still sleep until %v", left)
	}
	text := logs.String()
	for _, want := range []string{
		"[schedule] HealthFunction Every: every 30s instead of rate(5 minutes), first at 2026-11-24T12:03:50Z\n",
		"[schedule] HealthFunction Off: rate(1 hour) is disabled in the template\n",
		"[schedule] SmokeFunction Daily: cron(0 7 * * ? *), first at 2026-11-25T07:00:00Z\n",
		"[schedule] HealthFunction Every failed: boom\n",
		"[schedule] SmokeFunction Daily fired\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("no log line %q", want)
		}
	}
	if n := strings.Count(text, "[schedule] HealthFunction Every fired\n"); n != 4 {
		t.Errorf("HealthFunction fired %d times in the log, want 4", n)
	}
	if strings.Contains(text, "HealthFunction Off fired") {
		t.Error("the disabled schedule fired")
	}
}

var uuidV4 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// checkEvent checks payload is EventBridge's Scheduled Event of rule at at.
func checkEvent(t *testing.T, payload []byte, rule string, at time.Time) {
	t.Helper()
	var ev events.EventBridgeEvent
	if err := json.Unmarshal(payload, &ev); err != nil {
		t.Fatalf("event %s: %v", payload, err)
	}
	var raw map[string]json.RawMessage
	_ = json.Unmarshal(payload, &raw)
	want := events.EventBridgeEvent{
		Version: "0", ID: ev.ID, DetailType: "Scheduled Event", Source: "aws.events", AccountID: "123456789012",
		Time: at.Truncate(time.Second), Region: Region, Resources: []string{"arn:aws:events:" + Region + ":123456789012:rule/" + rule},
	}
	ev.Detail = nil
	if !uuidV4.MatchString(ev.ID) || ev.Version != want.Version || ev.DetailType != want.DetailType || ev.Source != want.Source ||
		ev.AccountID != want.AccountID || !ev.Time.Equal(want.Time) || ev.Region != want.Region || len(ev.Resources) != 1 || ev.Resources[0] != want.Resources[0] {
		t.Errorf("event %s, want %+v", payload, want)
	}
	if string(raw["detail"]) != "{}" || !strings.Contains(string(raw["time"]), at.UTC().Format(time.RFC3339)) {
		t.Errorf("event %s: want detail {} and time %s", payload, at.UTC().Format(time.RFC3339))
	}
}

func TestScheduleOffFiresNothing(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s, clock, fired, logs := scheduledStack(t, nil)
	s.cancel = cancel
	s.startSchedules(ctx, &Options{ScheduleOff: true})
	// A schedule started now would be overdue at once and fire before Close
	// returns.
	clock.Set(t0.Add(48 * time.Hour))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case f := <-fired:
		t.Errorf("%s %s fired with ScheduleOff", f.Function, f.Event)
	default:
	}
	if !strings.Contains(logs.String(), "[schedule] off: 3 schedule(s) fire only when a test calls Fire\n") {
		t.Errorf("logs:\n%s", logs)
	}
}

func TestFire(t *testing.T) {
	s, clock, fired, _ := scheduledStack(t, nil)
	clock.Set(t0.Add(time.Hour))
	ctx := context.Background()
	out, err := s.Fire(ctx, "SmokeFunction")
	if err != nil || string(out) != `{"ok":true}` {
		t.Fatalf("Fire = %s, %v", out, err)
	}
	f := <-fired
	checkEvent(t, f.Payload, "p-SmokeFunctionDaily", t0.Add(time.Hour))
	// A disabled schedule fires when named.
	if _, err := s.Fire(ctx, "HealthFunction.Off"); err != nil {
		t.Fatal(err)
	}
	if f := <-fired; f.Event != "Off" {
		t.Errorf("fired %s", f.Event)
	}
	for id, want := range map[string]string{
		"HealthFunction":      "name one of [HealthFunction.Every HealthFunction.Off]",
		"PlainFunction":       "no such schedule",
		"HealthFunction.Nope": "no such schedule (schedules: [HealthFunction.Every HealthFunction.Off SmokeFunction.Daily])",
	} {
		if _, err := s.Fire(ctx, id); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Fire(%s) = %v, want an error saying %q", id, err, want)
		}
	}
}

// A schedule with an Input sends it instead of the event, as EventBridge
// does.
func TestScheduleInputIsSentAsIs(t *testing.T) {
	res, fns := templateWith(t, `
        Every: {Type: Schedule, Properties: {Schedule: rate(1 hour), Input: '{"probe": "deep"}'}}`, nil)
	plan, err := planSchedules(res, fns, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(plan[0].payload(t0)); got != `{"probe": "deep"}` {
		t.Errorf("payload %s", got)
	}
	checkEvent(t, plan[1].payload(t0), "p-SmokeFunctionDaily", t0)
}
