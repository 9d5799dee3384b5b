package obs

import (
	"context"
	"log/slog"
	"os"
	"strings"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"go.opentelemetry.io/otel/trace"

	"42sisters.ai/oracle/shared/oracle"
)

// The fields every line gets from its context: an operator follows one
// invocation, one trace, one order or one queue message across every
// function's log group by them (docs/operating.md).
const (
	KeyRequestID = "request_id"     // Lambda's request id
	KeyTraceID   = "trace_id"       // 32 hex digits: OpenTelemetry's, else X-Ray's root
	KeyOrder     = "order"          // the order's name (oracle.ShortID), never its whole id
	KeyMessageID = "sqs_message_id" // the SQS message being processed
)

// xrayContextKey is where aws-lambda-go puts the invocation's X-Ray trace
// header (Lambda-Runtime-Trace-Id); it also sets _X_AMZN_TRACE_ID.
const xrayContextKey = "x-amzn-trace-id"

type fieldsKey struct{}

// fields are the ids this package keeps on a context: one value, so a line
// looks them up with one ctx.Value.
type fields struct {
	order, message string
	// attrs are WithAttrs's, in the order given.
	attrs []slog.Attr
}

func fieldsOf(ctx context.Context) fields {
	f, _ := ctx.Value(fieldsKey{}).(fields)
	return f
}

// WithOrder returns ctx whose log lines name the order id by its name
// (oracle.ShortID): a whole id opens the customer's result page, and with
// it their query and verdict, so no log reader may see one.
func WithOrder(ctx context.Context, id string) context.Context {
	name := oracle.ShortID(id)
	f := fieldsOf(ctx)
	if f.order == name {
		return ctx
	}
	f.order = name
	return context.WithValue(ctx, fieldsKey{}, f)
}

// WithMessage returns ctx whose log lines name the SQS message being
// processed.
func WithMessage(ctx context.Context, id string) context.Context {
	f := fieldsOf(ctx)
	if f.message == id {
		return ctx
	}
	f.message = id
	return context.WithValue(ctx, fieldsKey{}, f)
}

// WithAttrs returns ctx whose log lines carry attrs besides their own: what
// one unit of work (a webhook's event) is about, on every line written for
// it. It costs a context value where a logger's With formats and copies a
// handler per call: the hot path names its event this way.
func WithAttrs(ctx context.Context, attrs ...slog.Attr) context.Context {
	if len(attrs) == 0 {
		return ctx
	}
	f := fieldsOf(ctx)
	f.attrs = append(f.attrs[:len(f.attrs):len(f.attrs)], attrs...)
	return context.WithValue(ctx, fieldsKey{}, f)
}

// OrderOf is the name of the order ctx names ("" when none).
func OrderOf(ctx context.Context) string { return fieldsOf(ctx).order }

// Order is the log attribute naming an order that is not its context's (a
// sweep over many orders): its name, never the whole id.
func Order(id string) slog.Attr { return slog.String(KeyOrder, oracle.ShortID(id)) }

// contextHandler adds the context's ids to every record before the redacting
// JSON handler writes it. The attributes are appended to the record (no map,
// no copy of the handler per line).
type contextHandler struct {
	inner slog.Handler
	// ordered is set when the logger already carries an order attribute
	// (With(obs.Order(...))), so the line does not name it twice.
	ordered bool
}

// WithContext wraps h so that every record carries request_id, trace_id and,
// when the context has them, order and sqs_message_id.
func WithContext(h slog.Handler) slog.Handler { return &contextHandler{inner: h} }

func (h *contextHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.inner.Enabled(ctx, l)
}

func (h *contextHandler) WithAttrs(as []slog.Attr) slog.Handler {
	ordered := h.ordered
	for _, a := range as {
		ordered = ordered || a.Key == KeyOrder
	}
	return &contextHandler{inner: h.inner.WithAttrs(as), ordered: ordered}
}

// WithGroup puts a group's lines' context fields inside the group, where
// the queries would not find them: no function opens one.
func (h *contextHandler) WithGroup(name string) slog.Handler {
	return &contextHandler{inner: h.inner.WithGroup(name), ordered: h.ordered}
}

func (h *contextHandler) Handle(ctx context.Context, r slog.Record) error {
	var add [4]slog.Attr
	n := 0
	if lc, ok := lambdacontext.FromContext(ctx); ok && lc.AwsRequestID != "" {
		add[n] = slog.String(KeyRequestID, lc.AwsRequestID)
		n++
	}
	if id := traceID(ctx); id != "" {
		add[n] = slog.String(KeyTraceID, id)
		n++
	}
	f := fieldsOf(ctx)
	if f.order != "" && !h.ordered && !names(r, KeyOrder) {
		add[n] = slog.String(KeyOrder, f.order)
		n++
	}
	if f.message != "" {
		add[n] = slog.String(KeyMessageID, f.message)
		n++
	}
	if n > 0 || len(f.attrs) > 0 {
		// The caller may keep r: a clone can be appended to safely.
		r = r.Clone()
		r.AddAttrs(add[:n]...)
		r.AddAttrs(f.attrs...)
	}
	return h.inner.Handle(ctx, r)
}

// names reports whether the record has an attribute key.
func names(r slog.Record, key string) bool {
	found := false
	r.Attrs(func(a slog.Attr) bool {
		found = a.Key == key
		return !found
	})
	return found
}

// traceID is the OpenTelemetry trace id of ctx's span; without one (tracing
// off), the root of Lambda's X-Ray trace header, from the context or the
// environment, in the same 32 hex digits, so a line in AWS always has one.
func traceID(ctx context.Context) string {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		return sc.TraceID().String()
	}
	header, _ := ctx.Value(xrayContextKey).(string)
	if header == "" {
		header = os.Getenv("_X_AMZN_TRACE_ID")
	}
	return xrayRoot(header)
}

// xrayRoot turns "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=…" into
// "5759e988bd862e3fe1be46a994272793", the id OpenTelemetry's X-Ray
// propagator gives the same trace. A header of another shape is kept whole.
func xrayRoot(header string) string {
	if header == "" {
		return ""
	}
	_, root, ok := strings.Cut(header, "Root=")
	if !ok {
		return header
	}
	root, _, _ = strings.Cut(root, ";")
	// 1-<8 hex epoch>-<24 hex random>
	if len(root) != 35 || root[0] != '1' || root[1] != '-' || root[10] != '-' {
		return root
	}
	return root[2:10] + root[11:]
}
