package sam

import (
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
		"SUB": "oracle-t-Table-arn:q", "JOIN": "https://a,https://b",
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
