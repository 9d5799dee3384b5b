package obs_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"42sisters.ai/oracle/shared/obs"
	"42sisters.ai/oracle/shared/oracle"
)

func TestLoggerRedactsPrivateFields(t *testing.T) {
	var logs bytes.Buffer
	obs.NewLogger(&logs, "INFO").Info("x", "email", "a@b.co", "query", "my secret idea", "Customer_Email", "c@d.co")
	s := logs.String()
	for _, leak := range []string{"a@b.co", "c@d.co", "my secret idea"} {
		if strings.Contains(s, leak) {
			t.Fatalf("log line leaks %q: %s", leak, s)
		}
	}
}

// A whole order id opens the customer's result page: however a line comes
// to hold one (the context's order, an order attribute, the logger's own
// attributes, an error, the message, a URL), it names the order by its
// name (oracle.ShortID) only.
func TestLogLinesNameOrdersNeverByTheirWholeID(t *testing.T) {
	const card = "cs_live_0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUV"
	const agent = "x402_live_0123456789abcdefghijklmnopqrstuv"
	for _, id := range []string{card, agent} {
		name := oracle.ShortID(id)
		for _, tc := range []struct {
			name string
			log  func(l *slog.Logger)
			// want is the field that must name the order; "" when the
			// line only must not hold its id.
			want string
		}{
			{"the context's order", func(l *slog.Logger) { l.InfoContext(obs.WithOrder(context.Background(), id), "x") }, "order"},
			{"an order attribute", func(l *slog.Logger) { l.Info("x", obs.Order(id)) }, "order"},
			{"the logger's order", func(l *slog.Logger) { l.With(obs.Order(id)).Info("x") }, "order"},
			{"a string attribute", func(l *slog.Logger) { l.Info("x", "session", id) }, "session"},
			{"an error string", func(l *slog.Logger) { l.Info("x", "error", fmt.Errorf("get order %s: gone", id).Error()) }, ""},
			{"an error value", func(l *slog.Logger) { l.Info("x", "error", fmt.Errorf("get order %s: gone", id)) }, ""},
			{"a grouped attribute", func(l *slog.Logger) { l.Info("x", slog.Group("g", "url", "https://x/result/"+id)) }, ""},
			{"the message", func(l *slog.Logger) { l.Info("order " + id + " done") }, ""},
		} {
			t.Run(tc.name+" "+id[:4], func(t *testing.T) {
				var logs bytes.Buffer
				tc.log(obs.NewLogger(&logs, "INFO"))
				s := logs.String()
				if strings.Contains(s, id) || !strings.Contains(s, name) {
					t.Fatalf("the line does not name the order by %s alone: %s", name, s)
				}
				var line map[string]any
				if err := json.Unmarshal(logs.Bytes(), &line); err != nil {
					t.Fatal(err)
				}
				if tc.want != "" && line[tc.want] != name {
					t.Fatalf("%s = %v, want %s", tc.want, line[tc.want], name)
				}
			})
		}
	}
}

func TestLogLevel(t *testing.T) {
	var logs bytes.Buffer
	log := obs.NewLogger(&logs, "warn")
	log.Info("hidden")
	log.Warn("shown")
	if strings.Contains(logs.String(), "hidden") || !strings.Contains(logs.String(), "shown") {
		t.Fatalf("level not applied: %s", logs.String())
	}
}

func TestMetricsAreEmbeddedMetricFormat(t *testing.T) {
	var out bytes.Buffer
	at := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	obs.NewMetrics(&out, "Oracle", func() time.Time { return at }).Count("SilentDrops", 1)
	var line struct {
		AWS struct {
			Timestamp         int64
			CloudWatchMetrics []struct {
				Namespace string
				Metrics   []struct{ Name, Unit string }
			}
		} `json:"_aws"`
		SilentDrops float64
	}
	if err := json.Unmarshal(out.Bytes(), &line); err != nil {
		t.Fatal(err)
	}
	m := line.AWS.CloudWatchMetrics
	if line.AWS.Timestamp != at.UnixMilli() || len(m) != 1 || m[0].Namespace != "Oracle" || m[0].Metrics[0].Name != "SilentDrops" || line.SilentDrops != 1 {
		t.Fatalf("not EMF: %s", out.String())
	}
}
