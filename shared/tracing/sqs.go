package tracing

import (
	"context"

	"github.com/aws/aws-lambda-go/events"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// The W3C trace context crosses SQS in message attributes of the
// headers' names, traceparent and tracestate (two of a message's ten).
const (
	attrParent = "traceparent"
	attrState  = "tracestate"
)

var w3c propagation.TraceContext

// ToMessage is ctx's trace context as the message attributes that carry
// it (traceparent, and tracestate when set); empty with no span in ctx.
// The sender makes them SQS's String attributes: this package does not
// link SQS's types, which the functions that send nothing would carry.
func ToMessage(ctx context.Context) map[string]string {
	carrier := propagation.MapCarrier{}
	w3c.Inject(ctx, carrier)
	return carrier
}

// FromMessage is the trace context a received message carries, remote;
// invalid when it carries none or a malformed one (the message is
// processed all the same).
func FromMessage(attrs map[string]events.SQSMessageAttribute) trace.SpanContext {
	carrier := propagation.MapCarrier{}
	for _, k := range []string{attrParent, attrState} {
		if a, ok := attrs[k]; ok && a.StringValue != nil {
			carrier[k] = *a.StringValue
		}
	}
	if carrier[attrParent] == "" {
		return trace.SpanContext{}
	}
	return trace.SpanContextFromContext(w3c.Extract(context.Background(), carrier))
}

// FromParent is the remote span context a traceparent (and tracestate)
// header value names; invalid when malformed or empty.
func FromParent(parent, state string) trace.SpanContext {
	if parent == "" {
		return trace.SpanContext{}
	}
	carrier := propagation.MapCarrier{attrParent: parent}
	if state != "" {
		carrier[attrState] = state
	}
	return trace.SpanContextFromContext(w3c.Extract(context.Background(), carrier))
}

// Parent is ctx's traceparent header value, empty with no recording span:
// what the checkout hands to Stripe for the webhook to continue.
func Parent(ctx context.Context) string {
	carrier := propagation.MapCarrier{}
	w3c.Inject(ctx, carrier)
	return carrier[attrParent]
}

// Continue starts a span of name under remote, the trace context another
// hop handed over (a queued message's, the checkout's through Stripe),
// linked to the span current in ctx (the invocation's) when that is
// another trace. When remote is invalid, or already ctx's trace (a batch
// of one, whose invocation continued it), the span is ctx's child.
func Continue(ctx context.Context, name string, remote trace.SpanContext, kind trace.SpanKind) (context.Context, trace.Span) {
	cur := trace.SpanContextFromContext(ctx)
	if !remote.IsValid() || remote.TraceID() == cur.TraceID() {
		return Tracer().Start(ctx, name, trace.WithSpanKind(kind))
	}
	opts := []trace.SpanStartOption{trace.WithSpanKind(kind)}
	if cur.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: cur}))
	}
	return Tracer().Start(trace.ContextWithRemoteSpanContext(ctx, remote), name, opts...)
}
