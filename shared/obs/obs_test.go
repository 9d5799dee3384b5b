package obs_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"42sisters.ai/oracle/shared/obs"
)

func TestLoggerRedactsPrivateFields(t *testing.T) {
	var logs bytes.Buffer
	const order = "cs_live_0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUV"
	obs.NewLogger(&logs, "INFO").Info("x", "email", "a@b.co", "query", "my secret idea", "Customer_Email", "c@d.co", obs.Order(order))
	s := logs.String()
	for _, leak := range []string{"a@b.co", "c@d.co", "my secret idea"} {
		if strings.Contains(s, leak) {
			t.Fatalf("log line leaks %q: %s", leak, s)
		}
	}
	if !strings.Contains(s, `"order":"`+order+`"`) {
		t.Fatalf("the order is not named by its whole id: %s", s)
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
