//go:build !notracing

package tracing

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"42sisters.ai/oracle/shared/obs"
)

// The tracer provider and what exports its spans (this file, export.go,
// otlp.go, extension.go and lambda.go) are left out of a build with the
// notracing tag (notracing.go), which keeps the API: make bench builds
// every function both ways to weigh what tracing adds to a bootstrap.

// Provider is the process's tracer provider and the spans it holds until
// the invocation ends.
type Provider struct {
	tp   *sdktrace.TracerProvider
	buf  *buffer
	log  *slog.Logger
	name string
	ext  *extension // nil: each invocation exports before answering
}

// Start sets up tracing as s says and makes it OpenTelemetry's global
// provider, so that the shared packages' spans reach it. With no URL it
// returns nil: nothing is recorded, every span is a no-op. cfg gives the
// region and the credentials SigV4 signs with.
func Start(s Settings, cfg aws.Config, log *slog.Logger) *Provider {
	if s.URL == "" {
		return nil
	}
	x := &exporter{url: s.URL, http: &http.Client{}, timeout: s.Timeout, now: time.Now}
	if s.SigV4 != "" {
		x.sign, x.region, x.creds, x.signer = s.SigV4, cfg.Region, cfg.Credentials, v4.NewSigner()
	}
	p := newProvider(s.Service, x, log)
	if s.RuntimeAPI != "" {
		ext, err := startExtension(s.RuntimeAPI, log)
		if err != nil {
			log.Warn("spans are exported before each answer", "error", err.Error())
		}
		p.ext = ext
	}
	return p
}

func newProvider(name string, x *exporter, log *slog.Logger) *Provider {
	buf := &buffer{export: x.export, log: log}
	res := resource.NewSchemaless(attribute.String("service.name", name), attribute.String("cloud.provider", "aws"))
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithSpanProcessor(OrderNamer{}),
		sdktrace.WithSpanProcessor(buf),
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.AlwaysSample())),
	)
	otel.SetTracerProvider(tp)
	return &Provider{tp: tp, buf: buf, log: log, name: name}
}

// Flush exports the spans ended so far. A failure is logged, never
// returned: a trace lost must not fail an order.
func (p *Provider) Flush(ctx context.Context) {
	if p == nil {
		return
	}
	p.buf.flush(context.WithoutCancel(ctx))
}

// maxHeld is how many ended spans are held before they are exported
// without waiting for the invocation's end: a long run (the health job's)
// stays bounded in memory.
const maxHeld = 512

// OrderNamer is the span processor that gives every span started under
// WithOrder the order's attribute.
type OrderNamer struct{}

// OnStart names the order of parent, if any, on s.
func (OrderNamer) OnStart(parent context.Context, s sdktrace.ReadWriteSpan) {
	if id := obs.OrderOf(parent); id != "" {
		s.SetAttributes(Order.String(id))
	}
}

// OnEnd does nothing.
func (OrderNamer) OnEnd(sdktrace.ReadOnlySpan) {}

// Shutdown does nothing.
func (OrderNamer) Shutdown(context.Context) error { return nil }

// ForceFlush does nothing.
func (OrderNamer) ForceFlush(context.Context) error { return nil }

// buffer is the span processor that holds the ended spans of an
// invocation and exports them when flushed, in one request.
type buffer struct {
	mu     sync.Mutex
	held   []sdktrace.ReadOnlySpan
	export func(context.Context, []sdktrace.ReadOnlySpan) error
	log    *slog.Logger
}

func (b *buffer) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

func (b *buffer) OnEnd(s sdktrace.ReadOnlySpan) {
	if !s.SpanContext().IsSampled() {
		return
	}
	b.mu.Lock()
	b.held = append(b.held, s)
	full := len(b.held) >= maxHeld
	b.mu.Unlock()
	if full {
		b.flush(context.Background())
	}
}

func (b *buffer) flush(ctx context.Context) {
	b.mu.Lock()
	spans := b.held
	b.held = nil
	b.mu.Unlock()
	if err := b.export(ctx, spans); err != nil {
		b.log.WarnContext(ctx, "trace spans not exported", "spans", len(spans), "error", err.Error())
	}
}

func (b *buffer) ForceFlush(ctx context.Context) error { b.flush(ctx); return nil }
func (b *buffer) Shutdown(ctx context.Context) error   { b.flush(ctx); return nil }
