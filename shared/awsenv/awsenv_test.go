package awsenv

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

// TestAnAnswerCutOffMidBodyIsRetried: a DynamoDB answer whose connection
// drops inside its body is asked again (moto did this under load, and a
// mailer's record failed for good); a complete answer that does not parse
// is not, and neither is anything once the caller has given up.
func TestAnAnswerCutOffMidBodyIsRetried(t *testing.T) {
	const item = `{"Item":{"pk":{"S":"k"}}}`
	for _, c := range []struct {
		name      string
		first     func(w http.ResponseWriter)
		wantCalls int32
		wantErr   bool
	}{
		{"cut off mid-body", cutOff(item), 2, false},
		{"reset mid-body", func(w http.ResponseWriter) {
			w.Header().Set("Content-Length", "400")
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write([]byte(item[:10]))
			w.(http.Flusher).Flush()
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.(interface{ SetLinger(int) error }).SetLinger(0) // RST, not FIN
			conn.Close()
		}, 2, false},
		{"complete but malformed", func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write([]byte(`{"Item": not json`))
		}, 1, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var calls atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if calls.Add(1) == 1 {
					c.first(w)
					return
				}
				_, _ = w.Write([]byte(item))
			}))
			defer srv.Close()
			out, err := NewTables(ForEndpoint(srv.URL, "ca-central-1")).GetItem(context.Background(), &dynamodb.GetItemInput{
				TableName: aws.String("t"),
				Key:       map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "k"}},
			})
			if got := calls.Load(); got != c.wantCalls {
				t.Errorf("%d requests, want %d (err %v)", got, c.wantCalls, err)
			}
			if c.wantErr {
				if err == nil {
					t.Fatal("a malformed answer was accepted")
				}
				return
			}
			if err != nil {
				t.Fatalf("GetItem: %v", err)
			}
			if pk, ok := out.Item["pk"].(*types.AttributeValueMemberS); !ok || pk.Value != "k" {
				t.Fatalf("item %v", out.Item)
			}
		})
	}
}

// cutOff promises the whole body, sends half and closes the connection.
func cutOff(body string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		w.Header().Set("Content-Length", "400")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(body[:len(body)/2]))
		w.(http.Flusher).Flush()
		conn, _, _ := w.(http.Hijacker).Hijack()
		conn.Close()
	}
}

// TestACancelledCallIsNotRetried: a body cut off because the caller gave up
// is the caller's decision, not a dropped connection.
func TestACancelledCallIsNotRetried(t *testing.T) {
	for _, c := range []struct {
		err  error
		want aws.Ternary
	}{
		{&smithy.DeserializationError{Err: io.ErrUnexpectedEOF}, aws.TrueTernary},
		{&smithy.DeserializationError{Err: fmt.Errorf("read body: %w", context.Canceled)}, aws.UnknownTernary},
		{&smithy.DeserializationError{Err: fmt.Errorf("read body: %w", context.DeadlineExceeded)}, aws.UnknownTernary},
		{io.ErrUnexpectedEOF, aws.UnknownTernary}, // not while reading an answer
	} {
		if got := droppedMidAnswer(c.err); got != c.want {
			t.Errorf("droppedMidAnswer(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// TestLoadLambdaReadsWhatLambdaSets: a function's configuration is the
// environment Lambda gives it: the region and the execution role's keys
// with their session token sign each request, a service's own endpoint
// (AWS_ENDPOINT_URL_SESV2, which the local stack sets) wins over
// AWS_ENDPOINT_URL, and a profile named in the environment is not read.
// Without the region or the keys it fails at cold start.
func TestLoadLambdaReadsWhatLambdaSets(t *testing.T) {
	type seen struct{ auth, token string }
	serve := func(got *atomic.Pointer[seen]) *httptest.Server {
		return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			got.Store(&seen{r.Header.Get("Authorization"), r.Header.Get("X-Amz-Security-Token")})
			w.Header().Set("Content-Type", "application/x-amz-json-1.0")
			_, _ = io.WriteString(w, `{}`)
		}))
	}
	var general, own atomic.Pointer[seen]
	generalSrv, ownSrv := serve(&general), serve(&own)
	defer generalSrv.Close()
	defer ownSrv.Close()
	t.Setenv("AWS_REGION", "eu-west-3")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDLAMBDA")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("AWS_SESSION_TOKEN", "session-token")
	t.Setenv("AWS_PROFILE", "no-such-profile")
	t.Setenv("AWS_ENDPOINT_URL", generalSrv.URL)
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", ownSrv.URL)
	cfg, err := LoadLambda(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewTables(cfg).GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String("t"),
		Key:       map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "k"}},
	}); err != nil {
		t.Fatal(err)
	}
	s := own.Load()
	if s == nil || general.Load() != nil {
		t.Fatalf("the call went to AWS_ENDPOINT_URL, not AWS_ENDPOINT_URL_DYNAMODB")
	}
	// With configured endpoints ignored, neither is used: the call goes to
	// AWS itself, which a test cannot reach, so only the configuration is
	// read.
	t.Run("configured endpoints ignored", func(t *testing.T) {
		t.Setenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "true")
		cfg, err := LoadLambda(context.Background())
		if err != nil || cfg.BaseEndpoint != nil {
			t.Errorf("BaseEndpoint %v, err %v; want none", cfg.BaseEndpoint, err)
		}
		if v, found, _ := (environment{}).GetIgnoreConfiguredEndpoints(context.Background()); !v || !found {
			t.Error("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=true not read")
		}
		t.Setenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "maybe")
		if _, err := LoadLambda(context.Background()); err == nil {
			t.Error("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=maybe accepted")
		}
	})
	if !strings.Contains(s.auth, "Credential=AKIDLAMBDA/") || !strings.Contains(s.auth, "/eu-west-3/dynamodb/") || s.token != "session-token" {
		t.Errorf("signed %q with token %q", s.auth, s.token)
	}
	for _, unset := range []string{"AWS_REGION", "AWS_SECRET_ACCESS_KEY"} {
		t.Run("without "+unset, func(t *testing.T) {
			t.Setenv("AWS_DEFAULT_REGION", "")
			t.Setenv(unset, "")
			if _, err := LoadLambda(context.Background()); err == nil {
				t.Errorf("LoadLambda without %s succeeded", unset)
			}
		})
	}
}

// TestStoreCallsWaitTheSpecsDelay: every DynamoDB client the service makes
// waits StoreRetryDelay (the store spec's 500 ms) between its attempts,
// keeps the configuration's attempts and what it retries, and leaves an
// option after it the last word.
func TestStoreCallsWaitTheSpecsDelay(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	more := ForEndpoint("http://127.0.0.1:1", "ca-central-1")
	more.RetryMaxAttempts = 5
	for _, c := range []struct {
		name     string
		client   *dynamodb.Client
		attempts int
	}{
		{"tables", (*dynamodb.Client)(NewTables(ForEndpoint("http://127.0.0.1:1", "ca-central-1"))), 3},
		{"queries", (*dynamodb.Client)(NewQueries(ForEndpoint("http://127.0.0.1:1", "ca-central-1"))), 3},
		{"AWS_MAX_ATTEMPTS=5", (*dynamodb.Client)(NewTables(more)), 5},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := c.client.Options().Retryer
			if got := r.MaxAttempts(); got != c.attempts {
				t.Errorf("%d attempts, want %d", got, c.attempts)
			}
			if !r.IsErrorRetryable(refused) {
				t.Error("a refused connection is not retried")
			}
			for attempt := 1; attempt < c.attempts; attempt++ {
				if d, err := r.RetryDelay(attempt, refused); err != nil || d != StoreRetryDelay {
					t.Errorf("after attempt %d it waits %v (%v), want %v", attempt, d, err, StoreRetryDelay)
				}
			}
		})
	}
	mine := aws.NopRetryer{}
	r := (*dynamodb.Client)(NewTables(ForEndpoint("http://127.0.0.1:1", "ca-central-1"), func(o *dynamodb.Options) { o.Retryer = mine })).Options().Retryer
	if _, ok := r.(aws.NopRetryer); !ok {
		t.Errorf("an option after StoreRetries did not replace the retryer: %T", r)
	}
}
