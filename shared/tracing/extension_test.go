package tracing_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"

	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/tracing"
)

// journal is the order of what happened, across goroutines.
type journal struct {
	mu     sync.Mutex
	events []string
}

func (j *journal) note(event string) {
	j.mu.Lock()
	j.events = append(j.events, event)
	j.mu.Unlock()
}

func (j *journal) String() string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return strings.Join(j.events, ",")
}

// TestSpansLeaveAfterTheAnswer: with Lambda's Extensions API, the
// function registers the traces extension at cold start, answers each
// invocation before its spans are exported (an export held up does not
// hold the answer), and the extension exports them before it asks for
// its next event, so Lambda starts no invocation before they have gone.
func TestSpansLeaveAfterTheAnswer(t *testing.T) {
	var j journal
	api := testkit.NewExtensionsAPI(t)
	api.Note = j.note
	release := make(chan struct{})
	rx := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		<-release
		j.note("export")
	}))
	defer rx.Close()
	defer close(release)
	p := tracing.Start(tracing.Settings{Service: "webhook", URL: rx.URL + "/v1/traces", Timeout: 10 * time.Second,
		RuntimeAPI: api.Addr()}, aws.Config{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	h := tracing.Invocations(p, func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		_, span := tracing.Tracer().Start(ctx, "DynamoDB.PutItem")
		span.End()
		j.note("answer")
		return events.APIGatewayV2HTTPResponse{StatusCode: 200}, nil
	})
	api.WaitNext(t) // the end of its init phase
	for _, id := range []string{"req-1", "req-2"} {
		api.Invoke(t, id)
		answered := make(chan struct{})
		go func() {
			defer close(answered)
			if _, err := h(context.Background(), events.APIGatewayV2HTTPRequest{}); err != nil {
				t.Error(err)
			}
		}()
		select {
		case <-answered:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the answer waited for the export (events: %s)", id, &j)
		}
		release <- struct{}{}
		api.WaitNext(t)
	}
	if got, want := j.String(), "register,next,answer,export,next,answer,export,next"; got != want {
		t.Fatalf("events %s, want %s", got, want)
	}
}

// TestWithoutTheExtensionSpansLeaveBeforeTheAnswer: where the Extensions
// API refuses the extension (or there is none), each invocation's spans
// are exported before its answer, as Lambda freezes the process once it
// has answered.
func TestWithoutTheExtensionSpansLeaveBeforeTheAnswer(t *testing.T) {
	api := testkit.NewExtensionsAPI(t)
	api.Refuse = true
	var mu sync.Mutex
	var order []string
	note := func(s string) { mu.Lock(); order = append(order, s); mu.Unlock() }
	rx := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		note("export")
	}))
	defer rx.Close()
	p := tracing.Start(tracing.Settings{Service: "webhook", URL: rx.URL + "/v1/traces", Timeout: 10 * time.Second,
		RuntimeAPI: api.Addr()}, aws.Config{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	h := tracing.Invocations(p, func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		_, span := tracing.Tracer().Start(ctx, "DynamoDB.PutItem")
		span.End()
		return events.APIGatewayV2HTTPResponse{StatusCode: 200}, nil
	})
	if _, err := h(context.Background(), events.APIGatewayV2HTTPRequest{}); err != nil {
		t.Fatal(err)
	}
	note("answer")
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(order, ",") != "export,answer" {
		t.Fatalf("%v, want the export before the answer", order)
	}
}

// TestLaterRunsAfterTheAnswer: what an invocation leaves to Later runs
// once its answer has gone where the traces extension runs (held up, it
// does not hold the answer), before the spans' export and the next event;
// without the extension, before the answer; outside an invocation, at
// once. A panic there is logged, and neither ends the process nor fails
// the invocation.
func TestLaterRunsAfterTheAnswer(t *testing.T) {
	for _, tc := range []struct {
		name      string
		extension bool // the Extensions API takes the extension
		traced    bool // the handler runs under Invocations
		want      string
	}{
		{"with the extension", true, true, "register,next,answer,later 1,later 2,export,next"},
		{"without the extension", false, true, "later 1,later 2,export,answer"},
		// Outside an invocation f runs at once, in the handler: its panic
		// is the handler's own, as any other.
		{"outside an invocation", false, false, "later 1,answer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var j journal
			api := testkit.NewExtensionsAPI(t)
			api.Refuse = !tc.extension
			api.Note = j.note
			rx := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				j.note("export")
			}))
			defer rx.Close()
			logs := &testkit.Buffer{}
			p := tracing.Start(tracing.Settings{Service: "webhook", URL: rx.URL + "/v1/traces", Timeout: 10 * time.Second,
				RuntimeAPI: api.Addr()}, aws.Config{}, slog.New(slog.NewTextHandler(logs, nil)))
			release := make(chan struct{})
			handler := func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
				_, span := tracing.Tracer().Start(ctx, "DynamoDB.PutItem")
				span.End()
				tracing.Later(ctx, func() {
					if tc.extension {
						<-release // held up after the answer
					}
					j.note("later 1")
					panic("a bug in a closing line")
				})
				tracing.Later(ctx, func() { j.note("later 2") })
				return events.APIGatewayV2HTTPResponse{StatusCode: 200}, nil
			}
			h := handler
			if tc.traced {
				h = tracing.Invocations(p, handler)
			}
			if tc.extension {
				api.WaitNext(t) // the end of its init phase
				api.Invoke(t, "req-1")
			}
			answered := make(chan error, 1)
			go func() {
				defer func() {
					if r := recover(); r != nil {
						answered <- fmt.Errorf("the panic reached the handler's caller: %v", r)
					}
				}()
				_, err := h(context.Background(), events.APIGatewayV2HTTPRequest{})
				answered <- err
			}()
			select {
			case err := <-answered:
				if (err != nil) == tc.traced {
					t.Fatalf("answered %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("the answer waited for what was left for after it (events: %s)", &j)
			}
			j.note("answer")
			close(release)
			if tc.extension {
				api.WaitNext(t)
			}
			if got := j.String(); got != tc.want {
				t.Fatalf("events %s, want %s", got, tc.want)
			}
			if !tc.traced {
				return
			}
			if !strings.Contains(logs.String(), "work left for after the answer panicked") || !strings.Contains(logs.String(), "a bug in a closing line") {
				t.Fatalf("the panic was not logged: %q", logs.String())
			}
		})
	}
}
