package sam

import "testing"

const concurrencyDoc = `
Parameters:
  Cap: {Type: Number, Default: 5}
Globals:
  Function:
    MemorySize: 256
Resources:
  Queue: {Type: AWS::SQS::Queue}
  Capped:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: functions/capped/
      Events:
        Jobs: {Type: SQS, Properties: {Queue: !GetAtt Queue.Arn, ScalingConfig: {MaximumConcurrency: !Ref Cap}}}
  Single:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: functions/single/
      MemorySize: 512
      ReservedConcurrentExecutions: 1
`

// TestConcurrencyAndMemory reads what the local stack enforces and what
// the cost tool bills: an event source's maximum concurrency (a parameter
// here, as the template's generator has), a reserved concurrency and each
// function's memory with the globals applied.
func TestConcurrencyAndMemory(t *testing.T) {
	tmpl, err := Parse([]byte(concurrencyDoc))
	if err != nil {
		t.Fatal(err)
	}
	fns := tmpl.Functions()
	if len(fns) != 2 {
		t.Fatalf("%d functions, want 2", len(fns))
	}
	capped, single := fns[0], fns[1]
	for _, tc := range []struct {
		name string
		x    any
		v    *Values
		want int
	}{
		{"the default of the parameter", capped.Queues[0].MaximumConcurrency, &Values{}, 5},
		{"the parameter as deployed", capped.Queues[0].MaximumConcurrency, &Values{Params: map[string]string{"Cap": "20"}}, 20},
		{"a literal", single.ReservedConcurrency, &Values{}, 1},
		{"not set", capped.ReservedConcurrency, &Values{}, 0},
	} {
		got, err := tmpl.ResolveInt(tc.x, tc.v)
		if err != nil || got != tc.want {
			t.Errorf("%s: %d (%v), want %d", tc.name, got, err, tc.want)
		}
	}
	if capped.MemorySize != 256 || single.MemorySize != 512 {
		t.Errorf("memory %d and %d MB, want the global 256 and the function's own 512", capped.MemorySize, single.MemorySize)
	}
	if _, err := tmpl.ResolveInt("five", &Values{}); err == nil {
		t.Error("a concurrency that is not a number resolved")
	}
}
