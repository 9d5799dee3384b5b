package awsprofile

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"42sisters.ai/oracle/shared/awsenv"
)

// TestMaxAttemptsFromTheEnvironmentStillHolds: AWS_MAX_ATTEMPTS caps the
// retryer each loader installs, as the SDK's own would be capped: the
// project's retryer does not make a tool retry more (Load), nor a function
// (awsenv.LoadLambda: the local stack's compressed email schedule sets
// AWS_MAX_ATTEMPTS=1, so that each SES failure is one attempt of the
// mailer's schedule).
func TestMaxAttemptsFromTheEnvironmentStillHolds(t *testing.T) {
	for _, c := range []struct {
		name string
		load func(context.Context) (aws.Config, error)
	}{{"Load", func(ctx context.Context) (aws.Config, error) { return Load(ctx) }}, {"awsenv.LoadLambda", awsenv.LoadLambda}} {
		t.Run(c.name, func(t *testing.T) {
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
			t.Setenv("AWS_CONFIG_FILE", "/dev/null")
			t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
			cfg, err := c.load(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			_, err = awsenv.NewTables(cfg).GetItem(context.Background(), &dynamodb.GetItemInput{
				TableName: aws.String("t"),
				Key:       map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "k"}},
			})
			if err == nil || calls.Load() != 1 {
				t.Fatalf("%d requests (err %v), want 1 with AWS_MAX_ATTEMPTS=1", calls.Load(), err)
			}
		})
	}
}
