package testkit

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/obs"
)

// Alerts keeps the alerts raised, for tests that run a function without
// SNS.
type Alerts struct {
	mu     sync.Mutex
	raised []alert.Alert
}

// Raise keeps a.
func (s *Alerts) Raise(_ context.Context, a alert.Alert) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.raised = append(s.raised, a)
}

// Raised are the alerts raised so far, in order.
func (s *Alerts) Raised() []alert.Alert {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]alert.Alert(nil), s.raised...)
}

// Kinds are the kinds of the alerts raised so far, in order.
func (s *Alerts) Kinds() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, a := range s.raised {
		out = append(out, string(a.Kind))
	}
	return out
}

// Metrics keeps the counts of the metrics emitted, by name, for tests that
// check a function counts what its alarms watch.
type Metrics struct {
	mu     sync.Mutex
	counts map[string]float64
	values map[string][]float64
}

// Count adds n to the metric name.
func (m *Metrics) Count(name string, n float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.counts == nil {
		m.counts = map[string]float64{}
	}
	m.counts[name] += n
}

// Emit records figs: a count adds to Counts, and every value, whatever
// its unit, is kept in Values.
func (m *Metrics) Emit(figs ...obs.Figure) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.counts == nil {
		m.counts = map[string]float64{}
	}
	if m.values == nil {
		m.values = map[string][]float64{}
	}
	for _, f := range figs {
		if f.Unit == obs.UnitCount {
			m.counts[f.Name] += f.Value
		}
		m.values[f.Name] = append(m.values[f.Name], f.Value)
	}
}

// Values are the values emitted under name so far, in order.
func (m *Metrics) Values(name string) []float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]float64(nil), m.values[name]...)
}

// Counts are the metrics counted so far, by name.
func (m *Metrics) Counts() map[string]float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]float64{}
	for k, v := range m.counts {
		out[k] = v
	}
	return out
}

// AuditLog is the audit bucket in memory: append-only, the first record
// written under an id stands (as audit.Writer).
type AuditLog struct {
	mu      sync.Mutex
	records map[string]audit.Record
	// objects are the ids of each object's records, by the object's id
	// (its last record's), as the bucket keeps them.
	objects map[string][]string
}

// Write keeps r under id unless a record is there, and reports whether it
// did.
func (l *AuditLog) Write(ctx context.Context, r audit.Record, id string) (bool, error) {
	return l.WriteStep(ctx, []audit.Line{{Record: r, ID: id}})
}

// WriteStep keeps a step's records as one object, named by its last
// record's id, unless an object of that name is there, as the bucket does
// (audit.Writer.WriteStep), and reports whether it did.
func (l *AuditLog) WriteStep(_ context.Context, lines []audit.Line) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	head := lines[len(lines)-1].ID
	if _, ok := l.objects[head]; ok {
		return false, nil
	}
	if l.records == nil {
		l.records, l.objects = map[string]audit.Record{}, map[string][]string{}
	}
	for _, ln := range lines {
		if _, ok := l.records[ln.ID]; ok {
			return false, fmt.Errorf("audit record %s is in another object already", ln.ID)
		}
	}
	for _, ln := range lines {
		r := ln.Record
		r.RecordID = ln.ID
		l.records[ln.ID] = r
		l.objects[head] = append(l.objects[head], ln.ID)
	}
	return true, nil
}

// Record returns the record written under id.
func (l *AuditLog) Record(id string) (audit.Record, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r, ok := l.records[id]
	return r, ok
}

// Objects returns the ids of each object's records, by the object's id.
func (l *AuditLog) Objects() map[string][]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string][]string, len(l.objects))
	for k, v := range l.objects {
		out[k] = slices.Clone(v)
	}
	return out
}

// Events counts the records by "event/status", as "tmm_crosscheck/ERROR".
func (l *AuditLog) Events() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := map[string]int{}
	for _, r := range l.records {
		n[string(r.Event)+"/"+string(r.Status)]++
	}
	return n
}
