//go:build notracing

package tracing

import (
	"context"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// A build with the notracing tag has tracing's API without its provider
// and exporter: every span is OpenTelemetry's no-op, nothing is exported.
// It is no deployment's: make bench builds every function with it to weigh
// what tracing adds to a bootstrap (docs/performance.md).

// Provider is no provider: there is none in this build.
type Provider struct{}

// Start sets up nothing: tracing is compiled out.
func Start(Settings, aws.Config, *slog.Logger) *Provider { return nil }

// Flush does nothing.
func (*Provider) Flush(context.Context) {}

// Invocations is h itself: no invocation span.
func Invocations[In, Out any](_ *Provider, h func(context.Context, In) (Out, error)) func(context.Context, In) (Out, error) {
	return h
}
