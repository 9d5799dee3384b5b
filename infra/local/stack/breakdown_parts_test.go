package stack_test

import (
	"strings"
	"testing"
	"time"

	"42sisters.ai/oracle/infra/local/traces"
)

// TestOrderPartsCutTheWindow: an order's window, from its payment to the
// send's stamp, is cut into parts that follow one another and add up to
// it: the payment's way to the webhook (its first calls in its own trace,
// linked), each function's AWS calls, other calls by peer and own work up
// to its hand-off, each queue's hop from the send's answer to the next
// invocation, the send to its stamp. Overlapping calls count once, the
// AWS call's; calls after the hand-off count nowhere.
func TestOrderPartsCutTheWindow(t *testing.T) {
	aws := map[string]any{"rpc.system": "aws-api"}
	span := func(trace, id, parent, service, kind, name string, start, end uint64, attrs map[string]any) traces.Span {
		return traces.Span{TraceID: trace, SpanID: id, ParentSpanID: parent, Service: service, Kind: kind, Name: name,
			Start: start, End: end, Attributes: attrs}
	}
	webhook := span("o", "w", "c", "webhook", "internal", "checkout.session.completed", 12, 40, nil)
	webhook.Links = []traces.Link{{TraceID: "h", SpanID: "wh"}}
	spans := []traces.Span{
		span("o", "c", "", "checkout", "server", "checkout", 0, 5, nil),
		span("h", "wh", "", "webhook", "server", "webhook", 10, 60, nil),
		webhook,
		span("o", "w1", "w", "webhook", "client", "DynamoDB.PutItem", 14, 20, aws),
		span("o", "ws", "w", "webhook", "producer", "send GenerateQueue", 21, 30, nil),
		span("o", "ws1", "ws", "webhook", "client", "SQS.SendMessage", 21, 30, aws),
		// After the hand-off: on no part.
		span("o", "w2", "w", "webhook", "client", "S3.PutObject", 31, 50, aws),
		span("o", "g", "ws", "generator", "consumer", "generator", 32, 100, nil),
		span("o", "g1", "g", "generator", "client", "DynamoDB.UpdateItem", 33, 45, aws),
		// Beside the update: the update's time.
		span("o", "g2", "g", "generator", "client", "DynamoDB.GetItem", 34, 40, aws),
		span("o", "g3", "g", "generator", "client", "gemini POST", 47, 52, map[string]any{"server.address": "127.0.0.1"}),
		span("o", "gs", "g", "generator", "producer", "send MailQueue", 55, 60, nil),
		span("o", "gs1", "gs", "generator", "client", "SQS.SendMessage", 55, 60, aws),
		span("o", "m", "gs", "mailer", "consumer", "mailer", 61, 90, nil),
		span("o", "m1", "m", "mailer", "client", "DynamoDB.UpdateItem", 62, 70, aws),
		// Half beside the update: the rest is Stripe's.
		span("o", "m2", "m", "mailer", "client", "stripe GET", 66, 72, map[string]any{"server.address": "127.0.0.1"}),
		span("o", "m3", "m", "mailer", "client", "SESv2.SendEmail", 73, 80, aws),
	}
	paid, sent := time.Unix(0, 8), time.Unix(0, 81)
	got, err := orderParts(spans, paid, sent)
	if err != nil {
		t.Fatal(err)
	}
	want := []part{
		{"the payment to the webhook", 2},
		{"webhook: AWS calls", 6 + 9}, {"webhook: own work", 20 - 6 - 9},
		{"the queue to the generator", 2},
		{"generator: AWS calls", 12 + 5}, {"generator: gemini", 5}, {"generator: own work", 28 - 12 - 5 - 5},
		{"the queue to the mailer", 1},
		{"mailer: AWS calls", 8 + 7}, {"mailer: stripe", 2}, {"mailer: own work", 19 - 15 - 2},
		{"the send to its stamp", 1},
	}
	if len(got) != len(want) {
		t.Fatalf("parts %v, want %v", got, want)
	}
	var sum time.Duration
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("part %d: %v, want %v", i, got[i], want[i])
		}
		sum += got[i].took
	}
	if sum != sent.Sub(paid) {
		t.Errorf("the parts add up to %v, want the window's %v", sum, sent.Sub(paid))
	}

	var none []traces.Span
	for _, sp := range spans {
		if sp.Name != "SESv2.SendEmail" {
			none = append(none, sp)
		}
	}
	if _, err := orderParts(none, paid, sent); err == nil || !strings.Contains(err.Error(), "no email sent") {
		t.Errorf("an order without its email: %v, want an error naming it", err)
	}
}
