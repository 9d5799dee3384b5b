package sam

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Values are what intrinsic functions resolve against: parameter values,
// each resource's Ref value and attributes, and the pseudo parameters.
type Values struct {
	Params map[string]string // parameter values; defaults fill the gaps
	Refs   map[string]string // logical id -> Ref value (a name, ARN or URL)
	Attrs  map[string]string // "LogicalId.Attribute" -> value
	Region string
	// Account is the AWS account id the pseudo parameter AWS::AccountId names.
	Account string
	// StackName is what AWS::StackName names; "oracle-local" when empty.
	StackName string
}

// noValue marks AWS::NoValue; lists and maps drop it.
type noValue struct{}

// Param returns a parameter's value, falling back to its default.
func (t *Template) Param(name string, v *Values) (string, bool) {
	if s, ok := v.Params[name]; ok {
		return s, true
	}
	if p, ok := t.Parameters[name]; ok && p.Default != nil {
		return *p.Default, true
	}
	return "", false
}

// Resolve evaluates every intrinsic function inside x.
func (t *Template) Resolve(x any, v *Values) (any, error) {
	switch x := x.(type) {
	case Intrinsic:
		return t.intrinsic(x, v)
	case []any:
		out := make([]any, 0, len(x))
		for _, e := range x {
			r, err := t.Resolve(e, v)
			if err != nil {
				return nil, err
			}
			if _, skip := r.(noValue); !skip {
				out = append(out, r)
			}
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			r, err := t.Resolve(e, v)
			if err != nil {
				return nil, err
			}
			if _, skip := r.(noValue); !skip {
				out[k] = r
			}
		}
		return out, nil
	}
	return x, nil
}

// ResolveInt resolves x and requires a whole number; nil (a property the
// template does not set) is 0.
func (t *Template) ResolveInt(x any, v *Values) (int, error) {
	if x == nil {
		return 0, nil
	}
	r, err := t.Resolve(x, v)
	if err != nil {
		return 0, err
	}
	s := scalar(r)
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a whole number: %w", s, err)
	}
	return n, nil
}

// ResolveString resolves x and requires a string (or a list, joined by commas
// as CloudFormation does for CommaDelimitedList parameters).
func (t *Template) ResolveString(x any, v *Values) (string, error) {
	r, err := t.Resolve(x, v)
	if err != nil {
		return "", err
	}
	switch r := r.(type) {
	case string:
		return r, nil
	case []any:
		parts := make([]string, len(r))
		for i, p := range r {
			parts[i] = fmt.Sprint(p)
		}
		return strings.Join(parts, ","), nil
	case nil:
		return "", nil
	}
	return fmt.Sprint(r), nil
}

// Condition evaluates a named condition.
func (t *Template) Condition(name string, v *Values) (bool, error) {
	c, ok := t.Conditions[name]
	if !ok {
		return false, fmt.Errorf("unknown condition %q", name)
	}
	r, err := t.Resolve(c, v)
	if err != nil {
		return false, fmt.Errorf("condition %s: %w", name, err)
	}
	b, ok := r.(bool)
	if !ok {
		return false, fmt.Errorf("condition %s is not a boolean", name)
	}
	return b, nil
}

// subVar is a variable of Fn::Sub; ${!Literal} is the escape that
// writes ${Literal} itself.
var subVar = regexp.MustCompile(`\$\{([^}]+)\}`)

func (t *Template) intrinsic(x Intrinsic, v *Values) (any, error) {
	switch x.Name {
	case "Ref":
		name, _ := x.Arg.(string)
		return t.ref(name, v)
	case "Fn::GetAtt":
		parts, _ := x.Arg.([]any)
		if len(parts) != 2 {
			return nil, fmt.Errorf("Fn::GetAtt needs [resource, attribute]")
		}
		key := fmt.Sprintf("%v.%v", parts[0], parts[1])
		if s, ok := v.Attrs[key]; ok {
			return s, nil
		}
		return nil, fmt.Errorf("Fn::GetAtt %s: unknown attribute", key)
	case "Fn::Sub":
		tmpl, vars := x.Arg, map[string]any{}
		if list, ok := x.Arg.([]any); ok && len(list) == 2 {
			tmpl = list[0]
			if m, ok := list[1].(map[string]any); ok {
				vars = m
			}
		}
		s, ok := tmpl.(string)
		if !ok {
			return nil, fmt.Errorf("Fn::Sub needs a string")
		}
		var firstErr error
		out := subVar.ReplaceAllStringFunc(s, func(m string) string {
			name := m[2 : len(m)-1]
			if literal, ok := strings.CutPrefix(name, "!"); ok {
				return "${" + literal + "}"
			}
			var r any
			var err error
			if e, ok := vars[name]; ok {
				r, err = t.Resolve(e, v)
			} else if strings.Contains(name, ".") {
				parts := strings.SplitN(name, ".", 2)
				r, err = t.intrinsic(Intrinsic{Name: "Fn::GetAtt", Arg: []any{parts[0], parts[1]}}, v)
			} else {
				r, err = t.ref(name, v)
			}
			if err != nil && firstErr == nil {
				firstErr = err
			}
			return fmt.Sprint(r)
		})
		return out, firstErr
	case "Fn::Join":
		list, _ := x.Arg.([]any)
		if len(list) != 2 {
			return nil, fmt.Errorf("Fn::Join needs [delimiter, list]")
		}
		items, err := t.Resolve(list[1], v)
		if err != nil {
			return nil, err
		}
		arr, _ := items.([]any)
		parts := make([]string, len(arr))
		for i, p := range arr {
			parts[i] = fmt.Sprint(p)
		}
		return strings.Join(parts, fmt.Sprint(list[0])), nil
	case "Fn::If":
		list, _ := x.Arg.([]any)
		if len(list) != 3 {
			return nil, fmt.Errorf("Fn::If needs [condition, then, else]")
		}
		ok, err := t.Condition(fmt.Sprint(list[0]), v)
		if err != nil {
			return nil, err
		}
		if ok {
			return t.Resolve(list[1], v)
		}
		return t.Resolve(list[2], v)
	case "Fn::Not":
		list, _ := x.Arg.([]any)
		if len(list) != 1 {
			return nil, fmt.Errorf("Fn::Not needs one condition")
		}
		r, err := t.Resolve(list[0], v)
		if err != nil {
			return nil, err
		}
		b, ok := r.(bool)
		if !ok {
			return nil, fmt.Errorf("Fn::Not of a non-boolean")
		}
		return !b, nil
	case "Fn::Equals":
		list, _ := x.Arg.([]any)
		if len(list) != 2 {
			return nil, fmt.Errorf("Fn::Equals needs two values")
		}
		a, err := t.ResolveString(list[0], v)
		if err != nil {
			return nil, err
		}
		b, err := t.ResolveString(list[1], v)
		if err != nil {
			return nil, err
		}
		return a == b, nil
	case "Fn::And", "Fn::Or":
		list, _ := x.Arg.([]any)
		all := x.Name == "Fn::And"
		for _, c := range list {
			r, err := t.Resolve(c, v)
			if err != nil {
				return nil, err
			}
			b, _ := r.(bool)
			if all && !b {
				return false, nil
			}
			if !all && b {
				return true, nil
			}
		}
		return all, nil
	case "Condition":
		return t.Condition(fmt.Sprint(x.Arg), v)
	case "Fn::Split":
		list, _ := x.Arg.([]any)
		if len(list) != 2 {
			return nil, fmt.Errorf("Fn::Split needs [delimiter, string]")
		}
		s, err := t.ResolveString(list[1], v)
		if err != nil {
			return nil, err
		}
		var out []any
		for _, p := range strings.Split(s, fmt.Sprint(list[0])) {
			out = append(out, p)
		}
		return out, nil
	case "Fn::Select":
		list, _ := x.Arg.([]any)
		if len(list) != 2 {
			return nil, fmt.Errorf("Fn::Select needs [index, list]")
		}
		arr, err := t.Resolve(list[1], v)
		if err != nil {
			return nil, err
		}
		items, _ := arr.([]any)
		i := atoi(list[0])
		if i < 0 || i >= len(items) {
			return nil, fmt.Errorf("Fn::Select index %d out of range", i)
		}
		return items[i], nil
	}
	return nil, fmt.Errorf("unsupported intrinsic %s", x.Name)
}

func (t *Template) ref(name string, v *Values) (any, error) {
	switch name {
	case "AWS::NoValue":
		return noValue{}, nil
	case "AWS::Region":
		return v.Region, nil
	case "AWS::AccountId":
		return v.Account, nil
	case "AWS::URLSuffix":
		return "amazonaws.com", nil
	case "AWS::StackName":
		if v.StackName != "" {
			return v.StackName, nil
		}
		return "oracle-local", nil
	case "AWS::Partition":
		return "aws", nil
	}
	if p, ok := t.Parameters[name]; ok {
		s, _ := t.Param(name, v)
		if p.Type == "CommaDelimitedList" {
			var out []any
			for _, part := range strings.Split(s, ",") {
				if part = strings.TrimSpace(part); part != "" {
					out = append(out, part)
				}
			}
			return out, nil
		}
		return s, nil
	}
	if s, ok := v.Refs[name]; ok {
		return s, nil
	}
	return nil, fmt.Errorf("unknown parameter or resource %q in Ref", name)
}

// Function is an AWS::Serverless::Function as the local stack runs it.
type Function struct {
	LogicalID string
	CodeURI   string // package directory, e.g. functions/webhook/
	Timeout   int    // seconds
	// MemorySize is the function's memory in MB, globals applied.
	MemorySize int
	// ReservedConcurrency is ReservedConcurrentExecutions unresolved (a
	// number or an intrinsic), nil when the template sets none; resolve it
	// with Template.ResolveInt.
	ReservedConcurrency any
	Env                 map[string]any
	Routes              []Route
	Queues              []QueueEvent
	Schedules           []ScheduleEvent
	// Async is how Lambda handles the function's asynchronous invocations
	// (EventInvokeConfig).
	Async AsyncConfig
}

// AsyncConfig is a function's EventInvokeConfig: the retries of a failed
// asynchronous invocation (Lambda's default is two) and the SQS queue its
// record then goes to.
type AsyncConfig struct {
	// MaximumRetryAttempts is unresolved (a number or an intrinsic), nil
	// when the template sets none; resolve it with Template.ResolveInt.
	MaximumRetryAttempts any
	// OnFailureQueue is the logical id of the SQS queue of
	// DestinationConfig.OnFailure, "" when there is none.
	OnFailureQueue string
}

// Route is an HttpApi event.
type Route struct {
	Method string
	Path   string
}

// QueueEvent is an SQS event source mapping.
type QueueEvent struct {
	QueueLogicalID          string
	BatchSize               int
	ReportBatchItemFailures bool
	// MaximumConcurrency is ScalingConfig.MaximumConcurrency unresolved (a
	// number or an intrinsic such as !Ref GeneratorConcurrency), nil when
	// the mapping sets none; resolve it with Template.ResolveInt.
	MaximumConcurrency any
}

// ScheduleEvent is a Schedule event (an EventBridge rule) or a ScheduleV2
// event (EventBridge Scheduler) as the template writes it, intrinsics
// unresolved; Template.Schedule resolves it.
type ScheduleEvent struct {
	Name string // the event's key under Events, e.g. Every
	Type string // Schedule or ScheduleV2
	// Expression is Schedule's Schedule or ScheduleV2's ScheduleExpression:
	// a string or an Intrinsic such as Fn::Sub.
	Expression any
	// Properties are all the event's properties.
	Properties map[string]any
}

// Schedule is a schedule event resolved against the template's values.
type Schedule struct {
	Event      string // the event's key, e.g. Every
	Type       string // Schedule or ScheduleV2
	Expression string // e.g. rate(5 minutes) or cron(0 7 * * ? *)
	// Enabled is false when the template disables the schedule, with
	// Enabled: false or State: DISABLED.
	Enabled bool
	// Name is the Name property: the rule's (or the schedule's) name, empty
	// when the template leaves naming to CloudFormation.
	Name string
	// Input is the Input property, the constant JSON the function gets
	// instead of the event; empty for the event.
	Input string
	// Timezone is ScheduleV2's ScheduleExpressionTimezone; empty means UTC.
	Timezone string
}

// Schedule resolves a schedule event's expression and properties.
func (t *Template) Schedule(e ScheduleEvent, v *Values) (Schedule, error) {
	s := Schedule{Event: e.Name, Type: e.Type, Enabled: true}
	fail := func(format string, args ...any) (Schedule, error) {
		return Schedule{}, fmt.Errorf("schedule %s: "+format, append([]any{e.Name}, args...)...)
	}
	var err error
	if e.Expression == nil {
		return fail("no expression (Schedule, or ScheduleExpression for ScheduleV2)")
	}
	if s.Expression, err = t.ResolveString(e.Expression, v); err != nil {
		return fail("expression: %w", err)
	}
	for _, p := range []struct {
		key  string
		into *string
	}{{"Name", &s.Name}, {"Input", &s.Input}, {"ScheduleExpressionTimezone", &s.Timezone}} {
		if x, ok := e.Properties[p.key]; ok {
			if *p.into, err = t.ResolveString(x, v); err != nil {
				return fail("%s: %w", p.key, err)
			}
		}
	}
	enabled, hasEnabled := e.Properties["Enabled"]
	state, hasState := e.Properties["State"]
	switch {
	case hasEnabled && hasState:
		return fail("set Enabled or State, not both (SAM refuses both)")
	case hasEnabled:
		b, err := t.ResolveString(enabled, v)
		if err != nil {
			return fail("Enabled: %w", err)
		}
		switch strings.ToLower(b) {
		case "true":
		case "false":
			s.Enabled = false
		default:
			return fail("Enabled is %q, want true or false", b)
		}
	case hasState:
		st, err := t.ResolveString(state, v)
		if err != nil {
			return fail("State: %w", err)
		}
		switch st {
		case "ENABLED", "ENABLED_WITH_ALL_CLOUDTRAIL_MANAGEMENT_EVENTS":
		case "DISABLED":
			s.Enabled = false
		default:
			return fail("State is %q, want ENABLED or DISABLED", st)
		}
	}
	return s, nil
}

// Functions returns every serverless function with globals applied.
func (t *Template) Functions() []Function {
	var out []Function
	for _, r := range t.OfType("AWS::Serverless::Function") {
		p := r.Properties
		f := Function{
			LogicalID:  r.LogicalID,
			CodeURI:    scalar(p["CodeUri"]),
			Timeout:    t.Globals.Timeout,
			MemorySize: t.Globals.MemorySize,
			Env:        map[string]any{},
		}
		if v, ok := p["Timeout"]; ok {
			f.Timeout = atoi(v)
		}
		if v, ok := p["MemorySize"]; ok {
			f.MemorySize = atoi(v)
		}
		if v, ok := p["ReservedConcurrentExecutions"]; ok {
			f.ReservedConcurrency = v
		}
		eic := mapOf(p["EventInvokeConfig"])
		f.Async.MaximumRetryAttempts = eic["MaximumRetryAttempts"]
		if d := mapOf(mapOf(eic["DestinationConfig"])["OnFailure"]); scalar(d["Type"]) == "SQS" {
			if in, ok := d["Destination"].(Intrinsic); ok {
				if parts, ok := in.Arg.([]any); ok && in.Name == "Fn::GetAtt" && len(parts) > 0 {
					f.Async.OnFailureQueue = fmt.Sprint(parts[0])
				}
			}
		}
		for k, v := range t.Globals.Environment {
			f.Env[k] = v
		}
		for k, v := range mapOf(mapOf(p["Environment"])["Variables"]) {
			f.Env[k] = v
		}
		names := make([]string, 0)
		events := mapOf(p["Events"])
		for name := range events {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			ev := mapOf(events[name])
			props := mapOf(ev["Properties"])
			switch scalar(ev["Type"]) {
			case "HttpApi":
				f.Routes = append(f.Routes, Route{Method: strings.ToUpper(scalar(props["Method"])), Path: scalar(props["Path"])})
			case "SQS":
				q := QueueEvent{BatchSize: 10}
				if in, ok := props["Queue"].(Intrinsic); ok {
					if parts, ok := in.Arg.([]any); ok && len(parts) > 0 {
						q.QueueLogicalID = fmt.Sprint(parts[0])
					} else {
						q.QueueLogicalID = fmt.Sprint(in.Arg)
					}
				}
				if v, ok := props["BatchSize"]; ok {
					q.BatchSize = atoi(v)
				}
				if v, ok := mapOf(props["ScalingConfig"])["MaximumConcurrency"]; ok {
					q.MaximumConcurrency = v
				}
				for _, ft := range anyList(props["FunctionResponseTypes"]) {
					if ft == "ReportBatchItemFailures" {
						q.ReportBatchItemFailures = true
					}
				}
				f.Queues = append(f.Queues, q)
			case "Schedule":
				f.Schedules = append(f.Schedules, ScheduleEvent{Name: name, Type: "Schedule", Expression: props["Schedule"], Properties: props})
			case "ScheduleV2":
				f.Schedules = append(f.Schedules, ScheduleEvent{Name: name, Type: "ScheduleV2", Expression: props["ScheduleExpression"], Properties: props})
			}
		}
		out = append(out, f)
	}
	return out
}

func anyList(v any) []string {
	list, _ := v.([]any)
	out := make([]string, 0, len(list))
	for _, e := range list {
		out = append(out, fmt.Sprint(e))
	}
	return out
}
