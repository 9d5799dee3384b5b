package testkit_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/awsenv"
)

// A request the SDK tries again (a 500 from a loaded moto) is one call of
// the code's: Ops and Steps count it once, Retries says it was retried.
func TestAnSDKRetryIsNotAnotherCall(t *testing.T) {
	var answered atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		if answered.Add(1) == 1 {
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte(`{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"busy"}`))
			return
		}
		_, _ = w.Write([]byte(`{}`))
	}))
	t.Cleanup(srv.Close)
	cfg := awsenv.ForEndpoint(srv.URL, "ca-central-1")
	calls := testkit.NoteAWSCalls(&cfg)
	db := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.RetryMaxAttempts = 3 })
	if _, err := db.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String("t"),
		Key: map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: "k"}}}); err != nil {
		t.Fatal(err)
	}
	if n := answered.Load(); n != 2 {
		t.Fatalf("%d requests reached the server, want 2 (one retry)", n)
	}
	if got := calls.Ops(); !slices.Equal(got, []string{"GetItem"}) {
		t.Errorf("Ops %q, want one GetItem", got)
	}
	if got := calls.Retries(); !slices.Equal(got, []string{"GetItem"}) {
		t.Errorf("Retries %q, want one GetItem", got)
	}
	if got := testkit.FormatSteps(calls.Steps()); got != "GetItem" {
		t.Errorf("Steps %s, want GetItem", got)
	}
}
