package obs

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"sync"
	"time"

	"42sisters.ai/oracle/shared/ascii"
)

// namespaceChars are what CloudWatch takes in a namespace (1 to 255 of
// them); they also keep the namespace free of anything JSON would have to
// escape.
var namespaceChars = ascii.NewSet("A-Za-z0-9._/#:-")

// ValidNamespace says why ns cannot be a metric namespace, or nil. Each
// stack's is Oracle/<stack name> (METRICS_NAMESPACE, set by the template
// for every function): two stacks in one account never share a figure,
// nor an alarm watching one.
func ValidNamespace(ns string) error {
	if !namespaceChars.Run(ns, 1, 255) {
		return fmt.Errorf("%q is not a CloudWatch namespace (1 to 255 of A-Z a-z 0-9 . _ / # : -)", ns)
	}
	return nil
}

// Unit is a figure's unit, as CloudWatch names it.
type Unit string

// The units the service's figures use.
const (
	UnitCount        Unit = "Count"
	UnitMilliseconds Unit = "Milliseconds"
	UnitNone         Unit = "None"
)

// Figure is one value of one metric (a name of names.go).
type Figure struct {
	Name  string
	Value float64
	Unit  Unit
}

// Metrics writes CloudWatch embedded metric format lines: CloudWatch
// Logs turns each into datapoints, and a metric is billed only in the
// hours it is written. No dimensions: each name is one metric of the
// stack's namespace.
type Metrics struct {
	mu        sync.Mutex
	w         io.Writer
	namespace string
	now       func() time.Time
	buf       []byte // reused: a line costs no allocation
}

// NewMetrics writes metrics in namespace to w (stdout in Lambda).
func NewMetrics(w io.Writer, namespace string, now func() time.Time) *Metrics {
	if now == nil {
		now = time.Now
	}
	return &Metrics{w: w, namespace: namespace, now: now}
}

// Count emits one count.
func (m *Metrics) Count(name string, n float64) {
	m.Emit(Figure{Name: name, Value: n, Unit: UnitCount})
}

// Duration emits one duration, in milliseconds.
func (m *Metrics) Duration(name string, d time.Duration) {
	m.Emit(Figure{Name: name, Value: float64(d.Milliseconds()), Unit: UnitMilliseconds})
}

// Gauge emits a state's value (1 or 0, say), to chart with its maximum.
func (m *Metrics) Gauge(name string, v float64) {
	m.Emit(Figure{Name: name, Value: v, Unit: UnitNone})
}

// Emit writes figs as one line; each name at most once. A value that is
// not a finite number writes nothing (it would not be JSON).
func (m *Metrics) Emit(figs ...Figure) {
	if m == nil || len(figs) == 0 {
		return
	}
	for _, f := range figs {
		if math.IsNaN(f.Value) || math.IsInf(f.Value, 0) {
			return
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	b := append(m.buf[:0], `{"_aws":{"Timestamp":`...)
	b = strconv.AppendInt(b, m.now().UnixMilli(), 10)
	b = append(b, `,"CloudWatchMetrics":[{"Namespace":"`...)
	b = append(b, m.namespace...)
	b = append(b, `","Dimensions":[[]],"Metrics":[`...)
	for i, f := range figs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"Name":"`...)
		b = append(b, f.Name...)
		b = append(b, `","Unit":"`...)
		b = append(b, f.Unit...)
		b = append(b, `"}`...)
	}
	b = append(b, `]}]}`...)
	for _, f := range figs {
		b = append(b, `,"`...)
		b = append(b, f.Name...)
		b = append(b, `":`...)
		b = strconv.AppendFloat(b, f.Value, 'g', -1, 64)
	}
	b = append(b, "}\n"...)
	m.buf = b
	_, _ = m.w.Write(b)
}

// Waited is the figures of a customer's wait, measured as name (VerdictWait,
// EmailWait): its milliseconds and, when it passed budget, one
// CustomerWaitsOverAMinute.
func Waited(name string, wait, budget time.Duration) []Figure {
	figs := []Figure{{Name: name, Value: float64(wait.Milliseconds()), Unit: UnitMilliseconds}}
	if wait > budget {
		figs = append(figs, Figure{Name: CustomerWaitsOverAMinute, Value: 1, Unit: UnitCount})
	}
	return figs
}
