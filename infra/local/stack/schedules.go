package stack

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/uuid"

	"42sisters.ai/oracle/infra/local/poller"
	"42sisters.ai/oracle/infra/local/schedule"
	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/infra/sam"
)

// Firing is one invocation of a function by one of its schedules.
type Firing struct {
	Function string    // the function's logical id
	Event    string    // the schedule's event, e.g. Every
	At       time.Time // the due time, the event's time
	Payload  []byte    // what the function got
	Response []byte    // what it answered
	Err      error     // its failure; a function failure is a *runtimeapi.Error
}

// scheduled is one schedule event of a function, as the stack fires it.
type scheduled struct {
	function string
	event    string
	rule     string              // the rule's name, in the event's resources
	input    string              // the template's constant Input, sent instead of the event
	spec     string              // the template's expression
	expr     schedule.Expression // when it fires: the template's expression, or ScheduleEvery's interval
	every    time.Duration       // ScheduleEvery's interval; 0 when the template's expression rules
	enabled  bool
}

func (sc *scheduled) name() string { return sc.function + " " + sc.event }

// payload is what the function gets for the due time at.
func (sc *scheduled) payload(at time.Time) []byte {
	if sc.input != "" {
		return []byte(sc.input)
	}
	return ScheduledEvent(sc.rule, at)
}

// ScheduledEvent is the event an EventBridge rule named rule delivers to a
// Lambda function when it fires for the time at: a fresh id, the local
// stack's region and account, and the time to the second.
func ScheduledEvent(rule string, at time.Time) []byte {
	b, err := json.Marshal(events.EventBridgeEvent{
		Version:    "0",
		ID:         uuid.NewString(),
		DetailType: "Scheduled Event",
		Source:     "aws.events",
		AccountID:  provision.Account,
		Time:       at.UTC().Truncate(time.Second),
		Region:     Region,
		Resources:  []string{fmt.Sprintf("arn:aws:events:%s:%s:rule/%s", Region, provision.Account, rule)},
		Detail:     json.RawMessage("{}"),
	})
	if err != nil {
		panic("marshal a scheduled event: " + err.Error()) // a fixed shape: cannot fail
	}
	return b
}

// planSchedules reads every function's schedule events, resolved against
// the provisioned stack, and applies the intervals of every (by logical id).
// What the stack cannot fire as EventBridge would is an error.
func planSchedules(res *provision.Stack, fns []sam.Function, every map[string]time.Duration) ([]*scheduled, error) {
	for _, id := range slices.Sorted(maps.Keys(every)) {
		if d := every[id]; d <= 0 {
			return nil, fmt.Errorf("schedule interval for %s is %s: it must be positive", id, d)
		}
		if !slices.ContainsFunc(fns, func(fn sam.Function) bool { return fn.LogicalID == id && len(fn.Schedules) > 0 }) {
			return nil, fmt.Errorf("schedule interval for %q, which is not a function of the template with a schedule", id)
		}
	}
	var out []*scheduled
	for _, fn := range fns {
		resolved, err := res.Schedules(fn)
		if err != nil {
			return nil, err
		}
		for _, r := range resolved {
			sc := &scheduled{function: fn.LogicalID, event: r.Event, rule: r.Name, input: r.Input, spec: r.Expression, enabled: r.Enabled}
			if sc.expr, err = schedule.Parse(r.Expression); err != nil {
				return nil, fmt.Errorf("%s: %w", sc.name(), err)
			}
			switch r.Timezone {
			case "", "UTC", "Etc/UTC":
			default:
				return nil, fmt.Errorf("%s: ScheduleExpressionTimezone %q: the local stack fires schedules in UTC only", sc.name(), r.Timezone)
			}
			if sc.input != "" && !json.Valid([]byte(sc.input)) {
				return nil, fmt.Errorf("%s: Input is not JSON: %q", sc.name(), sc.input)
			}
			if d, ok := every[fn.LogicalID]; ok {
				sc.expr, sc.every = schedule.Rate{Period: d}, d
			}
			out = append(out, sc)
		}
	}
	return out, nil
}

// startSchedules fires each enabled schedule on its own goroutine until ctx
// ends, unless o.ScheduleOff; each schedule's first due time follows the
// clock's time now. With o.ScheduleAtStart each rate schedule also fires
// once first, before startSchedules returns (a cron keeps its time of
// day: the daily smoke test does not run on every start); a failed firing
// is logged, as any is.
func (s *Stack) startSchedules(ctx context.Context, o *Options) {
	if len(s.schedules) == 0 {
		return
	}
	if o.ScheduleOff {
		s.scheduleLog.Printf("off: %d schedule(s) fire only when a test calls Fire", len(s.schedules))
		return
	}
	from := s.clock.Now()
	for _, sc := range s.schedules {
		if !sc.enabled {
			s.scheduleLog.Printf("%s: %s is disabled in the template", sc.name(), sc.spec)
			continue
		}
		when := sc.spec
		if sc.every > 0 {
			when = fmt.Sprintf("every %s instead of %s", sc.every, sc.spec)
		}
		s.scheduleLog.Printf("%s: %s, first at %s", sc.name(), when, sc.expr.Next(from).UTC().Format(time.RFC3339))
		if o.ScheduleAtStart && strings.HasPrefix(sc.spec, "rate(") {
			s.scheduleLog.Printf("%s fired at start", sc.name())
			if _, err := s.fire(ctx, sc, from); err != nil {
				s.scheduleLog.Printf("%s failed: %v", sc.name(), err)
			}
		}
		job := schedule.Job{Name: sc.name(), Expression: sc.expr, Fire: func(ctx context.Context, at time.Time) error {
			_, err := s.fire(ctx, sc, at)
			return err
		}}
		s.wg.Go(func() { schedule.Run(ctx, s.clock, from, s.scheduleLog, job) })
	}
}

// Fire invokes a function now as its schedule does, with the same event,
// whether or not the stack fires its schedules by itself (ScheduleOff) and
// whether or not the template enables the schedule. logicalID names a
// function with one schedule, or one schedule of a function as
// LogicalId.Event. A function failure is a *runtimeapi.Error.
func (s *Stack) Fire(ctx context.Context, logicalID string) ([]byte, error) {
	id, event, named := strings.Cut(logicalID, ".")
	var matches, all []string
	var sc *scheduled
	for _, c := range s.schedules {
		all = append(all, c.function+"."+c.event)
		if c.function == id && (!named || c.event == event) {
			matches = append(matches, c.function+"."+c.event)
			sc = c
		}
	}
	switch len(matches) {
	case 0:
		return nil, fmt.Errorf("fire %s: no such schedule (schedules: %v)", logicalID, all)
	case 1:
	default:
		return nil, fmt.Errorf("fire %s: it has %d schedules, name one of %v", logicalID, len(matches), matches)
	}
	s.scheduleLog.Printf("%s fired by Fire", sc.name())
	return s.fire(ctx, sc, s.clock.Now())
}

// fire invokes sc's function for the due time at.
func (s *Stack) fire(ctx context.Context, sc *scheduled, at time.Time) ([]byte, error) {
	payload := sc.payload(at)
	out, err := s.invokers[sc.function].Invoke(ctx, payload)
	if s.afterSchedule != nil {
		s.afterSchedule(Firing{Function: sc.function, Event: sc.event, At: at, Payload: payload, Response: out, Err: err})
	}
	return out, err
}

// scheduling is the state of the stack's schedules.
type scheduling struct {
	schedules     []*scheduled
	invokers      map[string]poller.Invoker // by logical id
	clock         schedule.Clock
	scheduleLog   *log.Logger
	afterSchedule func(Firing)
}
