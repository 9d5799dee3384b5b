package tracing_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"42sisters.ai/oracle/shared/config"
	"42sisters.ai/oracle/shared/tracing"
)

func TestReadRefusesABadSetting(t *testing.T) {
	for _, c := range []struct {
		name string
		env  map[string]string
		bad  string // the setting the error names; "" for none
		url  string
	}{
		{"off", map[string]string{}, "", ""},
		{"base endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:3000/_local/otlp/"}, "", "http://127.0.0.1:3000/_local/otlp/v1/traces"},
		{"X-Ray", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://xray.eu-west-1.amazonaws.com/v1/traces", "TRACES_SIGV4": "xray"}, "", "https://xray.eu-west-1.amazonaws.com/v1/traces"},
		{"not a URL", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "localhost:4318"}, "OTEL_EXPORTER_OTLP_ENDPOINT", ""},
		{"credentials in the URL", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://u:p@example.com/v1/traces"}, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", ""},
		{"signed over http", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://xray.eu-west-1.amazonaws.com/v1/traces", "TRACES_SIGV4": "xray"}, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", ""},
		{"signed without an endpoint", map[string]string{"TRACES_SIGV4": "xray"}, "TRACES_SIGV4", ""},
		{"timeout in seconds", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_TIMEOUT": "2s"}, "OTEL_EXPORTER_OTLP_TIMEOUT", "http://127.0.0.1:1/v1/traces"},
		{"service name", map[string]string{"OTEL_SERVICE_NAME": "Web Hook"}, "OTEL_SERVICE_NAME", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			lookup := func(k string) (string, bool) { v, ok := c.env[k]; return v, ok }
			env := config.New(lookup, nil)
			s := tracing.Read(env)
			err := env.Err()
			if c.bad == "" && err != nil || c.bad != "" && (err == nil || !strings.Contains(err.Error(), c.bad)) {
				t.Fatalf("error %v, want one naming %q", err, c.bad)
			}
			if s.URL != c.url {
				t.Errorf("URL %q, want %q", s.URL, c.url)
			}
		})
	}
}

// TestAnExportThatFailsNeverFailsTheInvocation: the receiver refuses the
// spans, or is not there at all; the handler's answer is returned as it
// was, and the loss is logged.
func TestAnExportThatFailsNeverFailsTheInvocation(t *testing.T) {
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	rx := newReceiver(t)
	rx.fail = http.StatusServiceUnavailable
	for name, url := range map[string]string{"refused": rx.URL + "/v1/traces", "unreachable": gone.URL + "/v1/traces"} {
		t.Run(name, func(t *testing.T) {
			var logs bytes.Buffer
			p := tracing.Start(tracing.Settings{Service: "mailer", URL: url, Timeout: time.Second}, aws.Config{}, slog.New(slog.NewTextHandler(&logs, nil)))
			h := tracing.Invocations(p, func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
				return events.SQSEventResponse{}, nil
			})
			out, err := h(context.Background(), events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m1", Body: "{}"}}})
			if err != nil || len(out.BatchItemFailures) != 0 {
				t.Fatalf("the invocation failed with the export: %v %v", err, out.BatchItemFailures)
			}
			if !strings.Contains(logs.String(), "trace spans not exported") {
				t.Errorf("the lost spans were not logged: %q", logs.String())
			}
		})
	}
}

// TestAFailedInvocationIsAnErrorSpan: a handler's error is the span's
// status, written as OTLP's Error (2), which is not Go's codes.Error (1).
func TestAFailedInvocationIsAnErrorSpan(t *testing.T) {
	rx := newReceiver(t)
	p := tracing.Start(tracing.Settings{Service: "generator", URL: rx.URL + "/v1/traces", Timeout: time.Second}, aws.Config{}, slog.Default())
	boom := errors.New("boom")
	h := tracing.Invocations(p, func(ctx context.Context, _ struct{}) (struct{}, error) { return struct{}{}, boom })
	if _, err := h(context.Background(), struct{}{}); err != boom {
		t.Fatalf("error %v, want the handler's", err)
	}
	spans := rx.all()
	if len(spans) != 1 || spans[0].Status != 2 || spans[0].Service != "generator" {
		t.Fatalf("spans %+v, want the invocation's with status 2", spans)
	}
}

// TestSpansForAWSAreSigned: with TRACES_SIGV4 set, each export carries a
// SigV4 signature for that service in the function's region.
func TestSpansForAWSAreSigned(t *testing.T) {
	var auth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { auth = r.Header.Get("Authorization") }))
	t.Cleanup(srv.Close)
	cfg := aws.Config{Region: "eu-west-1", Credentials: credentials.NewStaticCredentialsProvider("AKIDTRACE", "secret", "")}
	p := tracing.Start(tracing.Settings{Service: "webhook", URL: srv.URL + "/v1/traces", SigV4: "xray", Timeout: time.Second}, cfg, slog.Default())
	h := tracing.Invocations(p, func(ctx context.Context, _ struct{}) (struct{}, error) { return struct{}{}, nil })
	if _, err := h(context.Background(), struct{}{}); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=AKIDTRACE/") || !strings.Contains(auth, "/eu-west-1/xray/aws4_request") {
		t.Fatalf("Authorization %q, want SigV4 for xray in eu-west-1", auth)
	}
}
