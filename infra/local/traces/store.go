// Package traces is the local stack's trace backend: an OTLP/HTTP receiver
// the functions export their spans to, a bounded store in memory, and the
// pages that show an order's spans as a waterfall (HTML for people, JSON
// for tests).
package traces

import (
	"cmp"
	"slices"
	"sync"
)

// OrderAttribute is the span attribute that names the order a span works
// on: its whole id (the Stripe session id, or the agent order's id).
const OrderAttribute = "oracle.order"

// Limits bound what the store keeps in memory.
type Limits struct {
	// Traces is how many traces the store keeps; past it the oldest
	// (first received) trace is dropped whole. Default DefaultTraces.
	Traces int
	// SpansPerTrace is how many spans one trace keeps; spans past it are
	// refused (the exporter is told, as an OTLP partial success). Default
	// DefaultSpansPerTrace.
	SpansPerTrace int
}

// The default limits: a paid order makes a few dozen spans, so these keep
// the last thousand orders' traces (at most about a million spans).
const (
	DefaultTraces        = 1000
	DefaultSpansPerTrace = 1000
)

func (l Limits) withDefaults() Limits {
	if l.Traces <= 0 {
		l.Traces = DefaultTraces
	}
	if l.SpansPerTrace <= 0 {
		l.SpansPerTrace = DefaultSpansPerTrace
	}
	return l
}

// Span is one received span, as the JSON page gives it.
type Span struct {
	TraceID      string `json:"trace_id"`
	SpanID       string `json:"span_id"`
	ParentSpanID string `json:"parent_span_id,omitempty"`
	Name         string `json:"name"`
	// Service is the resource's service.name.
	Service string `json:"service"`
	Kind    string `json:"kind"`
	// Start and End are Unix nanoseconds.
	Start      uint64         `json:"start_unix_nano"`
	End        uint64         `json:"end_unix_nano"`
	Attributes map[string]any `json:"attributes,omitempty"`
	Status     Status         `json:"status"`
	Links      []Link         `json:"links,omitempty"`
}

// Status is a span's status: code "unset", "ok" or "error".
type Status struct {
	Code    string `json:"code"`
	Message string `json:"message,omitempty"`
}

// Link is a span's link to another span (a batch consumer's to each
// message's producer).
type Link struct {
	TraceID string `json:"trace_id"`
	SpanID  string `json:"span_id"`
}

// Trace is one trace's spans, by start time.
type Trace struct {
	ID    string `json:"trace_id"`
	Spans []Span `json:"spans"`
}

// Store keeps the spans received, bounded by its Limits; safe for
// concurrent use.
type Store struct {
	mu     sync.Mutex
	limits Limits
	seq    uint64
	traces map[string]*stored
	// arrival holds the trace ids oldest first, for dropping.
	arrival []string
	// orders are the trace ids of each oracle.order value.
	orders map[string]map[string]bool
}

type stored struct {
	seq    uint64 // when the trace's first span arrived
	last   uint64 // when its latest span arrived
	spans  []Span
	byID   map[string]int
	orders map[string]bool
}

// NewStore is an empty store bounded by limits (zero fields: defaults).
func NewStore(limits Limits) *Store {
	return &Store{limits: limits.withDefaults(), traces: map[string]*stored{}, orders: map[string]map[string]bool{}}
}

// Add stores spans and returns how many it refused because their trace
// was full. A span received again (an exporter's retry) replaces the
// first copy.
func (s *Store) Add(spans []Span) (refused int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sp := range spans {
		s.seq++
		t := s.traces[sp.TraceID]
		if t == nil {
			t = &stored{seq: s.seq, byID: map[string]int{}, orders: map[string]bool{}}
			s.traces[sp.TraceID] = t
			s.arrival = append(s.arrival, sp.TraceID)
		}
		if i, ok := t.byID[sp.SpanID]; ok {
			t.spans[i] = sp
		} else if len(t.spans) >= s.limits.SpansPerTrace {
			refused++
			continue
		} else {
			t.byID[sp.SpanID] = len(t.spans)
			t.spans = append(t.spans, sp)
		}
		t.last = s.seq
		if order, ok := sp.Attributes[OrderAttribute].(string); ok && order != "" {
			t.orders[order] = true
			if s.orders[order] == nil {
				s.orders[order] = map[string]bool{}
			}
			s.orders[order][sp.TraceID] = true
		}
	}
	for len(s.arrival) > s.limits.Traces {
		s.drop(s.arrival[0])
		s.arrival = s.arrival[1:]
	}
	return refused
}

// drop forgets the trace id.
func (s *Store) drop(id string) {
	for order := range s.traces[id].orders {
		delete(s.orders[order], id)
		if len(s.orders[order]) == 0 {
			delete(s.orders, order)
		}
	}
	delete(s.traces, id)
}

// Order returns every trace that has a span whose oracle.order is order
// (the whole id: a prefix matches nothing), oldest first, each one's spans
// by start time.
func (s *Store) Order(order string) []Trace {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]string, 0, len(s.orders[order]))
	for id := range s.orders[order] {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b string) int { return cmp.Compare(s.traces[a].seq, s.traces[b].seq) })
	out := make([]Trace, 0, len(ids))
	for _, id := range ids {
		spans := slices.Clone(s.traces[id].spans)
		slices.SortStableFunc(spans, func(a, b Span) int { return cmp.Compare(a.Start, b.Start) })
		out = append(out, Trace{ID: id, Spans: spans})
	}
	return out
}

// OrderSummary is one order the store has spans of.
type OrderSummary struct {
	Order  string
	Traces int
	Spans  int
	// Start is the Unix nanoseconds of its earliest span.
	Start uint64
	seq   uint64
}

// Orders lists the orders the store has spans of, latest activity first.
func (s *Store) Orders() []OrderSummary {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]OrderSummary, 0, len(s.orders))
	for order, ids := range s.orders {
		o := OrderSummary{Order: order, Traces: len(ids)}
		for id := range ids {
			t := s.traces[id]
			o.Spans += len(t.spans)
			o.seq = max(o.seq, t.last)
			for _, sp := range t.spans {
				if o.Start == 0 || sp.Start < o.Start {
					o.Start = sp.Start
				}
			}
		}
		out = append(out, o)
	}
	slices.SortFunc(out, func(a, b OrderSummary) int { return cmp.Compare(b.seq, a.seq) })
	return out
}
