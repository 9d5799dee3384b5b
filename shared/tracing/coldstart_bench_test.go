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
