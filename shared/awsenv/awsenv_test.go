package awsenv

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
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

// TestMaxAttemptsFromTheEnvironmentStillHolds: AWS_MAX_ATTEMPTS=1 (the
// local stack's compressed email schedule sets it, so that each SES
// failure is one attempt of the mailer's schedule) caps the retryer Load
// installs.
func TestMaxAttemptsFromTheEnvironmentStillHolds(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	t.Setenv("AWS_MAX_ATTEMPTS", "1")
	t.Setenv("AWS_REGION", "ca-central-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_ENDPOINT_URL", srv.URL)
	cfg, err := Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	_, err = NewTables(cfg).GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String("t"),
		Key:       map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "k"}},
	})
	if err == nil || calls.Load() != 1 {
		t.Fatalf("%d requests (err %v), want 1 with AWS_MAX_ATTEMPTS=1", calls.Load(), err)
	}
}
