//go:build !notracing

package tracing

import (
	"context"
	"fmt"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"42sisters.ai/oracle/shared/oracle"
)

// runLater runs what an invocation left for after its answer (Later). A
// panic there is logged, not let loose: after the answer it would end the
// execution environment, and before it fail an invocation whose work is
// done.
func (p *Provider) runLater(later []func()) {
	for _, f := range later {
		func() {
			defer func() {
				if r := recover(); r != nil {
					p.log.Error("work left for after the answer panicked", "panic", fmt.Sprint(r))
				}
			}()
			f()
		}()
	}
}

// Invocations wraps a Lambda handler: each invocation is a span (its
// faas.invocation_id Lambda's request id), ended with every span under it
// and exported by the traces extension once the answer has gone, or
// before the answer where no extension runs, since Lambda freezes the
// process once it has answered. With p nil (tracing off) it returns h
// itself.
//
// An SQS batch of one record whose message carries a trace context
// continues that trace: the invocation span is the sending span's child.
// A larger batch's records are continued one by one in package sqsbatch.
// An HTTP request's traceparent header is not followed: it comes from
// outside, and an order's trace starts at the service's door.
func Invocations[In, Out any](p *Provider, h func(context.Context, In) (Out, error)) func(context.Context, In) (Out, error) {
	if p == nil {
		return h
	}
	return func(ctx context.Context, in In) (out Out, err error) {
		kind, trigger := trace.SpanKindServer, "other"
		switch ev := any(in).(type) {
		case events.APIGatewayV2HTTPRequest:
			trigger = "http"
		case events.SQSEvent:
			kind, trigger = trace.SpanKindConsumer, "pubsub"
			if len(ev.Records) == 1 {
				if remote := FromMessage(ev.Records[0].MessageAttributes); remote.IsValid() {
					ctx = trace.ContextWithRemoteSpanContext(ctx, remote)
				}
			}
		}
		attrs := []attribute.KeyValue{attribute.String("faas.trigger", trigger)}
		if lc, ok := lambdacontext.FromContext(ctx); ok {
			attrs = append(attrs, attribute.String("faas.invocation_id", lc.AwsRequestID))
		}
		ctx, span := Tracer().Start(ctx, p.name, trace.WithSpanKind(kind), trace.WithAttributes(attrs...))
		inv := &invocation{}
		ctx = context.WithValue(ctx, invocationKey{}, inv)
		defer func() {
			if id := inv.only(); id != "" {
				span.SetAttributes(Order.String(id))
			}
			if err != nil {
				span.SetStatus(codes.Error, oracle.NameIDs(err.Error()))
			}
			if r, ok := any(out).(events.APIGatewayV2HTTPResponse); ok {
				span.SetAttributes(attribute.Int("http.response.status_code", r.StatusCode))
				if r.StatusCode >= 500 {
					span.SetStatus(codes.Error, "")
				}
			}
			span.End()
			later := inv.takeLater()
			// After the answer when the extension runs (extension.go),
			// else now: Lambda freezes the process once it has answered.
			if !p.ext.after(func() { p.runLater(later); p.Flush(context.Background()) }) {
				p.runLater(later)
				p.Flush(ctx)
			}
		}()
		return h(ctx, in)
	}
}

// takeLater is what Later left, in its order, taken once.
func (i *invocation) takeLater() []func() {
	i.mu.Lock()
	defer i.mu.Unlock()
	later := i.later
	i.later = nil
	return later
}

// only is the one order the invocation worked on, if one.
func (i *invocation) only() string {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.many {
		return ""
	}
	return i.first
}
