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
	"net/url"
	"os"
	"path"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"42sisters.ai/oracle/shared/ascii"
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

// validService reports a short name, a function's or a tool's: a
// lower-case letter and up to 40 of serviceChars.
func validService(s string) bool {
	return s != "" && 'a' <= s[0] && s[0] <= 'z' && serviceChars.Run(s[1:], 0, 40)
}

var serviceChars = ascii.NewSet("a-z0-9-")

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
		if s.Service = mainName(); !validService(s.Service) {
			s.Service = "oracle"
		}
	} else if !validService(s.Service) {
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
	if s.SigV4 != "" && !validService(s.SigV4) {
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

func (i *invocation) order(id string) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.first == "" {
		i.first = id
	} else if i.first != id {
		i.many = true
	}
}
