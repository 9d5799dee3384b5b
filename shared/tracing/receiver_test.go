package tracing_test

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// span is a span as an OTLP receiver reads it off the wire.
type span struct {
	Service, TraceID, SpanID, Parent, Name string
	Kind, Status                           int
	Start, End                             uint64
	Attrs                                  map[string]any
	Links                                  []string // "traceid/spanid"
}

// receiver is an OTLP/HTTP traces endpoint: it decodes each request's
// protobuf with its own reader of the wire format, by the .proto's field
// numbers, not with the exporter's code.
type receiver struct {
	*httptest.Server
	mu    sync.Mutex
	spans []span
	fail  int // answer every request with this status when set
}

func newReceiver(t *testing.T) *receiver {
	rx := &receiver{}
	rx.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rx.fail != 0 {
			http.Error(w, "refused", rx.fail)
			return
		}
		if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			t.Errorf("request %s %s (%s), want POST /v1/traces as protobuf", r.Method, r.URL.Path, r.Header.Get("Content-Type"))
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		body, _ := io.ReadAll(r.Body)
		spans, err := decodeRequest(body)
		if err != nil {
			t.Errorf("decode: %v", err)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rx.mu.Lock()
		rx.spans = append(rx.spans, spans...)
		rx.mu.Unlock()
	}))
	t.Cleanup(rx.Close)
	return rx
}

func (rx *receiver) all() []span {
	rx.mu.Lock()
	defer rx.mu.Unlock()
	return append([]span(nil), rx.spans...)
}

type field struct {
	num, wire int
	v         uint64
	b         []byte
}

func fields(b []byte) ([]field, error) {
	var out []field
	for len(b) > 0 {
		tag, n := binary.Uvarint(b)
		if n <= 0 {
			return nil, errors.New("bad tag")
		}
		b = b[n:]
		f := field{num: int(tag >> 3), wire: int(tag & 7)}
		switch f.wire {
		case 0:
			v, n := binary.Uvarint(b)
			if n <= 0 {
				return nil, errors.New("bad varint")
			}
			f.v, b = v, b[n:]
		case 1:
			if len(b) < 8 {
				return nil, errors.New("short fixed64")
			}
			f.v, b = binary.LittleEndian.Uint64(b), b[8:]
		case 5:
			if len(b) < 4 {
				return nil, errors.New("short fixed32")
			}
			f.v, b = uint64(binary.LittleEndian.Uint32(b)), b[4:]
		case 2:
			l, n := binary.Uvarint(b)
			if n <= 0 || uint64(len(b)-n) < l {
				return nil, errors.New("bad length")
			}
			f.b, b = b[n:n+int(l)], b[n+int(l):]
		default:
			return nil, fmt.Errorf("wire type %d", f.wire)
		}
		out = append(out, f)
	}
	return out, nil
}

// decodeRequest reads an ExportTraceServiceRequest.
func decodeRequest(b []byte) ([]span, error) {
	top, err := fields(b)
	if err != nil {
		return nil, err
	}
	var out []span
	for _, rs := range top { // resource_spans = 1
		if rs.num != 1 {
			continue
		}
		rsf, err := fields(rs.b)
		if err != nil {
			return nil, err
		}
		service := ""
		for _, f := range rsf {
			if f.num == 1 { // resource
				res, _ := fields(f.b)
				for _, a := range res {
					if a.num == 1 {
						if k, v := keyValue(a.b); k == "service.name" {
							service, _ = v.(string)
						}
					}
				}
			}
		}
		for _, f := range rsf {
			if f.num != 2 { // scope_spans
				continue
			}
			ss, _ := fields(f.b)
			for _, sp := range ss {
				if sp.num != 2 { // spans
					continue
				}
				s, err := decodeSpan(sp.b)
				if err != nil {
					return nil, err
				}
				s.Service = service
				out = append(out, s)
			}
		}
	}
	return out, nil
}

func decodeSpan(b []byte) (span, error) {
	fs, err := fields(b)
	if err != nil {
		return span{}, err
	}
	s := span{Attrs: map[string]any{}}
	for _, f := range fs {
		switch f.num {
		case 1:
			s.TraceID = hex.EncodeToString(f.b)
		case 2:
			s.SpanID = hex.EncodeToString(f.b)
		case 4:
			s.Parent = hex.EncodeToString(f.b)
		case 5:
			s.Name = string(f.b)
		case 6:
			s.Kind = int(f.v)
		case 7:
			s.Start = f.v
		case 8:
			s.End = f.v
		case 9:
			k, v := keyValue(f.b)
			s.Attrs[k] = v
		case 13:
			lf, _ := fields(f.b)
			var tid, sid string
			for _, x := range lf {
				switch x.num {
				case 1:
					tid = hex.EncodeToString(x.b)
				case 2:
					sid = hex.EncodeToString(x.b)
				}
			}
			s.Links = append(s.Links, tid+"/"+sid)
		case 15:
			st, _ := fields(f.b)
			for _, x := range st {
				if x.num == 3 {
					s.Status = int(x.v)
				}
			}
		}
	}
	return s, nil
}

func keyValue(b []byte) (string, any) {
	fs, _ := fields(b)
	var k string
	var v any
	for _, f := range fs {
		switch f.num {
		case 1:
			k = string(f.b)
		case 2:
			av, _ := fields(f.b)
			for _, x := range av {
				switch x.num {
				case 1:
					v = string(x.b)
				case 2:
					v = x.v != 0
				case 3:
					v = int64(x.v)
				case 4:
					v = math.Float64frombits(x.v)
				}
			}
		}
	}
	return k, v
}
