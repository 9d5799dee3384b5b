package sam

import (
	"fmt"
	"strings"
	"testing"
)

const doc = `
Parameters:
  Name: {Type: String, Default: oracle}
  Origins: {Type: CommaDelimitedList}
  Empty: {Type: String, Default: ""}
Conditions:
  HasEmpty: !Not [!Equals [!Ref Empty, ""]]
Globals:
  Function:
    Timeout: 10
    Environment:
      Variables:
        TABLE: !Ref Table
Resources:
  Table: {Type: AWS::DynamoDB::Table}
  Queue: {Type: AWS::SQS::Queue}
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: functions/fn/
      Timeout: 30
      Environment:
        Variables:
          ARN: !GetAtt Queue.Arn
          LONG: {"Fn::GetAtt": [Queue, Arn]}
          SUB: !Sub "${Name}-${Table}-${Queue.Arn}"
          ESCAPED: !Sub "${Name}/date=${!date}"
          JOIN: !Join [",", !Ref Origins]
          IF: !If [HasEmpty, yes, !Ref AWS::NoValue]
      Events:
        Api: {Type: HttpApi, Properties: {Method: post, Path: /api/x}}
        Jobs: {Type: SQS, Properties: {Queue: !GetAtt Queue.Arn, BatchSize: 5, FunctionResponseTypes: [ReportBatchItemFailures]}}
`

func TestParseAndResolve(t *testing.T) {
	tmpl, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	v := &Values{
		Params: map[string]string{"Origins": "https://a, https://b"},
		Refs:   map[string]string{"Table": "t-Table", "Queue": "http://q"},
		Attrs:  map[string]string{"Queue.Arn": "arn:q"},
	}
	fns := tmpl.Functions()
	if len(fns) != 1 {
		t.Fatalf("%d functions", len(fns))
	}
	fn := fns[0]
	if fn.Timeout != 30 || fn.CodeURI != "functions/fn/" {
		t.Fatalf("function %+v", fn)
	}
	if len(fn.Routes) != 1 || fn.Routes[0] != (Route{Method: "POST", Path: "/api/x"}) {
		t.Fatalf("routes %+v", fn.Routes)
	}
	if len(fn.Queues) != 1 || fn.Queues[0] != (QueueEvent{QueueLogicalID: "Queue", BatchSize: 5, ReportBatchItemFailures: true}) {
		t.Fatalf("queues %+v", fn.Queues)
	}
	want := map[string]string{
		"TABLE": "t-Table", "ARN": "arn:q", "LONG": "arn:q",
		"SUB": "oracle-t-Table-arn:q", "JOIN": "https://a,https://b", "ESCAPED": "oracle/date=${date}",
	}
	for k, w := range want {
		got, err := tmpl.ResolveString(fn.Env[k], v)
		if err != nil || got != w {
			t.Errorf("%s = %q (%v), want %q", k, got, err, w)
		}
	}
	r, err := tmpl.Resolve(map[string]any{"IF": fn.Env["IF"]}, v)
	if err != nil || len(r.(map[string]any)) != 0 {
		t.Errorf("AWS::NoValue was not dropped: %v %v", r, err)
	}
	if _, err := tmpl.ResolveString(Intrinsic{Name: "Ref", Arg: "Nope"}, v); err == nil {
		t.Error("an unknown Ref resolved")
	}
}

const scheduled = `
Parameters:
  PeriodMinutes: {Type: Number, Default: 5}
  Paused: {Type: String, Default: "false"}
Conditions:
  IsPaused: !Equals [!Ref Paused, "true"]
Resources:
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: functions/fn/
      Events:
        Every:
          Type: Schedule
          Properties:
            Schedule: !Sub "rate(${PeriodMinutes} minutes)"
            Description: the health check
        Daily:
          Type: Schedule
          Properties:
            Schedule: cron(0 7 * * ? *)
            Name: daily-rule
            Input: '{"smoke":true}'
        Off: {Type: Schedule, Properties: {Schedule: rate(1 hour), Enabled: false}}
        On: {Type: Schedule, Properties: {Schedule: rate(1 hour), Enabled: true}}
        Stopped: {Type: Schedule, Properties: {Schedule: rate(1 hour), State: DISABLED}}
        Started: {Type: Schedule, Properties: {Schedule: rate(1 hour), State: ENABLED}}
        Switched: {Type: Schedule, Properties: {Schedule: rate(1 hour), Enabled: !Not [!Condition IsPaused]}}
        V2: {Type: ScheduleV2, Properties: {ScheduleExpression: rate(2 hours), ScheduleExpressionTimezone: Europe/Paris, State: DISABLED}}
        Both: {Type: Schedule, Properties: {Schedule: rate(1 hour), Enabled: false, State: DISABLED}}
        Maybe: {Type: Schedule, Properties: {Schedule: rate(1 hour), Enabled: maybe}}
        Paused: {Type: Schedule, Properties: {Schedule: rate(1 hour), State: PAUSED}}
        Missing: {Type: Schedule, Properties: {Description: no expression}}
        Unknown: {Type: Schedule, Properties: {Schedule: !Sub "rate(${Nope} minutes)"}}
        Api: {Type: HttpApi, Properties: {Method: get, Path: /x}}
`

func TestSchedule(t *testing.T) {
	tmpl, err := Parse([]byte(scheduled))
	if err != nil {
		t.Fatal(err)
	}
	fn := tmpl.Functions()[0]
	events := map[string]ScheduleEvent{}
	for _, e := range fn.Schedules {
		events[e.Name] = e
	}
	if len(events) != 13 || len(fn.Routes) != 1 {
		t.Fatalf("%d schedules, %d routes", len(events), len(fn.Routes))
	}
	tests := []struct {
		event  string
		params map[string]string
		want   Schedule
		err    string
	}{
		{"Every", nil, Schedule{Event: "Every", Type: "Schedule", Expression: "rate(5 minutes)", Enabled: true}, ""},
		{"Every", map[string]string{"PeriodMinutes": "2"}, Schedule{Event: "Every", Type: "Schedule", Expression: "rate(2 minutes)", Enabled: true}, ""},
		{"Daily", nil, Schedule{Event: "Daily", Type: "Schedule", Expression: "cron(0 7 * * ? *)", Enabled: true, Name: "daily-rule", Input: `{"smoke":true}`}, ""},
		{"Off", nil, Schedule{Event: "Off", Type: "Schedule", Expression: "rate(1 hour)"}, ""},
		{"On", nil, Schedule{Event: "On", Type: "Schedule", Expression: "rate(1 hour)", Enabled: true}, ""},
		{"Stopped", nil, Schedule{Event: "Stopped", Type: "Schedule", Expression: "rate(1 hour)"}, ""},
		{"Started", nil, Schedule{Event: "Started", Type: "Schedule", Expression: "rate(1 hour)", Enabled: true}, ""},
		{"Switched", nil, Schedule{Event: "Switched", Type: "Schedule", Expression: "rate(1 hour)", Enabled: true}, ""},
		{"Switched", map[string]string{"Paused": "true"}, Schedule{Event: "Switched", Type: "Schedule", Expression: "rate(1 hour)"}, ""},
		{"V2", nil, Schedule{Event: "V2", Type: "ScheduleV2", Expression: "rate(2 hours)", Timezone: "Europe/Paris"}, ""},
		{"Both", nil, Schedule{}, "Enabled or State, not both"},
		{"Maybe", nil, Schedule{}, `Enabled is "maybe"`},
		{"Paused", nil, Schedule{}, `State is "PAUSED"`},
		{"Missing", nil, Schedule{}, "no expression"},
		{"Unknown", nil, Schedule{}, `"Nope"`},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprint(tc.event, tc.params), func(t *testing.T) {
			got, err := tmpl.Schedule(events[tc.event], &Values{Params: tc.params})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "schedule "+tc.event) {
					t.Fatalf("Schedule = %+v, %v; want an error naming the event and saying %q", got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("Schedule = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}
