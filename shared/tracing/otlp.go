package tracing

import (
	"encoding/binary"
	"math"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
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

// encoder appends protobuf to a buffer. Nested messages are written into
// a scratch encoder first and then appended with their length.
type encoder struct{ b []byte }

func (e *encoder) tag(field, wire int) { e.varint(uint64(field)<<3 | uint64(wire)) }

func (e *encoder) varint(v uint64) { e.b = binary.AppendUvarint(e.b, v) }

func (e *encoder) bytesField(field int, v []byte) {
	e.tag(field, wireBytes)
	e.varint(uint64(len(v)))
	e.b = append(e.b, v...)
}

func (e *encoder) stringField(field int, v string) {
	if v == "" {
		return
	}
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

// message writes field as the message fill writes.
func (e *encoder) message(field int, fill func(*encoder)) {
	var sub encoder
	fill(&sub)
	e.bytesField(field, sub.b)
}

// encodeRequest is the ExportTraceServiceRequest of spans, grouped by
// resource and then by instrumentation scope as OTLP wants them.
func encodeRequest(spans []sdktrace.ReadOnlySpan) []byte {
	type scopeKey struct{ name, version string }
	var e encoder
	for len(spans) > 0 {
		res := spans[0].Resource()
		var same, rest []sdktrace.ReadOnlySpan
		for _, s := range spans {
			if s.Resource() == res {
				same = append(same, s)
			} else {
				rest = append(rest, s)
			}
		}
		spans = rest
		e.message(fRequestResourceSpans, func(rs *encoder) {
			rs.message(fResourceSpansResource, func(r *encoder) {
				for _, kv := range res.Attributes() {
					r.message(fResourceAttributes, func(a *encoder) { keyValue(a, kv) })
				}
			})
			var order []scopeKey
			byScope := map[scopeKey][]sdktrace.ReadOnlySpan{}
			for _, s := range same {
				k := scopeKey{s.InstrumentationScope().Name, s.InstrumentationScope().Version}
				if _, ok := byScope[k]; !ok {
					order = append(order, k)
				}
				byScope[k] = append(byScope[k], s)
			}
			for _, k := range order {
				rs.message(fResourceSpansScopeSpans, func(ss *encoder) {
					ss.message(fScopeSpansScope, func(sc *encoder) {
						sc.stringField(fScopeName, k.name)
						sc.stringField(fScopeVersion, k.version)
					})
					for _, s := range byScope[k] {
						ss.message(fScopeSpansSpans, func(sp *encoder) { span(sp, s) })
					}
				})
			}
		})
	}
	return e.b
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
		e.message(fSpanAttributes, func(a *encoder) { keyValue(a, kv) })
	}
	e.varintField(fSpanDroppedAttrs, uint64(s.DroppedAttributes()))
	for _, ev := range s.Events() {
		e.message(fSpanEvents, func(m *encoder) {
			m.fixed64Field(fEventTime, unixNano(ev.Time.UnixNano()))
			m.stringField(fEventName, ev.Name)
			for _, kv := range ev.Attributes {
				m.message(fEventAttributes, func(a *encoder) { keyValue(a, kv) })
			}
		})
	}
	for _, l := range s.Links() {
		e.message(fSpanLinks, func(m *encoder) {
			ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
			m.bytesField(fLinkTraceID, ltid[:])
			m.bytesField(fLinkSpanID, lsid[:])
			m.stringField(fLinkTraceState, l.SpanContext.TraceState().String())
			for _, kv := range l.Attributes {
				m.message(fLinkAttributes, func(a *encoder) { keyValue(a, kv) })
			}
			m.fixed32Field(fLinkFlags, flags(l.SpanContext))
		})
	}
	if st := s.Status(); st.Code != codes.Unset {
		e.message(fSpanStatus, func(m *encoder) {
			m.stringField(fStatusMessage, st.Description)
			code := uint64(otlpStatusOK)
			if st.Code == codes.Error {
				code = otlpStatusError
			}
			m.varintField(fStatusCode, code)
		})
	}
	f := uint32(sc.TraceFlags())
	if p := s.Parent(); p.IsValid() {
		f |= flagHasIsRemote
		if p.IsRemote() {
			f |= flagIsRemote
		}
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
	e.message(fKVValue, func(v *encoder) { anyValue(v, kv.Value) })
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
		e.message(fAnyArray, func(a *encoder) {
			for _, s := range v.AsStringSlice() {
				a.message(fArrayValues, func(x *encoder) { x.bytesField(fAnyString, []byte(s)) })
			}
		})
	case attribute.INT64SLICE:
		e.message(fAnyArray, func(a *encoder) {
			for _, n := range v.AsInt64Slice() {
				a.message(fArrayValues, func(x *encoder) { x.tag(fAnyInt, wireVarint); x.varint(uint64(n)) })
			}
		})
	default:
		// Strings, and the kinds the service never sets (bool and float
		// slices) as their text.
		e.bytesField(fAnyString, []byte(v.String()))
	}
}
