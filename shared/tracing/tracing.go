// Package tracing is the service's OpenTelemetry traces: one trace per
// order, from the checkout (or the agent's paid request) through the
// webhook, both queues, the generator and the mailer. It sets up the
// tracer provider once at cold start, wraps each Lambda invocation in a
// span whose spans an internal Lambda extension exports once the answer
// has gone (extension.go; before it where there is no Extensions API),
// carries the W3C trace context through SQS message
// attributes, and makes spans of the AWS SDK's calls and of HTTP calls
// (Stripe, the model, Microsoft Graph, the x402 facilitator). Spans leave
// as OTLP/HTTP protobuf:
// to X-Ray's OTLP endpoint signed with SigV4 in AWS, to the local stack's
// receiver on this machine. With no endpoint configured it does nothing.
package tracing

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path"
	"regexp"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"42sisters.ai/oracle/shared/config"
	"42sisters.ai/oracle/shared/obs"
	"42sisters.ai/oracle/shared/oracle"
)

// Order is the attribute naming the order a span works on: its name
// (oracle.ShortID), never its whole id, which opens the customer's result
// page to whoever reads the traces.
const Order = attribute.Key("oracle.order")

// scope is the instrumentation scope of the service's own spans.
const scope = "42sisters.ai/oracle"

// Tracer is the tracer the service's packages start spans with: the
// provider Start set up, or OpenTelemetry's no-op one before (tests that
// set no provider, tools).
func Tracer() trace.Tracer { return otel.Tracer(scope) }

// Settings is the tracing configuration.
type Settings struct {
	// Service is service.name: the function's short name.
	Service string
	// URL is where spans are posted (…/v1/traces); empty, tracing is off.
	URL string
	// SigV4 is the service name spans are signed for ("xray"); empty, they
	// are sent unsigned (the local receiver).
	SigV4 string
	// Timeout bounds one export.
	Timeout time.Duration
	// RuntimeAPI is Lambda's AWS_LAMBDA_RUNTIME_API (host:port): with it,
	// each invocation's spans are exported after its answer, by an
	// internal extension (extension.go); empty, before it.
	RuntimeAPI string
}

// DefaultTimeout bounds one export: long enough for X-Ray's endpoint in
// the function's own region, short enough that an endpoint that hangs
// holds an invocation only that much (the spans are then dropped, logged).
const DefaultTimeout = 2 * time.Second

// service is a short name: a function's or a tool's.
var service = regexp.MustCompile(`^[a-z][a-z0-9-]{0,40}$`)

// Read reads the settings from env: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (the
// whole URL) or OTEL_EXPORTER_OTLP_ENDPOINT (its base, /v1/traces added),
// OTEL_EXPORTER_OTLP_TIMEOUT (milliseconds, the standard's unit),
// OTEL_SERVICE_NAME (default: the main package's name, which is the
// function's short name) and TRACES_SIGV4 (the SigV4 service to sign
// for, "xray" in AWS), and AWS_LAMBDA_RUNTIME_API (Lambda's, where the
// traces extension registers). A malformed one is recorded on env.
func Read(env *config.Env) Settings {
	s := Settings{Service: env.Optional("OTEL_SERVICE_NAME", ""), SigV4: env.Optional("TRACES_SIGV4", ""), Timeout: DefaultTimeout,
		RuntimeAPI: env.Optional("AWS_LAMBDA_RUNTIME_API", "")}
	if s.Service == "" {
		// A test binary's main is no function's: its spans are "oracle"'s.
		if s.Service = mainName(); !service.MatchString(s.Service) {
			s.Service = "oracle"
		}
	} else if !service.MatchString(s.Service) {
		env.Invalid("OTEL_SERVICE_NAME", fmt.Errorf("must be a short lower-case name such as webhook, got %q", s.Service))
	}
	name, raw := "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", env.Optional("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	if raw == "" {
		if base := env.Optional("OTEL_EXPORTER_OTLP_ENDPOINT", ""); base != "" {
			name, raw = "OTEL_EXPORTER_OTLP_ENDPOINT", strings.TrimRight(base, "/")+"/v1/traces"
		}
	}
	if raw != "" {
		u, err := url.Parse(raw)
		switch {
		case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.User != nil:
			env.Invalid(name, fmt.Errorf("must be an absolute http(s) URL without credentials or query, got %q", raw))
		case s.SigV4 != "" && u.Scheme != "https":
			env.Invalid(name, fmt.Errorf("spans signed with SigV4 go to an https URL, got %q", raw))
		default:
			s.URL = raw
		}
	}
	if s.SigV4 != "" && !service.MatchString(s.SigV4) {
		env.Invalid("TRACES_SIGV4", fmt.Errorf("must be a SigV4 service name such as xray, got %q", s.SigV4))
	}
	if s.SigV4 != "" && raw == "" {
		env.Invalid("TRACES_SIGV4", fmt.Errorf("is set but no OTLP traces endpoint is"))
	}
	if ms := env.Optional("OTEL_EXPORTER_OTLP_TIMEOUT", ""); ms != "" {
		n, err := time.ParseDuration(ms + "ms")
		if err != nil || n <= 0 || n > time.Minute {
			env.Invalid("OTEL_EXPORTER_OTLP_TIMEOUT", fmt.Errorf("must be a whole number of milliseconds up to 60000, got %q", ms))
		} else {
			s.Timeout = n
		}
	}
	return s
}

// mainName is the last element of the main package's path:
// 42sisters.ai/oracle/functions/webhook is "webhook".
func mainName() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Path != "" {
		return path.Base(bi.Path)
	}
	return ""
}

// LambdaConfig is the region and credentials of the function's role as
// Lambda hands them to the process, for a function that loads no AWS
// configuration (the pages function): what the SDK's default chain would
// read first there.
func LambdaConfig() aws.Config {
	get := func(name string) string { v, _ := os.LookupEnv(name); return v }
	return aws.Config{
		Region:      get("AWS_REGION"),
		Credentials: credentials.NewStaticCredentialsProvider(get("AWS_ACCESS_KEY_ID"), get("AWS_SECRET_ACCESS_KEY"), get("AWS_SESSION_TOKEN")),
	}
}

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

// WithOrder names the order the work under ctx is for: the current span
// and every span started under the returned context carry oracle.order =
// the order's name (oracle.ShortID of id); so does the invocation's span
// when this is the only order it worked on; and so does every log line
// written with the returned context (obs.WithOrder).
func WithOrder(ctx context.Context, id string) context.Context {
	if id == "" {
		return ctx
	}
	name := oracle.ShortID(id)
	trace.SpanFromContext(ctx).SetAttributes(Order.String(name))
	if inv, ok := ctx.Value(invocationKey{}).(*invocation); ok {
		inv.order(name)
	}
	return obs.WithOrder(ctx, id)
}

type invocationKey struct{}

// invocation gathers the orders an invocation worked on, for its span,
// and what it left for after its answer (Later).
type invocation struct {
	mu    sync.Mutex
	first string
	many  bool
	later []func()
}

// Later has f run once the invocation's answer has gone, with its spans'
// export (by the traces extension), or just before the answer where no
// extension runs; outside a traced invocation, at once. It is for what an
// invocation writes when its work is done and no caller waits for: the
// webhook's one line and metric of an event handled. Only what is written
// last belongs here: a function that fails or times out before would not
// have written it anyway, so nothing is lost that was written before.
func Later(ctx context.Context, f func()) {
	if inv, ok := ctx.Value(invocationKey{}).(*invocation); ok {
		inv.mu.Lock()
		defer inv.mu.Unlock()
		inv.later = append(inv.later, f)
		return
	}
	f()
}

// takeLater is what Later left, in its order, taken once.
func (i *invocation) takeLater() []func() {
	i.mu.Lock()
	defer i.mu.Unlock()
	later := i.later
	i.later = nil
	return later
}

func (i *invocation) order(id string) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.first == "" {
		i.first = id
	} else if i.first != id {
		i.many = true
	}
}

// only is the one order the invocation worked on, if one.
func (i *invocation) only() string {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.many {
		return ""
	}
	return i.first
}
