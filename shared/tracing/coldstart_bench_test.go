package tracing_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"42sisters.ai/oracle/shared/config"
	"42sisters.ai/oracle/shared/tracing"
)

// BenchmarkTracingColdStart is what tracing adds to a cold start, in
// process, where a shared machine's load moves it least: the settings read
// and checked, the provider set up, and the first invocation with a
// consumer's spans (the invocation, a record, five calls) exported to a
// receiver on this machine over a new connection. BenchmarkColdStart (infra/local/stack) times
// whole bootstraps, tracing included.
func BenchmarkTracingColdStart(b *testing.B) {
	rx := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.Copy(io.Discard, r.Body) }))
	b.Cleanup(rx.Close)
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": rx.URL, "OTEL_SERVICE_NAME": "generator"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ev := events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m1", EventSourceARN: "arn:aws:sqs:us-east-1:1:generate"}}}
	for i := 0; i < b.N; i++ {
		// A cold start's first export opens its connection.
		http.DefaultTransport.(*http.Transport).CloseIdleConnections()
		e := config.New(lookup, nil)
		s := tracing.Read(e)
		if err := e.Err(); err != nil {
			b.Fatal(err)
		}
		p := tracing.Start(s, aws.Config{}, log)
		h := tracing.Invocations(p, func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
			ctx = tracing.WithOrder(ctx, "cs_test_bench")
			for range 5 {
				_, span := tracing.Tracer().Start(ctx, "DynamoDB.GetItem")
				span.End()
			}
			return events.SQSEventResponse{}, nil
		})
		if _, err := h(context.Background(), ev); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWarmInvocation is what tracing adds to a warm invocation as the
// webhook's: the invocation's span, the claim's and seven calls' spans
// with their attributes, ended and exported in one request to a receiver
// on this machine (the receiver's time included). For profiling the
// webhook's own work (BenchmarkWebhookEndToEnd) without moto.
func BenchmarkWarmInvocation(b *testing.B) {
	rx := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.Copy(io.Discard, r.Body) }))
	b.Cleanup(rx.Close)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	p := tracing.Start(tracing.Settings{Service: "webhook", URL: rx.URL + "/v1/traces", Timeout: tracing.DefaultTimeout}, aws.Config{}, log)
	h := tracing.Invocations(p, func(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		ctx, claim := tracing.Tracer().Start(ctx, "checkout.session.completed")
		ctx = tracing.WithOrder(ctx, "cs_test_a1b2c3d4e5f6g7h8i9j0k1l2m3n4o5p6q7r8s9t0u1v2w3x4y5z6")
		for range 7 {
			_, span := tracing.Tracer().Start(ctx, "DynamoDB.PutItem", trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
				attribute.String("rpc.system", "aws-api"), attribute.String("rpc.service", "DynamoDB"), attribute.String("rpc.method", "PutItem")))
			span.SetAttributes(attribute.String("aws.request_id", "5SLHQ2VM3ES3NTD8DTFB1V7TCVVV4KQNSO5AEMVJF66Q9ASUAAJG"))
			span.SetAttributes(attribute.Int("http.response.status_code", 200))
			span.End()
		}
		claim.End()
		return events.APIGatewayV2HTTPResponse{StatusCode: 200}, nil
	})
	req := events.APIGatewayV2HTTPRequest{RawPath: "/api/webhook"}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := h(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
}
