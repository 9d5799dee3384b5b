package stack_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"42sisters.ai/oracle/infra/local/stack"
)

// The operator's key rotation on the running stack, with no deploy and no
// restart: Google stops taking the key the generator read at cold start
// (the fake Gemini accepts only the new key), the paid order is parked
// with GEMINI_AUTH_FAILURE (from the key check at the generator's cold
// start, or from the model call), the operator puts the new key in the secret in
// moto's Parameter Store, and the same generator processes (all started,
// with the old key, when the stack started) read it again at the next key
// check and deliver the order. The key check and the re-read
// are compressed from a minute to 2 s and 1 s.
func TestARotatedGeminiKeyIsPickedUpWithoutADeploy(t *testing.T) {
	t.Parallel()
	o := options(t)
	o.Env = map[string]map[string]string{"GeneratorFunction": {"GEMINI_KEY_RECHECK": "2s", "SECRET_REREAD_INTERVAL": "1s"}}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	s, err := stack.Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })

	const newKey = "rotated-gemini-key"
	post(t, s.GeminiURL+"/_key", `{"accepted":"`+newKey+`"}`) // Google revoked the old key
	ord := buy(t, s, "quick", "rotation")
	waitAlert(t, s, "GEMINI_AUTH_FAILURE")

	arn := s.Resources.Values.Params["GeminiApiKeyArn"]
	if _, err := ssm.NewFromConfig(s.AWS).PutParameter(ctx, &ssm.PutParameterInput{
		Name: aws.String(arn[strings.Index(arn, ":parameter")+len(":parameter"):]), Value: aws.String(newKey), Type: ssmtypes.ParameterTypeSecureString, Overwrite: aws.Bool(true)}); err != nil {
		t.Fatal(err)
	}
	waitReady(t, s.APIURL, ord.session)
	oneVerdictEmail(t, s, ord)
	last := modelCalls(t, s.GeminiURL)
	if n := len(last); last[n-1].Status != 200 {
		t.Fatalf("the last model call answered %d, want 200 with the new key", last[n-1].Status)
	}
}
