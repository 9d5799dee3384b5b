package traces

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"mime"
	"net/http"
	"slices"
	"strings"

	collector "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	common "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// MaxBody bounds an export request's body, compressed and uncompressed
// alike: the SDK's batches are far smaller (512 spans by default).
const MaxBody = 8 << 20

// codeInvalidArgument is google.rpc.Code INVALID_ARGUMENT, the code of the
// Status a refused export carries.
const codeInvalidArgument = 3

// Receiver is the OTLP/HTTP traces endpoint (POST …/v1/traces), as the
// OTLP specification describes it: protobuf or JSON bodies, gzip or not;
// 200 with the ExportTraceServiceResponse in the request's encoding (a
// partial success counts the spans refused and says why), 400 with a
// google.rpc.Status for a body that does not decode, 413 past MaxBody,
// 415 for another content type or encoding, 405 for another method.
type Receiver struct {
	Store *Store
	// Log, when set, receives a line per refused request.
	Log *log.Logger
}

type encoding int

const (
	encProtobuf encoding = iota
	encJSON
)

func (h Receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "OTLP export requests are POSTed", http.StatusMethodNotAllowed)
		return
	}
	mediaType, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	var enc encoding
	switch mediaType {
	case "application/x-protobuf", "application/protobuf":
		enc = encProtobuf
	case "application/json":
		enc = encJSON
	default:
		h.refuse(w, encJSON, http.StatusUnsupportedMediaType, fmt.Errorf("content type %q: OTLP/HTTP takes application/x-protobuf or application/json", r.Header.Get("Content-Type")))
		return
	}
	body, status, err := readBody(w, r)
	if err != nil {
		h.refuse(w, enc, status, err)
		return
	}
	req := &collector.ExportTraceServiceRequest{}
	if enc == encJSON {
		err = decodeJSON(body, req)
	} else if err = proto.Unmarshal(body, req); err != nil {
		err = fmt.Errorf("the body is not an OTLP protobuf ExportTraceServiceRequest: %w", err)
	}
	if err != nil {
		h.refuse(w, enc, http.StatusBadRequest, err)
		return
	}
	spans, rejected, why := convert(req)
	if refused := h.Store.Add(spans); refused > 0 {
		rejected += refused
		why = append(why, fmt.Sprintf("%d span(s) past the local stack's %d spans a trace", refused, h.Store.limits.SpansPerTrace))
	}
	resp := &collector.ExportTraceServiceResponse{}
	if rejected > 0 {
		resp.PartialSuccess = &collector.ExportTracePartialSuccess{RejectedSpans: int64(rejected), ErrorMessage: strings.Join(why, "; ")}
		h.logf("export: %d span(s) refused: %s", rejected, resp.PartialSuccess.ErrorMessage)
	}
	write(w, enc, http.StatusOK, resp)
}

// readBody reads the request's body, gunzipped when it says so, bounded
// by MaxBody either way; on error it returns the status to answer.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, int, error) {
	var in io.Reader = http.MaxBytesReader(w, r.Body, MaxBody)
	switch ce := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding"))); ce {
	case "", "identity":
	case "gzip":
		z, err := gzip.NewReader(in)
		if err != nil {
			return nil, http.StatusBadRequest, fmt.Errorf("the body is not gzip, as its Content-Encoding says: %w", err)
		}
		defer z.Close()
		in = z
	default:
		return nil, http.StatusUnsupportedMediaType, fmt.Errorf("content encoding %q: the receiver takes gzip or none", ce)
	}
	body, err := io.ReadAll(io.LimitReader(in, MaxBody+1))
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return nil, http.StatusRequestEntityTooLarge, fmt.Errorf("the body is over %d bytes", MaxBody)
	}
	if err != nil {
		return nil, http.StatusBadRequest, fmt.Errorf("read the body: %w", err)
	}
	if len(body) > MaxBody {
		return nil, http.StatusRequestEntityTooLarge, fmt.Errorf("the body is over %d bytes uncompressed", MaxBody)
	}
	return body, 0, nil
}

func (h Receiver) refuse(w http.ResponseWriter, enc encoding, code int, err error) {
	h.logf("export refused (%d): %v", code, err)
	write(w, enc, code, &status.Status{Code: codeInvalidArgument, Message: err.Error()})
}

func (h Receiver) logf(format string, args ...any) {
	if h.Log != nil {
		h.Log.Printf(format, args...)
	}
}

// write answers m in the request's encoding, as OTLP/HTTP requires.
func write(w http.ResponseWriter, enc encoding, code int, m proto.Message) {
	var (
		b   []byte
		err error
	)
	if enc == encJSON {
		w.Header().Set("Content-Type", "application/json")
		b, err = protojson.Marshal(m)
	} else {
		w.Header().Set("Content-Type", "application/x-protobuf")
		b, err = proto.Marshal(m)
	}
	if err != nil {
		http.Error(w, "encode the answer: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

// decodeJSON decodes OTLP JSON, which is protobuf's JSON mapping except
// that trace and span ids are hex, not base64: the ids are rewritten as
// protojson reads bytes, then protojson decodes, ignoring unknown fields
// as the specification requires.
func decodeJSON(body []byte, req *collector.ExportTraceServiceRequest) error {
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber() // Unix nanoseconds do not fit a float64
	var doc map[string]any
	if err := d.Decode(&doc); err != nil {
		return fmt.Errorf("the body is not a JSON object: %w", err)
	}
	for _, rs := range field(doc, "resourceSpans", "resource_spans") {
		for _, ss := range field(rs, "scopeSpans", "scope_spans") {
			for _, sp := range field(ss, "spans") {
				if err := hexToBase64(sp, "traceId", "trace_id", "spanId", "span_id", "parentSpanId", "parent_span_id"); err != nil {
					return err
				}
				for _, l := range field(sp, "links") {
					if err := hexToBase64(l, "traceId", "trace_id", "spanId", "span_id"); err != nil {
						return err
					}
				}
			}
		}
	}
	rewritten, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("re-encode the body: %w", err)
	}
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(rewritten, req); err != nil {
		return fmt.Errorf("the body is not an OTLP JSON ExportTraceServiceRequest: %w", err)
	}
	return nil
}

// field is the list of objects under the first of names that v has.
func field(v any, names ...string) []map[string]any {
	obj, _ := v.(map[string]any)
	for _, n := range names {
		list, ok := obj[n].([]any)
		if !ok {
			continue
		}
		out := make([]map[string]any, 0, len(list))
		for _, x := range list {
			if m, ok := x.(map[string]any); ok {
				out = append(out, m)
			}
		}
		return out
	}
	return nil
}

func hexToBase64(obj map[string]any, keys ...string) error {
	for _, k := range keys {
		s, ok := obj[k].(string)
		if !ok || s == "" {
			continue
		}
		b, err := hex.DecodeString(s)
		if err != nil {
			return fmt.Errorf("%s %q is not hex, as OTLP JSON writes ids", k, s)
		}
		obj[k] = base64.StdEncoding.EncodeToString(b)
	}
	return nil
}

// convert turns an export request into spans; a span with an invalid id
// is refused (counted, and why) and the rest kept, as OTLP's partial
// success allows.
func convert(req *collector.ExportTraceServiceRequest) (spans []Span, rejected int, why []string) {
	for _, rs := range req.GetResourceSpans() {
		resource := attributes(rs.GetResource().GetAttributes())
		service, _ := resource["service.name"].(string)
		if service == "" {
			service = "unknown_service"
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				if err := validIDs(sp); err != nil {
					rejected++
					why = append(why, fmt.Sprintf("span %q: %v", sp.GetName(), err))
					continue
				}
				s := Span{
					TraceID:    hex.EncodeToString(sp.GetTraceId()),
					SpanID:     hex.EncodeToString(sp.GetSpanId()),
					Name:       sp.GetName(),
					Service:    service,
					Kind:       strings.ToLower(strings.TrimPrefix(sp.GetKind().String(), "SPAN_KIND_")),
					Start:      sp.GetStartTimeUnixNano(),
					End:        sp.GetEndTimeUnixNano(),
					Attributes: attributes(sp.GetAttributes()),
					Status: Status{
						Code:    strings.ToLower(strings.TrimPrefix(sp.GetStatus().GetCode().String(), "STATUS_CODE_")),
						Message: sp.GetStatus().GetMessage(),
					},
				}
				if p := sp.GetParentSpanId(); len(p) > 0 {
					s.ParentSpanID = hex.EncodeToString(p)
				}
				for _, l := range sp.GetLinks() {
					s.Links = append(s.Links, Link{TraceID: hex.EncodeToString(l.GetTraceId()), SpanID: hex.EncodeToString(l.GetSpanId())})
				}
				spans = append(spans, s)
			}
		}
	}
	return spans, rejected, why
}

func validIDs(sp *tracepb.Span) error {
	switch {
	case len(sp.GetTraceId()) != 16 || allZero(sp.GetTraceId()):
		return errors.New("its trace id is not 16 bytes, not all zero")
	case len(sp.GetSpanId()) != 8 || allZero(sp.GetSpanId()):
		return errors.New("its span id is not 8 bytes, not all zero")
	case len(sp.GetParentSpanId()) != 0 && len(sp.GetParentSpanId()) != 8:
		return errors.New("its parent span id is neither empty nor 8 bytes")
	}
	return nil
}

func allZero(b []byte) bool { return !slices.ContainsFunc(b, func(x byte) bool { return x != 0 }) }

func attributes(kvs []*common.KeyValue) map[string]any {
	if len(kvs) == 0 {
		return nil
	}
	out := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		out[kv.GetKey()] = value(kv.GetValue())
	}
	return out
}

func value(v *common.AnyValue) any {
	switch x := v.GetValue().(type) {
	case *common.AnyValue_StringValue:
		return x.StringValue
	case *common.AnyValue_BoolValue:
		return x.BoolValue
	case *common.AnyValue_IntValue:
		return x.IntValue
	case *common.AnyValue_DoubleValue:
		return x.DoubleValue
	case *common.AnyValue_BytesValue:
		return base64.StdEncoding.EncodeToString(x.BytesValue)
	case *common.AnyValue_ArrayValue:
		out := make([]any, 0, len(x.ArrayValue.GetValues()))
		for _, e := range x.ArrayValue.GetValues() {
			out = append(out, value(e))
		}
		return out
	case *common.AnyValue_KvlistValue:
		return attributes(x.KvlistValue.GetValues())
	}
	return nil
}
