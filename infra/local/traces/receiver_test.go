package traces_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	collector "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"42sisters.ai/oracle/infra/local/traces"
)

const path = "/_local/otlp/v1/traces"

// server is a receiver and the pages over one store, as the local stack
// mounts them on its front door.
func server(t *testing.T, limits traces.Limits) (*httptest.Server, *traces.Store) {
	t.Helper()
	store := traces.NewStore(limits)
	mux := http.NewServeMux()
	mux.Handle(path, traces.Receiver{Store: store})
	mux.Handle(traces.PagePath, traces.Page{Store: store})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, store
}

// recorded makes, with the OTel SDK, the spans of one order's checkout in
// service: a server span carrying the order, a client child that failed,
// and a span of another trace without the order.
func recorded(t *testing.T, service, order string) []sdktrace.ReadOnlySpan {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", service))))
	tracer := tp.Tracer("test")
	ctx, root := tracer.Start(context.Background(), "POST /api/checkout", trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String(traces.OrderAttribute, order), attribute.Int("http.response.status_code", 200), attribute.Bool("cold", true)))
	_, child := tracer.Start(ctx, "Stripe POST /v1/checkout/sessions", trace.WithSpanKind(trace.SpanKindClient))
	child.SetStatus(codes.Error, "stripe said 500")
	child.End()
	root.End()
	_, other := tracer.Start(context.Background(), "unrelated")
	other.End()
	return rec.Ended()
}

// TestReceiverTakesTheSDKsExports sends real spans with the OTel SDK's
// OTLP/HTTP exporter, in each encoding and compression it offers, and
// finds them, whole, in the store under their order.
func TestReceiverTakesTheSDKsExports(t *testing.T) {
	for _, c := range []struct {
		name        string
		encoding    otlptracehttp.Encoding
		compression otlptracehttp.Compression
	}{
		{"protobuf", otlptracehttp.EncodingProtobuf, otlptracehttp.NoCompression},
		{"protobuf gzip", otlptracehttp.EncodingProtobuf, otlptracehttp.GzipCompression},
		{"json", otlptracehttp.EncodingJSON, otlptracehttp.NoCompression},
		{"json gzip", otlptracehttp.EncodingJSON, otlptracehttp.GzipCompression},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv, store := server(t, traces.Limits{})
			ctx := context.Background()
			exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(srv.URL+path),
				otlptracehttp.WithEncoding(c.encoding), otlptracehttp.WithCompression(c.compression))
			if err != nil {
				t.Fatal(err)
			}
			defer exp.Shutdown(ctx)
			order := "cs_test_" + strings.ReplaceAll(c.name, " ", "_")
			sent := recorded(t, "checkout", order)
			if err := exp.ExportSpans(ctx, sent); err != nil {
				t.Fatalf("export: %v", err)
			}
			got := store.Order(order)
			if len(got) != 1 || len(got[0].Spans) != 2 {
				t.Fatalf("the order's traces = %+v, want one trace of 2 spans", got)
			}
			root, child := sent[1], sent[0] // ended child first
			if got[0].ID != root.SpanContext().TraceID().String() {
				t.Errorf("trace id %s, want %s", got[0].ID, root.SpanContext().TraceID())
			}
			byName := map[string]traces.Span{}
			for _, s := range got[0].Spans {
				byName[s.Name] = s
			}
			r, ch := byName[root.Name()], byName[child.Name()]
			want := []struct {
				what      string
				got, want any
			}{
				{"root span id", r.SpanID, root.SpanContext().SpanID().String()},
				{"root parent", r.ParentSpanID, ""},
				{"child's parent", ch.ParentSpanID, root.SpanContext().SpanID().String()},
				{"service", r.Service, "checkout"},
				{"root kind", r.Kind, "server"},
				{"child kind", ch.Kind, "client"},
				{"root start", r.Start, uint64(root.StartTime().UnixNano())},
				{"root end", r.End, uint64(root.EndTime().UnixNano())},
				{"order attribute", r.Attributes[traces.OrderAttribute], order},
				{"int attribute", r.Attributes["http.response.status_code"], int64(200)},
				{"bool attribute", r.Attributes["cold"], true},
				{"child status", ch.Status, traces.Status{Code: "error", Message: "stripe said 500"}},
				{"root status", r.Status.Code, "unset"},
			}
			for _, w := range want {
				if fmt.Sprint(w.got) != fmt.Sprint(w.want) || fmt.Sprintf("%T", w.got) != fmt.Sprintf("%T", w.want) {
					t.Errorf("%s = %#v, want %#v", w.what, w.got, w.want)
				}
			}
		})
	}
}

// otlpJSON is an export request as the OTLP specification's example
// writes it: hex ids, nanoseconds as strings, enums as numbers, and a
// field the receiver does not know.
const otlpJSON = `{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"webhook"}}]},
"scopeSpans":[{"scope":{"name":"test"},"spans":[
{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174","parentSpanId":"eee19b7ec3c1b173","name":"webhook","kind":5,
 "startTimeUnixNano":"1764220000123456789","endTimeUnixNano":"1764220000223456789",
 "attributes":[{"key":"oracle.order","value":{"stringValue":"cs_test_json"}},{"key":"attempt","value":{"intValue":"2"}}],
 "links":[{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b173"}],
 "status":{"code":2,"message":"boom"},"futureField":{"x":1}}]}]}]}`

// TestReceiverTakesOTLPJSON reads the specification's JSON by hand, as a
// non-Go exporter writes it.
func TestReceiverTakesOTLPJSON(t *testing.T) {
	srv, store := server(t, traces.Limits{})
	resp, body := post(t, srv.URL+path, "application/json", "", []byte(otlpJSON))
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d, %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	var answer collector.ExportTraceServiceResponse
	if err := protojson.Unmarshal(body, &answer); err != nil || answer.GetPartialSuccess() != nil {
		t.Fatalf("answer %s (%v), want a full success", body, err)
	}
	got := store.Order("cs_test_json")
	if len(got) != 1 || len(got[0].Spans) != 1 {
		t.Fatalf("stored %+v, want the one span", got)
	}
	s := got[0].Spans[0]
	want := traces.Span{TraceID: "5b8efff798038103d269b633813fc60c", SpanID: "eee19b7ec3c1b174", ParentSpanID: "eee19b7ec3c1b173",
		Name: "webhook", Service: "webhook", Kind: "consumer", Start: 1764220000123456789, End: 1764220000223456789,
		Attributes: map[string]any{"oracle.order": "cs_test_json", "attempt": int64(2)},
		Status:     traces.Status{Code: "error", Message: "boom"},
		Links:      []traces.Link{{TraceID: "5b8efff798038103d269b633813fc60c", SpanID: "eee19b7ec3c1b173"}}}
	if fmt.Sprintf("%#v", s) != fmt.Sprintf("%#v", want) {
		t.Errorf("stored\n%#v\nwant\n%#v", s, want)
	}
}

// TestReceiverRefusesBadRequests: what is not an export request is
// refused with the status OTLP/HTTP names, a google.rpc.Status saying why
// in the request's encoding, and nothing stored.
func TestReceiverRefusesBadRequests(t *testing.T) {
	bomb := gzipped(bytes.Repeat([]byte{0}, traces.MaxBody+1))
	for _, c := range []struct {
		name, method, contentType, encoding string
		body                                []byte
		status                              int
		says                                string
	}{
		{"GET", http.MethodGet, "application/x-protobuf", "", nil, http.StatusMethodNotAllowed, ""},
		{"text", http.MethodPost, "text/plain", "", []byte("hello"), http.StatusUnsupportedMediaType, "content type"},
		{"brotli", http.MethodPost, "application/json", "br", []byte(otlpJSON), http.StatusUnsupportedMediaType, "content encoding"},
		{"protobuf garbage", http.MethodPost, "application/x-protobuf", "", []byte{0xff, 0xff, 0xff}, http.StatusBadRequest, "not an OTLP protobuf"},
		{"json garbage", http.MethodPost, "application/json", "", []byte("{not json"), http.StatusBadRequest, "not a JSON object"},
		{"json of the wrong shape", http.MethodPost, "application/json", "", []byte(`{"resourceSpans":"x"}`), http.StatusBadRequest, "not an OTLP JSON"},
		{"json base64 id", http.MethodPost, "application/json", "", []byte(strings.Replace(otlpJSON, "5b8efff798038103d269b633813fc60c", "W47/95gDgQPSabYzgT/GDA==", 1)), http.StatusBadRequest, "is not hex"},
		{"gzip that is not", http.MethodPost, "application/json", "gzip", []byte(otlpJSON), http.StatusBadRequest, "not gzip"},
		{"too large", http.MethodPost, "application/x-protobuf", "", make([]byte, traces.MaxBody+1), http.StatusRequestEntityTooLarge, "over 8388608 bytes"},
		{"too large once gunzipped", http.MethodPost, "application/x-protobuf", "gzip", bomb, http.StatusRequestEntityTooLarge, "uncompressed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv, store := server(t, traces.Limits{})
			req, err := http.NewRequest(c.method, srv.URL+path, bytes.NewReader(c.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", c.contentType)
			if c.encoding != "" {
				req.Header.Set("Content-Encoding", c.encoding)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, c.status, body)
			}
			if c.says != "" {
				var st status.Status
				if resp.Header.Get("Content-Type") == "application/x-protobuf" {
					err = proto.Unmarshal(body, &st)
				} else {
					err = protojson.Unmarshal(body, &st)
				}
				if err != nil || !strings.Contains(st.GetMessage(), c.says) {
					t.Errorf("answer %q (%v), want a Status saying %q", body, err, c.says)
				}
			}
			if o := store.Orders(); len(o) != 0 {
				t.Errorf("stored %+v from a refused request", o)
			}
		})
	}
}

// TestReceiverRefusesBadSpansAlone: a span with a malformed id is refused
// as OTLP's partial success, and the request's other spans kept.
func TestReceiverRefusesBadSpansAlone(t *testing.T) {
	srv, store := server(t, traces.Limits{})
	bad := strings.Replace(otlpJSON, `"spans":[`, `"spans":[{"traceId":"00000000000000000000000000000000","spanId":"eee19b7ec3c1b175","name":"zero",
"attributes":[{"key":"oracle.order","value":{"stringValue":"cs_test_json"}}]},`, 1)
	resp, body := post(t, srv.URL+path, "application/json", "", []byte(bad))
	var answer collector.ExportTraceServiceResponse
	if err := protojson.Unmarshal(body, &answer); resp.StatusCode != http.StatusOK || err != nil {
		t.Fatalf("status %d (%v): %s", resp.StatusCode, err, body)
	}
	if p := answer.GetPartialSuccess(); p.GetRejectedSpans() != 1 || !strings.Contains(p.GetErrorMessage(), `"zero"`) {
		t.Errorf("partial success %+v, want 1 span refused, named", p)
	}
	if got := store.Order("cs_test_json"); len(got) != 1 || len(got[0].Spans) != 1 || got[0].Spans[0].Name != "webhook" {
		t.Errorf("stored %+v, want the valid span alone", got)
	}
}

// TestStoreBound: past its limit of traces the store drops the oldest
// trace whole (its order then has no trace), and past its spans a trace
// the exporter is told of the spans refused; a span sent again is not
// kept twice.
func TestStoreBound(t *testing.T) {
	srv, store := server(t, traces.Limits{Traces: 2, SpansPerTrace: 2})
	ctx := context.Background()
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(srv.URL+path))
	if err != nil {
		t.Fatal(err)
	}
	defer exp.Shutdown(ctx)
	// Three orders, a trace each (and a trace without an order each).
	for _, order := range []string{"cs_test_1", "cs_test_2", "cs_test_3"} {
		sent := recorded(t, "checkout", order)
		if err := exp.ExportSpans(ctx, sent[:2]); err != nil {
			t.Fatal(err)
		}
		if err := exp.ExportSpans(ctx, sent[:2]); err != nil { // an exporter's retry
			t.Fatal(err)
		}
	}
	if got := store.Order("cs_test_1"); len(got) != 0 {
		t.Errorf("the oldest order still has %+v", got)
	}
	for _, order := range []string{"cs_test_2", "cs_test_3"} {
		if got := store.Order(order); len(got) != 1 || len(got[0].Spans) != 2 {
			t.Errorf("%s: %+v, want its trace of 2 spans, once each", order, got)
		}
	}
	if got := get(t, srv.URL+traces.PagePath+"cs_test_1?format=json"); got.StatusCode != http.StatusNotFound {
		t.Errorf("the dropped order's page: %d, want 404", got.StatusCode)
	}
	// A third span in a full trace.
	sent := recorded(t, "checkout", "cs_test_3")
	full := store.Order("cs_test_3")[0].ID
	extra := tracetest.SpanStub{Name: "third", SpanContext: trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: mustTraceID(t, full), SpanID: trace.SpanID{1, 2, 3, 4, 5, 6, 7, 8}, TraceFlags: trace.FlagsSampled}),
		StartTime: time.Now(), EndTime: time.Now(), Resource: sent[0].Resource()}
	err = exp.ExportSpans(ctx, tracetest.SpanStubs{extra}.Snapshots())
	if err == nil || !strings.Contains(err.Error(), "1 span(s) past the local stack's 2 spans a trace") {
		t.Errorf("export into a full trace: %v, want the partial success", err)
	}
	if got := store.Order("cs_test_3"); len(got[0].Spans) != 2 {
		t.Errorf("the full trace has %d spans, want 2", len(got[0].Spans))
	}
}

func mustTraceID(t *testing.T, s string) trace.TraceID {
	t.Helper()
	id, err := trace.TraceIDFromHex(s)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func gzipped(b []byte) []byte {
	var buf bytes.Buffer
	z := gzip.NewWriter(&buf)
	_, _ = z.Write(b)
	_ = z.Close()
	return buf.Bytes()
}

func post(t *testing.T, url, contentType, encoding string, body []byte) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	if encoding != "" {
		req.Header.Set("Content-Encoding", encoding)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

func get(t *testing.T, url string) *http.Response {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(b))
	return resp
}

// TestSamplesAreTaken: the samples in events/local (the README's curl)
// are taken whole, and their order's trace is served.
func TestSamplesAreTaken(t *testing.T) {
	files, err := filepath.Glob("../../../events/local/otlp-*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no samples: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			body, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			srv, store := server(t, traces.Limits{})
			resp, answer := post(t, srv.URL+path, "application/json", "", body)
			if resp.StatusCode != http.StatusOK || string(answer) != "{}" {
				t.Fatalf("status %d: %s, want a full success", resp.StatusCode, answer)
			}
			orders := store.Orders()
			if len(orders) != 1 || orders[0].Traces != 1 {
				t.Fatalf("orders %+v, want the sample's one", orders)
			}
			if resp := get(t, srv.URL+traces.PagePath+orders[0].Order); resp.StatusCode != http.StatusOK {
				t.Errorf("the sample's page: %d", resp.StatusCode)
			}
		})
	}
}
