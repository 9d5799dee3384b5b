package obs_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"go.opentelemetry.io/otel/trace"

	"42sisters.ai/oracle/shared/obs"
)

const (
	testOrder   = "cs_test_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8s9T0u1V2w3X4y5Z6"
	testName    = "cs_test_a1B2c3D4e5F6g7H8" // oracle.ShortID(testOrder): lines name the order by it
	testRequest = "8476a536-e9f4-11e8-9739-2dfe598c3fcd"
	testTrace   = "5759e988bd862e3fe1be46a994272793"
	xrayHeader  = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
)

func spanContext(t testing.TB) context.Context {
	tid, err := trace.TraceIDFromHex("0af7651916cd43dd8448eb211c80319c")
	if err != nil {
		t.Fatal(err)
	}
	sid, err := trace.SpanIDFromHex("b7ad6b7169203331")
	if err != nil {
		t.Fatal(err)
	}
	return trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled}))
}

func lambdaCtx(ctx context.Context) context.Context {
	return lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{AwsRequestID: testRequest})
}

func TestContextFieldsOnEveryLine(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  string // _X_AMZN_TRACE_ID
		ctx  func(testing.TB) context.Context
		with []any // the logger's own attributes
		want map[string]string
	}{
		{name: "no context", ctx: func(testing.TB) context.Context { return context.Background() },
			want: map[string]string{}},
		{name: "lambda request only", ctx: func(testing.TB) context.Context { return lambdaCtx(context.Background()) },
			want: map[string]string{"request_id": testRequest}},
		{name: "X-Ray header on the context", ctx: func(testing.TB) context.Context {
			//lint:ignore SA1029 the key aws-lambda-go itself uses
			return lambdaCtx(context.WithValue(context.Background(), "x-amzn-trace-id", xrayHeader))
		}, want: map[string]string{"request_id": testRequest, "trace_id": testTrace}},
		{name: "X-Ray header in the environment", env: xrayHeader,
			ctx:  func(testing.TB) context.Context { return lambdaCtx(context.Background()) },
			want: map[string]string{"request_id": testRequest, "trace_id": testTrace}},
		{name: "an OpenTelemetry span wins over X-Ray", env: xrayHeader,
			ctx:  func(t testing.TB) context.Context { return lambdaCtx(spanContext(t)) },
			want: map[string]string{"request_id": testRequest, "trace_id": "0af7651916cd43dd8448eb211c80319c"}},
		{name: "order and message", ctx: func(t testing.TB) context.Context {
			return obs.WithMessage(obs.WithOrder(lambdaCtx(spanContext(t)), testOrder), "059f36b4-87a3-44ab-83d2-661975830a7d")
		}, want: map[string]string{"request_id": testRequest, "trace_id": "0af7651916cd43dd8448eb211c80319c",
			"order": testName, "sqs_message_id": "059f36b4-87a3-44ab-83d2-661975830a7d"}},
		{name: "message without an order", ctx: func(testing.TB) context.Context {
			return obs.WithMessage(context.Background(), "m-1")
		}, want: map[string]string{"sqs_message_id": "m-1"}},
		{name: "the latest order wins", ctx: func(testing.TB) context.Context {
			return obs.WithOrder(obs.WithMessage(obs.WithOrder(context.Background(), "cs_test_first"), "m-2"), testOrder)
		}, want: map[string]string{"order": testName, "sqs_message_id": "m-2"}},
		{name: "the logger's own order is not named twice", ctx: func(testing.TB) context.Context {
			return obs.WithOrder(context.Background(), testOrder)
		}, with: []any{obs.Order(testOrder)}, want: map[string]string{"order": testName}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("_X_AMZN_TRACE_ID", tc.env)
			var out bytes.Buffer
			log := obs.NewLogger(&out, "INFO").With(tc.with...)
			// Redaction is kept: the private field never reaches the line.
			log.InfoContext(tc.ctx(t), "line", "email", "someone@example.com", "n", 1)
			if bytes.Count(out.Bytes(), []byte(`"order"`)) > 1 {
				t.Fatalf("the order is named twice: %s", out.String())
			}
			var line map[string]any
			if err := json.Unmarshal(out.Bytes(), &line); err != nil {
				t.Fatal(err)
			}
			if line["email"] != "[redacted]" || line["n"] != float64(1) || line["msg"] != "line" {
				t.Fatalf("the line's own fields are not kept as the redacting handler writes them: %s", out.String())
			}
			for _, k := range []string{"request_id", "trace_id", "order", "sqs_message_id"} {
				got, present := line[k]
				want, wanted := tc.want[k]
				if present != wanted || present && got != want {
					t.Errorf("%s = %v (present %v), want %q (present %v)", k, got, present, want, wanted)
				}
			}
		})
	}
}

// The context's fields reach the lines of a logger given attributes and a
// group too, and a record the caller keeps is not changed.
func TestContextFieldsThroughWithAndGroups(t *testing.T) {
	var out bytes.Buffer
	ctx := obs.WithOrder(lambdaCtx(context.Background()), testOrder)
	obs.NewLogger(&out, "INFO").With("kind", "verdict").InfoContext(ctx, "sent")
	var line map[string]any
	if err := json.Unmarshal(out.Bytes(), &line); err != nil {
		t.Fatal(err)
	}
	if line["kind"] != "verdict" || line["order"] != testName || line["request_id"] != testRequest {
		t.Fatalf("fields lost through With: %s", out.String())
	}
	if obs.OrderOf(ctx) != testName || obs.OrderOf(context.Background()) != "" {
		t.Fatal("OrderOf does not read the context's order")
	}
}

// WithAttrs's attributes reach every line of the context, through the
// redaction, and two contexts made from one parent keep their own.
func TestContextAttrsOnEveryLine(t *testing.T) {
	// Added one at a time, the parent's attributes leave room in their
	// array, which a child must not write into.
	parent := obs.WithOrder(context.Background(), testOrder)
	parent = obs.WithAttrs(parent, slog.String("event_id", "evt_1"))
	parent = obs.WithAttrs(parent, slog.Bool("livemode", false))
	parent = obs.WithAttrs(parent, slog.Int("attempt", 1))
	a := obs.WithAttrs(parent, slog.String("email", "someone@example.com"))
	b := obs.WithAttrs(parent, slog.String("event_type", "checkout.session.completed"))
	for _, tc := range []struct {
		name string
		ctx  context.Context
		want map[string]any
	}{
		{"parent", parent, map[string]any{"event_id": "evt_1", "livemode": false, "attempt": float64(1), "order": testName}},
		{"child redacted", a, map[string]any{"event_id": "evt_1", "livemode": false, "attempt": float64(1), "order": testName, "email": "[redacted]"}},
		{"sibling", b, map[string]any{"event_id": "evt_1", "livemode": false, "attempt": float64(1), "order": testName, "event_type": "checkout.session.completed"}},
		{"none", obs.WithAttrs(context.Background()), map[string]any{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			obs.NewLogger(&out, "INFO").InfoContext(tc.ctx, "line", "n", 1)
			var line map[string]any
			if err := json.Unmarshal(out.Bytes(), &line); err != nil {
				t.Fatal(err)
			}
			delete(line, "time")
			want := map[string]any{"level": "INFO", "msg": "line", "n": float64(1)}
			for k, v := range tc.want {
				want[k] = v
			}
			if len(line) != len(want) {
				t.Fatalf("line %s, want the fields %v", out.String(), want)
			}
			for k, v := range want {
				if line[k] != v {
					t.Errorf("%s = %v, want %v (line %s)", k, line[k], v, out.String())
				}
			}
		})
	}
}

func TestXRayHeaderOfAnotherShapeIsKept(t *testing.T) {
	t.Setenv("_X_AMZN_TRACE_ID", "Root=unusual;Sampled=0")
	var out bytes.Buffer
	obs.NewLogger(&out, "INFO").InfoContext(context.Background(), "x")
	var line map[string]any
	if err := json.Unmarshal(out.Bytes(), &line); err != nil {
		t.Fatal(err)
	}
	if line["trace_id"] != "unusual" {
		t.Fatalf("trace_id = %v, want the root kept whole", line["trace_id"])
	}
}

// BenchmarkLogLine measures what the context's fields cost a line, against
// the bare redacting handler: the webhook's hot path writes such lines
// (docs/performance.md).
func BenchmarkLogLine(b *testing.B) {
	ctx := obs.WithMessage(obs.WithOrder(lambdaCtx(spanContext(b)), testOrder), "059f36b4-87a3-44ab-83d2-661975830a7d")
	for _, bc := range []struct {
		name string
		log  *slog.Logger
		ctx  context.Context
	}{
		{"json handler alone", slog.New(slog.NewJSONHandler(io.Discard, nil)), ctx},
		{"no context fields", obs.NewLogger(io.Discard, "INFO"), context.Background()},
		{"lambda+trace+order+message", obs.NewLogger(io.Discard, "INFO"), ctx},
	} {
		b.Run(bc.name, func(b *testing.B) {
			log := bc.log.With("event_id", "evt_1", "event_type", "checkout.session.completed")
			b.ReportAllocs()
			for b.Loop() {
				log.InfoContext(bc.ctx, "event processed", "outcome", "claimed", "status", "PAID")
			}
		})
	}
}
