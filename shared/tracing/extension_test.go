package tracing_test

import (
	"context"
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
