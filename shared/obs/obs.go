// Package obs provides the structured JSON logger and CloudWatch embedded
// metric format lines every function writes, with the privacy rules built in
// (email or query attributes are redacted) and the ids of the context on every
// line (context.go).
package obs

import (
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// redacted are attribute keys whose values must never reach a log line.
var redacted = map[string]bool{"email": true, "customer_email": true, "query": true, "idea": true}

// NewLogger returns a JSON logger at the named level (DEBUG, INFO, WARN,
// ERROR; INFO when empty or unknown).
func NewLogger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	if err := l.UnmarshalText([]byte(strings.ToUpper(level))); err != nil {
		l = slog.LevelInfo
	}
	return slog.New(WithContext(slog.NewJSONHandler(w, &slog.HandlerOptions{
		Level: l,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if redacted[strings.ToLower(a.Key)] {
				return slog.String(a.Key, "[redacted]")
			}
			return a
		},
	})))
}

// Metrics writes CloudWatch embedded metric format lines.
type Metrics struct {
	mu        sync.Mutex
	w         io.Writer
	namespace string
	now       func() time.Time
}

// NewMetrics writes metrics in namespace to w (stdout in Lambda).
func NewMetrics(w io.Writer, namespace string, now func() time.Time) *Metrics {
	if now == nil {
		now = time.Now
	}
	return &Metrics{w: w, namespace: namespace, now: now}
}

// Count emits one count metric without dimensions.
func (m *Metrics) Count(name string, n float64) {
	if m == nil {
		return
	}
	line := map[string]any{
		"_aws": map[string]any{
			"Timestamp": m.now().UnixMilli(),
			"CloudWatchMetrics": []any{map[string]any{
				"Namespace":  m.namespace,
				"Dimensions": [][]string{{}},
				"Metrics":    []any{map[string]string{"Name": name, "Unit": "Count"}},
			}},
		},
		name: n,
	}
	b, err := json.Marshal(line)
	if err != nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	_, _ = m.w.Write(append(b, '\n'))
}
