package main

import (
	"testing"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"42sisters.ai/oracle/shared/sesevent"
	"42sisters.ai/oracle/shared/tracing"
)

// TestAMailEventNamesItsOrder: SES's events reach the feedback function
// without a trace context, so their spans are a trace of their own; the
// record's span and its store calls name the order, by which the operator
// finds them.
func TestAMailEventNamesItsOrder(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tracing.OrderNamer{}), sdktrace.WithSpanProcessor(rec)))
	t.Cleanup(func() { otel.SetTracerProvider(prev) })
	e := newEnv(t)
	const id, msg = "cs_test_feedbacktrace", "ses-feedback-trace"
	e.sent(id, msg)
	if n := e.run(notification(t, sesevent.Delivery, id, msg, "jane@example.com")); n != 0 {
		t.Fatalf("%d failures", n)
	}
	named := 0
	for _, sp := range rec.Ended() {
		for _, a := range sp.Attributes() {
			if a.Key == tracing.Order && a.Value.AsString() == id {
				named++
			}
		}
	}
	if named == 0 {
		t.Fatalf("no span of %d names the order %s", len(rec.Ended()), id)
	}
}
