package tracing

import (
	"context"
	"net/http"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"42sisters.ai/oracle/shared/oracle"
)

// AWS adds a span around each AWS SDK call, its retries inside it, to a
// client's middleware stack: aws.Config.APIOptions takes it. It is ours
// rather than contrib's otelaws, which would add its semantic-convention
// packages and per-service attribute setters for a span name and three
// attributes.
func AWS(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("OracleTrace", awsSpan), middleware.Before)
}

func awsSpan(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
	if !trace.SpanFromContext(ctx).IsRecording() {
		// No trace to add to (tracing off, or a call outside any
		// invocation): no span, and nothing allocated for one.
		return next.HandleInitialize(ctx, in)
	}
	svc, op := awsmiddleware.GetServiceID(ctx), awsmiddleware.GetOperationName(ctx)
	ctx, span := Tracer().Start(ctx, svc+"."+op, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		attribute.String("rpc.system", "aws-api"),
		attribute.String("rpc.service", svc),
		attribute.String("rpc.method", op),
	))
	defer span.End()
	out, md, err := next.HandleInitialize(ctx, in)
	if id, ok := awsmiddleware.GetRequestIDMetadata(md); ok {
		span.SetAttributes(attribute.String("aws.request_id", id))
	}
	if resp, ok := awsmiddleware.GetRawResponse(md).(*smithyhttp.Response); ok && resp != nil {
		span.SetAttributes(attribute.Int("http.response.status_code", resp.StatusCode))
	}
	if err != nil {
		span.SetStatus(codes.Error, oracle.NameIDs(err.Error()))
	}
	return out, md, err
}

// Transport makes a span of each request through base (nil: Go's
// default transport), named for peer ("stripe", "gemini", "graph"): its
// method and path, never its query, which can hold an address, and an
// order's id in the path (Stripe's /v1/checkout/sessions/cs_…) only by its
// name. A request outside any trace passes untouched.
func Transport(peer string, base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &transport{peer: peer, base: base}
}

type transport struct {
	peer string
	base http.RoundTripper
}

func (t *transport) RoundTrip(r *http.Request) (*http.Response, error) {
	ctx := r.Context()
	if !trace.SpanFromContext(ctx).IsRecording() {
		return t.base.RoundTrip(r)
	}
	ctx, span := Tracer().Start(ctx, t.peer+" "+r.Method, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		attribute.String("http.request.method", r.Method),
		attribute.String("server.address", r.URL.Hostname()),
		attribute.String("url.path", oracle.NameIDs(r.URL.Path)),
	))
	defer span.End()
	resp, err := t.base.RoundTrip(r.WithContext(ctx))
	if err != nil {
		span.SetStatus(codes.Error, oracle.NameIDs(err.Error()))
		return resp, err
	}
	span.SetAttributes(attribute.Int("http.response.status_code", resp.StatusCode))
	if resp.StatusCode >= 400 {
		span.SetStatus(codes.Error, resp.Status)
	}
	return resp, nil
}
