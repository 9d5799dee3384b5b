package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"42sisters.ai/oracle/shared/oracle"
)

// TestEveryLineOfAnInvocationNamesItsRequestTraceAndOrder runs the mailer's
// handler as Lambda does (a request id and an X-Ray trace header on the
// context) over an order's verdict email and a redelivery of it: every line
// it writes carries the request id, the trace id, the order's name (never
// its whole id) and the SQS message it was processing.
func TestEveryLineOfAnInvocationNamesItsRequestTraceAndOrder(t *testing.T) {
	e := newEnv(t)
	sent := e.paidSession(oracle.TierQuick, uniqueAddress(t))
	e.ready(sent, oracle.TierQuick, oracle.VerdictGreen)
	refused := e.paidSession(oracle.TierFull, uniqueAddress(t))
	e.ready(refused, oracle.TierFull, oracle.VerdictRed)
	sender := e.h.Brand.Sender
	for _, c := range []struct {
		name, order, sender, request, trace, message string
		atLeast                                      int // lines
	}{
		{"sent", sent, sender, "0b3e6f1a-2c4d-4e5f-8a9b-0c1d2e3f4a5b", "6744f2a1b2c3d4e5f6a7b8c9d0e1f2a3", "msg-first", 1},
		{"redelivered", sent, sender, "9f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a", "6744f2a2a1b2c3d4e5f6a7b8c9d0e1f2", "msg-redelivered", 1},
		// The refusal's lines come from the alerter and the audit recorder
		// too (shared packages), not only the mailer's own.
		{"refused", refused, "unverified@example.org", "5a4b3c2d-1e0f-4a9b-8c7d-6e5f4a3b2c1d", "6744f2a3f2e1d0c9b8a7f6e5d4c3b2a1", "msg-refused", 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			e.h.Brand.Sender = c.sender
			before := len(e.logs.String())
			ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: c.request})
			//lint:ignore SA1029 the key aws-lambda-go itself puts the trace header under
			ctx = context.WithValue(ctx, "x-amzn-trace-id", "Root=1-"+c.trace[:8]+"-"+c.trace[8:]+";Parent=53995c3f42cd8ad8;Sampled=1")
			rec := record(c.order, oracle.MailVerdict)
			rec.MessageId = c.message
			if _, err := e.h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{rec}}); err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(e.logs.String()[before:]), "\n")
			if len(lines) < c.atLeast || lines[0] == "" {
				t.Fatalf("%d lines, want at least %d:\n%s", len(lines), c.atLeast, strings.Join(lines, "\n"))
			}
			want := map[string]string{"request_id": c.request, "trace_id": c.trace, "order": oracle.ShortID(c.order), "sqs_message_id": c.message}
			waits := 0
			for _, l := range lines {
				var f map[string]any
				if err := json.Unmarshal([]byte(l), &f); err != nil {
					t.Fatalf("not a JSON line: %s", l)
				}
				// The slowest-orders query sorts the "mail sent" lines by
				// the customer's wait.
				if f["msg"] == "mail sent" {
					if w, ok := f["wait_ms"].(float64); !ok || w < 0 {
						t.Errorf("the mail sent line has no wait_ms: %s", l)
					}
					waits++
				}
				for k, v := range want {
					if f[k] != v {
						t.Errorf("%s = %v, want %s, in %s", k, f[k], v, l)
					}
				}
			}
			if sentNow := c.name == "sent"; sentNow != (waits == 1) {
				t.Errorf("%d mail sent lines, want %d", waits, map[bool]int{true: 1}[sentNow])
			}
		})
	}
}
