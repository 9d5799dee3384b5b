package tracing

import (
	"context"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
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

// ToMessage adds ctx's trace context to a message's attributes (making
// the map when needed) and returns them; with no span in ctx it adds
// nothing.
func ToMessage(ctx context.Context, attrs map[string]sqstypes.MessageAttributeValue) map[string]sqstypes.MessageAttributeValue {
	carrier := propagation.MapCarrier{}
	w3c.Inject(ctx, carrier)
	for _, k := range []string{attrParent, attrState} {
		if v := carrier[k]; v != "" {
			if attrs == nil {
				attrs = map[string]sqstypes.MessageAttributeValue{}
			}
			attrs[k] = sqstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
		}
	}
	return attrs
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
