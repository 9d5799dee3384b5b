package stack

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"42sisters.ai/oracle/infra/motoserver"
	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/infra/sam"
)

// BenchmarkColdStart measures the cold-start budget of docs/performance.md for
// every function with an event it answers from its own code alone: each
// iteration starts a fresh bootstrap process (which reads its
// configuration and secrets, as at a Lambda cold start) and serves one
// event that needs no further I/O but its spans' export. BenchmarkBootstrapSize measures every
// function's size.
func BenchmarkColdStart(b *testing.B) {
	ctx := context.Background()
	o := Options{
		Root:         filepath.Dir(provision.TemplatePath()),
		BuildDir:     b.TempDir(),
		MotoEndpoint: motoserver.ForTest(b),
		Prefix:       "bench-",
		Instances:    1,
		Log:          io.Discard,
	}
	if err := o.defaults(); err != nil {
		b.Fatal(err)
	}
	back, err := prepare(ctx, &o)
	if err != nil {
		b.Fatal(err)
	}
	defer back.close()
	// Spans are recorded and exported as in AWS, to a receiver that takes
	// them at once: the cold start includes the tracer's setup and the
	// invocation's export.
	otlp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.Copy(io.Discard, r.Body) }))
	defer otlp.Close()
	traced := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": otlp.URL}
	fns := back.template.Functions()
	bins, err := build(ctx, &o, fns)
	if err != nil {
		b.Fatal(err)
	}
	// An event each function answers from its own code alone.
	events := map[string]string{
		"CheckoutFunction":   "events/checkout/preflight.json",
		"WebhookFunction":    "events/webhook/unsigned.json",
		"GeneratorFunction":  "", // an empty batch
		"MailerFunction":     "",
		"VerdictFunction":    "", // no session_id: answered 400 at once
		"PagesFunction":      "",
		"DeadLetterFunction": "", // an empty batch
		"FeedbackFunction":   "", // an empty batch
		"InboxFunction":      "", // a schedule with no mailbox to poll
		"OpsFunction":        "", // an unknown action
		"ChatFunction":       "", // the chat page
		"AgentFunction":      "events/agent/preflight.json",
	}
	// The scheduled functions no customer waits on, whose every event does
	// their whole work: only their size is measured.
	whole := map[string]bool{"HealthFunction": true, "SmokeFunction": true}
	for _, fn := range fns {
		if whole[fn.LogicalID] {
			continue
		}
		b.Run(fn.LogicalID, func(b *testing.B) {
			file, ok := events[fn.LogicalID]
			if !ok {
				b.Fatalf("no cold-start event for %s", fn.LogicalID)
			}
			payload := []byte(`{"Records":[]}`)
			switch fn.LogicalID {
			case "VerdictFunction":
				payload = []byte(`{"rawPath":"/api/verdict","requestContext":{"http":{"method":"GET"}}}`)
			case "PagesFunction":
				payload = []byte(`{"rawPath":"/","requestContext":{"http":{"method":"GET"}}}`)
			case "ChatFunction":
				payload = []byte(`{"rawPath":"/chat","requestContext":{"http":{"method":"GET"}}}`)
			case "InboxFunction":
				payload = []byte(`{"source":"aws.events","detail-type":"Scheduled Event"}`)
			case "OpsFunction":
				payload = []byte(`{"action":"none"}`)
			}
			if file != "" {
				if payload, err = os.ReadFile(filepath.Join(o.Root, file)); err != nil {
					b.Fatal(err)
				}
			}
			vars, err := environment(&o, back, fn, traced)
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				f, err := function(&o, back, fn, bins[fn.LogicalID], vars, concurrency{})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := f.Invoke(ctx, payload); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				f.Close()
				b.StartTimer()
			}
		})
	}
}

// BenchmarkBootstrapSize reports the size of every function's Lambda build
// (linux/arm64, stripped, as `make build` makes it), whose budget is 15
// MB: one metric per function (<LogicalId>-MB) and the largest (max-MB).
// The builds run once, so the benchmark runs once.
func BenchmarkBootstrapSize(b *testing.B) {
	root := filepath.Dir(provision.TemplatePath())
	t, err := sam.Load(provision.TemplatePath())
	if err != nil {
		b.Fatal(err)
	}
	largest := 0.0
	for _, fn := range t.Functions() {
		size := lambdaSizeMB(b, root, fn.CodeURI)
		b.ReportMetric(size, fn.LogicalID+"-MB")
		largest = max(largest, size)
	}
	b.ReportMetric(largest, "max-MB")
}

// lambdaSizeMB builds a function as `make build` does and returns its size.
func lambdaSizeMB(b *testing.B, root, codeURI string) float64 {
	b.Helper()
	out := filepath.Join(b.TempDir(), "bootstrap")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-tags", "lambda.norpc,grpcnotrace", "-o", out, "./"+codeURI)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=arm64")
	if msg, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("build %s: %v\n%s", codeURI, err, msg)
	}
	st, err := os.Stat(out)
	if err != nil {
		b.Fatal(err)
	}
	return float64(st.Size()) / (1 << 20)
}
