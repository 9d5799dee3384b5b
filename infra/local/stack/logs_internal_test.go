package stack

import (
	"slices"
	"testing"

	"42sisters.ai/oracle/shared/oracle"
)

// The functions' JSON lines are read out of everything the stack writes,
// with the function each came from.
func TestFunctionLogsReadTheFunctionsLines(t *testing.T) {
	const order = "cs_test_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8s9T0u1V2w3X4y5Z6"
	name := oracle.ShortID(order) // what the lines name it by
	output := `[gateway] POST /api/webhook 200
[stripe] time=2026-11-27T05:00:00Z level=INFO msg="fakestripe: session completed"
[WebhookFunction#1] {"time":"2026-11-27T05:00:01Z","level":"INFO","msg":"event processed","request_id":"r-1","trace_id":"5759e988bd862e3fe1be46a994272793","order":"` + name + `"}
[WebhookFunction#1] 0d6e9c1a Task timed out after 10.00 seconds
[GeneratorFunction#2] {"level":"INFO","msg":"verdict stored","request_id":"r-2","order":"` + name + `","sqs_message_id":"m-1"}
[MailerFunction#1] {"level":"WARN","msg":"mail job for an unknown order acknowledged","request_id":"r-3","trace_id":"0af7651916cd43dd8448eb211c80319c"}
[MailerFunction#1] {not json
[MailerFunction#1] {"_aws":{"Timestamp":1795756853034,"CloudWatchMetrics":[]},"EmailsSent":1}
`
	lines := FunctionLogs(output)
	var functions []string
	for _, l := range lines {
		functions = append(functions, l.Function)
	}
	if !slices.Equal(functions, []string{"WebhookFunction", "GeneratorFunction", "MailerFunction", "MailerFunction", "MailerFunction"}) {
		t.Fatalf("functions %v", functions)
	}
	if !lines[4].Metric || lines[0].Metric || lines[3].Metric {
		t.Errorf("only the EMF line is a metric: %+v", lines)
	}
	if lines[3].Fields != nil || lines[3].Text != "{not json" {
		t.Errorf("a line that is not JSON: %+v", lines[3])
	}
	if m := lines[1].Missing("request_id", "trace_id", "order"); !slices.Equal(m, []string{"trace_id"}) {
		t.Errorf("missing %v, want [trace_id]", m)
	}
	ordered := OrderLogs(output, order)
	if len(ordered) != 2 || ordered[0].Fields["msg"] != "event processed" || ordered[1].Fields["sqs_message_id"] != "m-1" {
		t.Errorf("the order's lines: %+v", ordered)
	}
	if by := OrderLogs(output, name); len(by) != 2 {
		t.Errorf("the order's name finds %d lines, want 2", len(by))
	}
	if len(OrderLogs(output, order[:20])) != 0 {
		t.Error("a prefix of the order's name finds its lines")
	}
}
