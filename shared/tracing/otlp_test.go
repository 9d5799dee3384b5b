package tracing

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	collector "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/google/go-cmp/cmp"
)

// TestOurOTLPIsTheOfficialExporters encodes spans of every shape the
// service makes, and some it does not (events, links, slices, attributes
// long enough for a two- and a three-byte length, two resources and two
// scopes), and finds the request the same message, field for field, as
// the one OpenTelemetry's own OTLP/HTTP exporter sends for them.
func TestOurOTLPIsTheOfficialExporters(t *testing.T) {
	spans := shapes(t)
	var official []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		official, _ = io.ReadAll(r.Body)
	}))
	defer srv.Close()
	ctx := context.Background()
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(srv.URL+"/v1/traces"))
	if err != nil {
		t.Fatal(err)
	}
	defer exp.Shutdown(ctx)
	if err := exp.ExportSpans(ctx, spans); err != nil {
		t.Fatal(err)
	}
	var want, got collector.ExportTraceServiceRequest
	if err := proto.Unmarshal(official, &want); err != nil {
		t.Fatal(err)
	}
	ours := encodeRequest(nil, spans)
	if err := proto.Unmarshal(ours, &got); err != nil {
		t.Fatalf("our request does not decode: %v", err)
	}
	// The one difference: a link's trace state, which OTLP's Link has and
	// the official exporter leaves out; ours carries it. The order of the
	// resources and of their scopes means nothing (the official exporter
	// groups them through a map): each is compared with its own.
	byResource := protocmp.SortRepeated(func(a, b *tracepb.ResourceSpans) bool {
		return resourceKey(a) < resourceKey(b)
	})
	byScope := protocmp.SortRepeated(func(a, b *tracepb.ScopeSpans) bool {
		return a.GetScope().GetName()+" "+a.GetScope().GetVersion() < b.GetScope().GetName()+" "+b.GetScope().GetVersion()
	})
	if diff := cmp.Diff(&want, &got, protocmp.Transform(), byResource, byScope, protocmp.IgnoreFields(&tracepb.Span_Link{}, "trace_state")); diff != "" {
		t.Fatalf("ours differs from the official exporter's (-official +ours):\n%s", diff)
	}
	states := 0
	for _, rs := range got.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				for _, l := range sp.GetLinks() {
					if l.GetTraceState() == "vendor=x1" {
						states++
					}
				}
			}
		}
	}
	if states != 1 {
		t.Fatalf("%d links carry the remote parent's trace state, want 1", states)
	}
	// The buffer handed in is appended to, not replaced.
	prefix := []byte("kept")
	if again := encodeRequest(prefix, spans); string(again[:4]) != "kept" || string(again[4:]) != string(ours) {
		t.Fatal("encodeRequest does not append to the buffer it is given")
	}
}

// resourceKey names a resource by its attributes, in their order.
func resourceKey(rs *tracepb.ResourceSpans) string {
	var k strings.Builder
	for _, kv := range rs.GetResource().GetAttributes() {
		fmt.Fprintf(&k, "%s=%s;", kv.GetKey(), kv.GetValue().GetStringValue())
	}
	return k.String()
}

func shapes(t *testing.T) []sdktrace.ReadOnlySpan {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	var all []sdktrace.ReadOnlySpan
	for _, svc := range []string{"webhook", "generator"} {
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec),
			sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", svc), attribute.String("cloud.provider", "aws"))))
		parent := context.Background()
		if svc == "generator" {
			// Continued from a message: a remote parent, with a trace state.
			ts, _ := trace.ParseTraceState("vendor=x1")
			parent = trace.ContextWithRemoteSpanContext(parent, trace.NewSpanContext(trace.SpanContextConfig{
				TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4, 5, 6}, TraceFlags: trace.FlagsSampled, TraceState: ts, Remote: true}))
		}
		ctx, root := tp.Tracer(scope).Start(parent, svc, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(Order.String("cs_test_a1"), attribute.String("faas.invocation_id", "c6af9ac6-7b61-11e6-9a41-93e8deadbeef")))
		_, aws := tp.Tracer(scope).Start(ctx, "DynamoDB.PutItem", trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
			attribute.String("rpc.system", "aws-api"), attribute.Int("http.response.status_code", 200),
			attribute.String("long", strings.Repeat("a", 300)), attribute.String("longer", strings.Repeat("b", 20000)),
			attribute.Bool("retried", false), attribute.Float64("share", 0.042), attribute.String("empty", ""),
			attribute.StringSlice("tiers", []string{"quick", "", "strategy"}), attribute.Int64Slice("codes", []int64{-1, 0, 429})))
		aws.AddEvent("retry", trace.WithAttributes(attribute.Int("attempt", 2)))
		aws.SetStatus(codes.Error, "throttled")
		aws.End()
		_, lib := tp.Tracer("another/library", trace.WithInstrumentationVersion("1.2.3")).Start(ctx, "stripe POST",
			trace.WithLinks(trace.Link{SpanContext: root.SpanContext(), Attributes: []attribute.KeyValue{attribute.String("why", "continued")}}))
		lib.SetStatus(codes.Ok, "")
		lib.End()
		root.End()
	}
	all = append(all, rec.Ended()...)
	return all
}
