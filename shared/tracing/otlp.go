//go:build !notracing

package tracing

import (
	"encoding/binary"
	"math"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// The OTLP trace request (opentelemetry-proto, collector/trace/v1's
// ExportTraceServiceRequest) written as protobuf by hand: the exporter
// packages of OpenTelemetry for Go link the generated OTLP types with
// google.golang.org/protobuf, gRPC and grpc-gateway, megabytes a bootstrap
// (docs/performance.md). The field numbers below are the .proto's.
const (
	// ExportTraceServiceRequest
	fRequestResourceSpans = 1
	// ResourceSpans
	fResourceSpansResource   = 1
	fResourceSpansScopeSpans = 2
	// Resource
	fResourceAttributes = 1
	// ScopeSpans
	fScopeSpansScope = 1
	fScopeSpansSpans = 2
	// InstrumentationScope
	fScopeName    = 1
	fScopeVersion = 2
	// Span
	fSpanTraceID      = 1
	fSpanSpanID       = 2
	fSpanTraceState   = 3
	fSpanParentSpanID = 4
	fSpanName         = 5
	fSpanKind         = 6
	fSpanStart        = 7
	fSpanEnd          = 8
	fSpanAttributes   = 9
	fSpanDroppedAttrs = 10
	fSpanEvents       = 11
	fSpanLinks        = 13
	fSpanStatus       = 15
	fSpanFlags        = 16
	// Span.Event
	fEventTime       = 1
	fEventName       = 2
	fEventAttributes = 3
	// Span.Link
	fLinkTraceID    = 1
	fLinkSpanID     = 2
	fLinkTraceState = 3
	fLinkAttributes = 4
	fLinkFlags      = 6
	// Status
	fStatusMessage = 2
	fStatusCode    = 3
	// KeyValue
	fKVKey   = 1
	fKVValue = 2
	// AnyValue
	fAnyString = 1
	fAnyBool   = 2
	fAnyInt    = 3
	fAnyDouble = 4
	fAnyArray  = 5
	// ArrayValue
	fArrayValues = 1
)

// The wire types.
const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
	wireFixed32 = 5
)

// OTLP's status codes (Status.StatusCode), which are not OpenTelemetry
// for Go's codes.Code: OTLP's Ok is 1 and Error 2, Go's the other way round.
const (
	otlpStatusOK    = 1
	otlpStatusError = 2
)

// flagSpanHasIsRemoteMask and flagSpanIsRemoteMask are OTLP's SpanFlags
// bits 8 and 9: whether the parent's (or the link's) remoteness is known,
// and whether it is remote.
const (
	flagHasIsRemote = 0x100
	flagIsRemote    = 0x200
)

// encoder appends protobuf to one buffer. A nested message is written in
// place after a one-byte length, which is widened once its size is known
// (a message of 128 bytes or more moves up by a byte or two): no scratch
// buffer and no closure a message, so an export allocates its buffer and
// little else.
type encoder struct{ b []byte }

func (e *encoder) tag(field, wire int) { e.varint(uint64(field)<<3 | uint64(wire)) }

func (e *encoder) varint(v uint64) { e.b = binary.AppendUvarint(e.b, v) }

func (e *encoder) bytesField(field int, v []byte) {
	e.tag(field, wireBytes)
	e.varint(uint64(len(v)))
	e.b = append(e.b, v...)
}

// stringField writes v unless it is empty (proto3's default).
func (e *encoder) stringField(field int, v string) {
	if v == "" {
		return
	}
	e.str(field, v)
}

// str writes v even when empty: a oneof's member is present when set.
func (e *encoder) str(field int, v string) {
	e.tag(field, wireBytes)
	e.varint(uint64(len(v)))
	e.b = append(e.b, v...)
}

func (e *encoder) varintField(field int, v uint64) {
	if v == 0 {
		return
	}
	e.tag(field, wireVarint)
	e.varint(v)
}

func (e *encoder) fixed64Field(field int, v uint64) {
	e.tag(field, wireFixed64)
	e.b = binary.LittleEndian.AppendUint64(e.b, v)
}

func (e *encoder) fixed32Field(field int, v uint32) {
	e.tag(field, wireFixed32)
	e.b = binary.LittleEndian.AppendUint32(e.b, v)
}

// begin opens message field: its tag and a length byte to be set by end.
// It returns where the message's bytes start.
func (e *encoder) begin(field int) int {
	e.tag(field, wireBytes)
	e.b = append(e.b, 0)
	return len(e.b)
}

// end closes the message begin opened at start, writing its length.
func (e *encoder) end(start int) {
	n := len(e.b) - start
	if n < 0x80 {
		e.b[start-1] = byte(n)
		return
	}
	var l [binary.MaxVarintLen64]byte
	k := binary.PutUvarint(l[:], uint64(n))
	e.b = append(e.b, l[:k-1]...) // room for the longer length
	copy(e.b[start-1+k:], e.b[start:start+n])
	copy(e.b[start-1:], l[:k])
}

// encodeRequest appends to buf the ExportTraceServiceRequest of spans,
// grouped by resource and then by instrumentation scope as OTLP wants
// them. An invocation's spans share one resource and one scope but for a
// library's own, so the grouping is a pass over spans per group.
func encodeRequest(buf []byte, spans []sdktrace.ReadOnlySpan) []byte {
	e := encoder{b: buf}
	done := make([]bool, len(spans))
	for i, first := range spans {
		if done[i] {
			continue
		}
		res := first.Resource()
		rs := e.begin(fRequestResourceSpans)
		r := e.begin(fResourceSpansResource)
		for _, kv := range res.Attributes() {
			a := e.begin(fResourceAttributes)
			keyValue(&e, kv)
			e.end(a)
		}
		e.end(r)
		for j := i; j < len(spans); j++ {
			if done[j] || spans[j].Resource() != res {
				continue
			}
			scope := spans[j].InstrumentationScope()
			ss := e.begin(fResourceSpansScopeSpans)
			sc := e.begin(fScopeSpansScope)
			e.stringField(fScopeName, scope.Name)
			e.stringField(fScopeVersion, scope.Version)
			e.end(sc)
			for k := j; k < len(spans); k++ {
				if done[k] || spans[k].Resource() != res || !sameScope(spans[k].InstrumentationScope(), scope) {
					continue
				}
				done[k] = true
				sp := e.begin(fScopeSpansSpans)
				span(&e, spans[k])
				e.end(sp)
			}
			e.end(ss)
		}
		e.end(rs)
	}
	return e.b
}

func sameScope(a, b instrumentation.Scope) bool {
	return a.Name == b.Name && a.Version == b.Version
}

func span(e *encoder, s sdktrace.ReadOnlySpan) {
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	e.bytesField(fSpanTraceID, tid[:])
	e.bytesField(fSpanSpanID, sid[:])
	e.stringField(fSpanTraceState, sc.TraceState().String())
	if p := s.Parent(); p.IsValid() {
		psid := p.SpanID()
		e.bytesField(fSpanParentSpanID, psid[:])
	}
	e.stringField(fSpanName, s.Name())
	// OTLP's SpanKind numbers are OpenTelemetry for Go's.
	e.varintField(fSpanKind, uint64(s.SpanKind()))
	e.fixed64Field(fSpanStart, unixNano(s.StartTime().UnixNano()))
	e.fixed64Field(fSpanEnd, unixNano(s.EndTime().UnixNano()))
	for _, kv := range s.Attributes() {
		a := e.begin(fSpanAttributes)
		keyValue(e, kv)
		e.end(a)
	}
	e.varintField(fSpanDroppedAttrs, uint64(s.DroppedAttributes()))
	for _, ev := range s.Events() {
		m := e.begin(fSpanEvents)
		e.fixed64Field(fEventTime, unixNano(ev.Time.UnixNano()))
		e.stringField(fEventName, ev.Name)
		for _, kv := range ev.Attributes {
			a := e.begin(fEventAttributes)
			keyValue(e, kv)
			e.end(a)
		}
		e.end(m)
	}
	for _, l := range s.Links() {
		m := e.begin(fSpanLinks)
		ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
		e.bytesField(fLinkTraceID, ltid[:])
		e.bytesField(fLinkSpanID, lsid[:])
		e.stringField(fLinkTraceState, l.SpanContext.TraceState().String())
		for _, kv := range l.Attributes {
			a := e.begin(fLinkAttributes)
			keyValue(e, kv)
			e.end(a)
		}
		e.fixed32Field(fLinkFlags, flags(l.SpanContext))
		e.end(m)
	}
	// The status is written even when unset, as OpenTelemetry's exporter
	// writes it: an empty message.
	st := s.Status()
	m := e.begin(fSpanStatus)
	if st.Code != codes.Unset {
		e.stringField(fStatusMessage, st.Description)
		code := uint64(otlpStatusOK)
		if st.Code == codes.Error {
			code = otlpStatusError
		}
		e.varintField(fStatusCode, code)
	}
	e.end(m)
	// Whether the parent is remote is known, also for a root span (it has
	// no remote parent), as OpenTelemetry's exporter says.
	f := uint32(sc.TraceFlags()) | flagHasIsRemote
	if p := s.Parent(); p.IsValid() && p.IsRemote() {
		f |= flagIsRemote
	}
	e.fixed32Field(fSpanFlags, f)
}

func flags(sc trace.SpanContext) uint32 {
	f := uint32(sc.TraceFlags()) | flagHasIsRemote
	if sc.IsRemote() {
		f |= flagIsRemote
	}
	return f
}

func unixNano(n int64) uint64 {
	if n < 0 {
		return 0
	}
	return uint64(n)
}

func keyValue(e *encoder, kv attribute.KeyValue) {
	e.stringField(fKVKey, string(kv.Key))
	v := e.begin(fKVValue)
	anyValue(e, kv.Value)
	e.end(v)
}

func anyValue(e *encoder, v attribute.Value) {
	switch v.Type() {
	case attribute.BOOL:
		e.tag(fAnyBool, wireVarint)
		if v.AsBool() {
			e.varint(1)
		} else {
			e.varint(0)
		}
	case attribute.INT64:
		e.tag(fAnyInt, wireVarint)
		e.varint(uint64(v.AsInt64()))
	case attribute.FLOAT64:
		e.fixed64Field(fAnyDouble, math.Float64bits(v.AsFloat64()))
	case attribute.STRINGSLICE:
		a := e.begin(fAnyArray)
		for _, s := range v.AsStringSlice() {
			x := e.begin(fArrayValues)
			e.str(fAnyString, s)
			e.end(x)
		}
		e.end(a)
	case attribute.INT64SLICE:
		a := e.begin(fAnyArray)
		for _, n := range v.AsInt64Slice() {
			x := e.begin(fArrayValues)
			e.tag(fAnyInt, wireVarint)
			e.varint(uint64(n))
			e.end(x)
		}
		e.end(a)
	case attribute.STRING:
		e.str(fAnyString, v.AsString())
	default:
		// The kinds the service never sets (bool and float slices) as
		// their text.
		e.str(fAnyString, v.String())
	}
}
