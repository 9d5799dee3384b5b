package sqsbatch

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/obs"
	"42sisters.ai/oracle/shared/tracing"
)

func TestOnlyFailedRecordsAreReportedAndCounted(t *testing.T) {
	var logs bytes.Buffer
	metrics := &testkit.Metrics{}
	ev := events.SQSEvent{Records: []events.SQSMessage{{MessageId: "ok"}, {MessageId: "fails"}, {MessageId: "panics"}, {MessageId: "ok2"}}}
	resp := Process(context.Background(), obs.NewLogger(&logs, "INFO"), Failures{Metrics: metrics, Name: "TestRecordFailures"}, ev, func(_ context.Context, r events.SQSMessage) error {
		switch r.MessageId {
		case "fails":
			return errors.New("boom")
		case "panics":
			panic("kaboom")
		}
		return nil
	})
	var got []string
	for _, f := range resp.BatchItemFailures {
		got = append(got, f.ItemIdentifier)
	}
	if strings.Join(got, ",") != "fails,panics" {
		t.Fatalf("failures %v", got)
	}
	if !strings.Contains(logs.String(), "kaboom") {
		t.Fatal("the panic was not logged")
	}
	if c := metrics.Counts(); !maps.Equal(c, map[string]float64{"TestRecordFailures": 2}) {
		t.Fatalf("counted %v, want the failed and the panicked record", c)
	}
}

// A batch that succeeds counts nothing, and a function without metrics
// (nil) still has its failures reported.
func TestSuccessCountsNothing(t *testing.T) {
	log := obs.NewLogger(&bytes.Buffer{}, "INFO")
	metrics := &testkit.Metrics{}
	ev := events.SQSEvent{Records: []events.SQSMessage{{MessageId: "ok"}}}
	ok := func(context.Context, events.SQSMessage) error { return nil }
	if resp := Process(context.Background(), log, Failures{Metrics: metrics, Name: "TestRecordFailures"}, ev, ok); len(resp.BatchItemFailures) != 0 {
		t.Fatalf("failures %v", resp.BatchItemFailures)
	}
	if c := metrics.Counts(); len(c) != 0 {
		t.Fatalf("counted %v for a batch that succeeded", c)
	}
	fail := func(context.Context, events.SQSMessage) error { return errors.New("boom") }
	if resp := Process(context.Background(), log, Failures{}, ev, fail); len(resp.BatchItemFailures) != 1 {
		t.Fatalf("failures %v without metrics", resp.BatchItemFailures)
	}
}

// TestEachRecordContinuesItsSendersTrace: in a batch, each record's span
// is the child of the span that sent its message (its traceparent
// attribute) and linked to the invocation's; a message that carries no
// trace context, or a malformed one, is processed all the same, its span
// the invocation's child.
func TestEachRecordContinuesItsSendersTrace(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)))
	t.Cleanup(func() { otel.SetTracerProvider(prev) })

	sender, send := tracing.Tracer().Start(context.Background(), "send")
	send.End()
	sent := tracing.ToMessage(sender)
	attr := func(v string) map[string]events.SQSMessageAttribute {
		return map[string]events.SQSMessageAttribute{"traceparent": {DataType: "String", StringValue: &v}}
	}
	ev := events.SQSEvent{Records: []events.SQSMessage{
		{MessageId: "traced", EventSourceARN: "arn:aws:sqs:us-east-1:1:jobs", MessageAttributes: attr(sent["traceparent"])},
		{MessageId: "bare", EventSourceARN: "arn:aws:sqs:us-east-1:1:jobs"},
		{MessageId: "malformed", EventSourceARN: "arn:aws:sqs:us-east-1:1:jobs", MessageAttributes: attr("00-zz-yy-01")},
	}}
	ctx, inv := tracing.Tracer().Start(context.Background(), "invocation")
	var done []string
	resp := Process(ctx, obs.NewLogger(&bytes.Buffer{}, "INFO"), Failures{}, ev, func(_ context.Context, r events.SQSMessage) error {
		done = append(done, r.MessageId)
		return nil
	})
	inv.End()
	if len(resp.BatchItemFailures) != 0 || strings.Join(done, ",") != "traced,bare,malformed" {
		t.Fatalf("processed %v, failed %v: every record is processed", done, resp.BatchItemFailures)
	}
	parents := map[string]trace.SpanContext{}
	links := map[string]int{}
	for _, s := range rec.Ended() {
		for _, a := range s.Attributes() {
			if a.Key == "messaging.message.id" {
				parents[a.Value.AsString()] = s.Parent()
				links[a.Value.AsString()] = len(s.Links())
			}
		}
	}
	if p := parents["traced"]; p.SpanID() != send.SpanContext().SpanID() || p.TraceID() != send.SpanContext().TraceID() || links["traced"] != 1 {
		t.Errorf("the traced record's parent %v (%d links), want the send %v, linked to the invocation", p, links["traced"], send.SpanContext())
	}
	for _, id := range []string{"bare", "malformed"} {
		if p := parents[id]; p.SpanID() != inv.SpanContext().SpanID() || links[id] != 0 {
			t.Errorf("record %s: parent %v (%d links), want the invocation %v", id, p, links[id], inv.SpanContext())
		}
	}
}
