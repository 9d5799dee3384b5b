package stack_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"42sisters.ai/oracle/infra/local/stack"
)

// TestFunctionsExportToTheStack: every function the stack starts is told
// (OTEL_EXPORTER_OTLP_ENDPOINT) to export to the front door, where the
// OTLP receiver takes what the SDK's exporter sends there and the trace
// page shows it; the mailbox page links the traces. The echo function
// (infra/local/testdata/echo, which declares the variable: the stack sets
// only what a function declares) answers with its environment.
func TestFunctionsExportToTheStack(t *testing.T) {
	t.Parallel()
	o := options(t)
	root, err := filepath.Abs(filepath.Join("..", "testdata", "echo"))
	if err != nil {
		t.Fatal(err)
	}
	o.Root, o.ScheduleOff = root, true
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	s, err := stack.Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })

	out, err := s.Fire(ctx, "EchoFunction.Daily")
	if err != nil {
		t.Fatal(err)
	}
	var echo struct{ Env map[string]string }
	if err := json.Unmarshal(out, &echo); err != nil {
		t.Fatal(err)
	}
	endpoint := echo.Env["OTEL_EXPORTER_OTLP_ENDPOINT"]
	if want := "http://127.0.0.1:" + strings.TrimPrefix(s.APIURL, "http://localhost:") + "/_local/otlp"; endpoint != want {
		t.Fatalf("OTEL_EXPORTER_OTLP_ENDPOINT = %q, want %q", endpoint, want)
	}

	// What a function's exporter does with that endpoint: POST
	// <endpoint>/v1/traces.
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(endpoint+"/v1/traces"))
	if err != nil {
		t.Fatal(err)
	}
	defer exp.Shutdown(ctx)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "echo"))))
	const order = "cs_test_stack_export_0123456789"
	_, span := tp.Tracer("test").Start(ctx, "echo", trace.WithAttributes(attribute.String("oracle.order", order)))
	span.End()
	if err := exp.ExportSpans(ctx, rec.Ended()); err != nil {
		t.Fatalf("export to the stack: %v", err)
	}
	resp, body := getBody(t, s.APIURL+"/_local/trace/"+order+"?format=json")
	var got struct {
		Spans []struct {
			Name, Service string
			TraceID       string `json:"trace_id"`
		}
	}
	if err := json.Unmarshal(body, &got); err != nil || resp.StatusCode != http.StatusOK || len(got.Spans) != 1 ||
		got.Spans[0].Name != "echo" || got.Spans[0].Service != "echo" || got.Spans[0].TraceID != span.SpanContext().TraceID().String() {
		t.Fatalf("the order's trace: %d %s (%v)", resp.StatusCode, body, err)
	}
	if resp, body := getBody(t, s.APIURL+"/_local/trace/"+order); resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `class="waterfall"`) {
		t.Errorf("the waterfall: %d %.300s", resp.StatusCode, body)
	}
	if resp, body := getBody(t, s.APIURL+"/_local/mail"); resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `href="/_local/trace/"`) {
		t.Errorf("the mailbox page does not link the traces: %d %.300s", resp.StatusCode, body)
	}
}

func getBody(t *testing.T, url string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}
