package stack_test

import (
	"slices"
	"testing"
	"time"

	"42sisters.ai/oracle/infra/local/stack"
	"42sisters.ai/oracle/infra/testkit"
)

// checkOrderLogs checks the log lines of one paid order's run (the stack's
// captured output): the webhook, the generator and the mailer each logged
// it; every line that names the order carries its Lambda request id and its
// trace id; and the generator's and the mailer's lines are in one trace,
// the one the webhook's claim continued (one trace per order).
func checkOrderLogs(t *testing.T, logs *testkit.Buffer, order string) {
	t.Helper()
	// A function's lines reach the stack's output through its process's
	// pipe, which may be just after the email shows in the mailbox.
	var lines []stack.LogLine
	testkit.Eventually(10*time.Second, 50*time.Millisecond, func() bool {
		lines = stack.OrderLogs(logs.String(), order)
		for _, fn := range []string{"WebhookFunction", "GeneratorFunction", "MailerFunction"} {
			if !slices.ContainsFunc(lines, func(l stack.LogLine) bool { return l.Function == fn && !l.Metric }) {
				return false
			}
		}
		return true
	})
	by := map[string][]stack.LogLine{}
	for _, l := range lines {
		if l.Metric {
			continue
		}
		by[l.Function] = append(by[l.Function], l)
		if missing := l.Missing("request_id", "trace_id"); len(missing) > 0 {
			t.Errorf("%s logged for the order without %v: %s", l.Function, missing, l.Text)
		}
	}
	for _, fn := range []string{"WebhookFunction", "GeneratorFunction", "MailerFunction"} {
		if len(by[fn]) == 0 {
			t.Errorf("%s logged nothing naming the order %s", fn, order)
		}
	}
	traces := map[string]bool{}
	for _, fn := range []string{"GeneratorFunction", "MailerFunction"} {
		for _, l := range by[fn] {
			traces[l.Fields["trace_id"].(string)] = true
		}
	}
	if len(traces) != 1 {
		t.Errorf("the generator's and the mailer's lines for the order are in %d traces, want one: %v", len(traces), traces)
	}
	for trace := range traces {
		found := false
		for _, l := range by["WebhookFunction"] {
			found = found || l.Fields["trace_id"] == trace
		}
		if !found {
			t.Errorf("no webhook line for the order is in its trace %s", trace)
		}
	}
}
