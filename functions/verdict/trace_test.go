package main

import (
	"context"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"42sisters.ai/oracle/shared/tracing"
)

// TestAPollNamesItsOrder: the result page's poll is the browser's trace,
// not the order's; its invocation names the order it asked about.
func TestAPollNamesItsOrder(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tracing.OrderNamer{}), sdktrace.WithSpanProcessor(rec)))
	t.Cleanup(func() { otel.SetTracerProvider(prev) })
	e := newEnv(t)
	const id = "cs_test_polltrace"
	ctx, inv := tracing.Tracer().Start(context.Background(), "verdict")
	if _, err := e.h.Handle(ctx, events.APIGatewayV2HTTPRequest{QueryStringParameters: map[string]string{"session_id": id}}); err != nil {
		t.Fatal(err)
	}
	inv.End()
	for _, sp := range rec.Ended() {
		for _, a := range sp.Attributes() {
			if sp.Name() == "verdict" && a.Key == tracing.Order && a.Value.AsString() == id {
				return
			}
		}
	}
	t.Fatalf("the poll's span does not name the order %s", id)
}
