package obs_test

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"testing"
	"time"

	"42sisters.ai/oracle/shared/obs"
)

// emf is one embedded metric format line, as CloudWatch reads it.
type emf struct {
	AWS struct {
		Timestamp         int64
		CloudWatchMetrics []struct {
			Namespace  string
			Dimensions [][]string
			Metrics    []struct{ Name, Unit string }
		}
	} `json:"_aws"`
}

// Each kind of figure is one line in the stack's namespace, with its unit
// and value; several figures share one line; a value JSON cannot carry
// writes nothing.
func TestMetricsWriteOneLinePerEmission(t *testing.T) {
	at := time.Date(2026, 11, 27, 5, 0, 0, 0, time.UTC)
	cases := []struct {
		name  string
		emit  func(m *obs.Metrics)
		units map[string]string
		vals  map[string]float64
	}{
		{"count", func(m *obs.Metrics) { m.Count(obs.EmailsSent, 2) },
			map[string]string{"EmailsSent": "Count"}, map[string]float64{"EmailsSent": 2}},
		{"duration", func(m *obs.Metrics) { m.Duration(obs.VerdictWait, 42*time.Second+300*time.Millisecond) },
			map[string]string{"VerdictWait": "Milliseconds"}, map[string]float64{"VerdictWait": 42300}},
		{"gauge", func(m *obs.Metrics) { m.Gauge(obs.CircuitOpen, 0) },
			map[string]string{"CircuitOpen": "None"}, map[string]float64{"CircuitOpen": 0}},
		{"several", func(m *obs.Metrics) {
			m.Emit(obs.Figure{Name: obs.ModelLatency, Value: 812.5, Unit: obs.UnitMilliseconds}, obs.Figure{Name: obs.ModelFailures, Value: 1, Unit: obs.UnitCount})
		}, map[string]string{"ModelLatency": "Milliseconds", "ModelFailures": "Count"}, map[string]float64{"ModelLatency": 812.5, "ModelFailures": 1}},
		{"not a number", func(m *obs.Metrics) { m.Gauge(obs.CircuitOpen, math.NaN()) }, nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			c.emit(obs.NewMetrics(&out, "Oracle/prod", func() time.Time { return at }))
			if c.units == nil {
				if out.Len() != 0 {
					t.Fatalf("wrote %s", out.String())
				}
				return
			}
			lines := bytes.Split(bytes.TrimSuffix(out.Bytes(), []byte("\n")), []byte("\n"))
			if len(lines) != 1 {
				t.Fatalf("%d lines, want 1: %s", len(lines), out.String())
			}
			var line emf
			var values map[string]any
			if err := json.Unmarshal(lines[0], &line); err != nil {
				t.Fatalf("not JSON: %v\n%s", err, lines[0])
			}
			_ = json.Unmarshal(lines[0], &values)
			d := line.AWS.CloudWatchMetrics
			if line.AWS.Timestamp != at.UnixMilli() || len(d) != 1 || d[0].Namespace != "Oracle/prod" || len(d[0].Dimensions) != 1 || len(d[0].Dimensions[0]) != 0 {
				t.Fatalf("not EMF in Oracle/prod without dimensions: %s", lines[0])
			}
			if len(d[0].Metrics) != len(c.units) {
				t.Fatalf("metrics %v, want %v", d[0].Metrics, c.units)
			}
			for _, m := range d[0].Metrics {
				if c.units[m.Name] != m.Unit || values[m.Name] != c.vals[m.Name] {
					t.Errorf("%s: unit %s value %v, want %s %v", m.Name, m.Unit, values[m.Name], c.units[m.Name], c.vals[m.Name])
				}
			}
		})
	}
}

func TestValidNamespace(t *testing.T) {
	for ns, ok := range map[string]bool{"Oracle/prod": true, "Oracle/oracle-staging": true, "": false, `Oracle/"x"`: false, "Oracle/a b": false} {
		if err := obs.ValidNamespace(ns); (err == nil) != ok {
			t.Errorf("ValidNamespace(%q) = %v", ns, err)
		}
	}
}

// The webhook's hot path writes one count per event: it allocates nothing.
func TestCountAllocatesNothing(t *testing.T) {
	m := obs.NewMetrics(io.Discard, "Oracle/prod", time.Now)
	m.Count(obs.WebhookProcessed, 1)
	if n := testing.AllocsPerRun(100, func() { m.Count(obs.WebhookProcessed, 1) }); n != 0 {
		t.Errorf("%v allocations a count, want 0", n)
	}
}

func BenchmarkCount(b *testing.B) {
	m := obs.NewMetrics(io.Discard, "Oracle/prod", time.Now)
	b.ReportAllocs()
	for b.Loop() {
		m.Count(obs.WebhookProcessed, 1)
	}
}
