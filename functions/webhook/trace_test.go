package main

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/tracing"
)

// TestTheClaimContinuesTheCheckoutsTrace: the paid session carries the
// checkout's traceparent in client_reference_id; the claim's span is that
// span's child, linked to the webhook's invocation (Stripe's request), and
// the generate job's send is the claim's child, all naming the order.
func TestTheClaimContinuesTheCheckoutsTrace(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tracing.OrderNamer{}), sdktrace.WithSpanProcessor(rec)))
	t.Cleanup(func() { otel.SetTracerProvider(prev) })

	e := newEnv(t, Secrets{Test: testSecret})
	s := paidSession("cs_test_traced1", oracle.TierQuick, "Should I open a bakery?")
	s.TraceParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	body := e.event("evt_traced1", audit.EventCheckoutCompleted, s)
	ctx, inv := tracing.Tracer().Start(context.Background(), "webhook")
	resp, err := e.h.Handle(ctx, request(body, sign(body, testSecret, time.Now())))
	inv.End()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("got %v %s", err, status(resp))
	}
	var claim, send sdktrace.ReadOnlySpan
	for _, sp := range rec.Ended() {
		switch {
		case sp.Name() == string(audit.EventCheckoutCompleted):
			claim = sp
		case strings.HasPrefix(sp.Name(), "send "):
			send = sp
		}
	}
	if claim == nil || send == nil {
		t.Fatalf("no claim or send span among %d", len(rec.Ended()))
	}
	if p := claim.Parent(); p.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || p.SpanID().String() != "00f067aa0ba902b7" {
		t.Errorf("the claim's parent %v, want the checkout's span", p)
	}
	if l := claim.Links(); len(l) != 1 || l[0].SpanContext.SpanID() != inv.SpanContext().SpanID() {
		t.Errorf("the claim's links %v, want the invocation", l)
	}
	if send.Parent().SpanID() != claim.SpanContext().SpanID() {
		t.Errorf("the job's send is not the claim's child")
	}
	for _, sp := range []sdktrace.ReadOnlySpan{claim, send} {
		found := false
		for _, a := range sp.Attributes() {
			found = found || a.Key == tracing.Order && a.Value.AsString() == s.ID
		}
		if !found {
			t.Errorf("span %q does not name the order %s", sp.Name(), s.ID)
		}
	}
}
