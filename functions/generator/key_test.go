package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"42sisters.ai/oracle/shared/config"
	"42sisters.ai/oracle/shared/gemini"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/secret"
)

// GEMINI_TIMEOUT GAP-02D with a rotation: Google refuses the key the
// generator read at cold start (the fake accepts only the new one), orders
// are parked, the operator puts the new key in the secret in moto's Secrets
// Manager, and within one parking interval, with no deploy, the parked jobs
// come back, the key check reads the secret again and the orders are
// generated with the new key.
func TestARotatedKeyResumesParkedOrders(t *testing.T) {
	ctx := context.Background()
	e := newEnvWith(t, map[string]string{"GeminiApiKeyArn": "revoked-key"})
	arn := e.f.Values.Params["GeminiApiKeyArn"]
	e.model.AcceptOnly("rotated-key") // the old key was revoked at Google
	key := secret.New(secret.Options{Name: "GEMINI_API_KEY", ARN: arn, Source: config.NewAWSSecrets(e.f.AWS),
		Initial: "revoked-key", Now: e.clock.Now})
	client, err := gemini.New(ctx, gemini.Options{Key: key, Model: "gemini-2.5-flash", BaseURL: e.modelURL, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	e.caller.Primary = client
	e.h.Key = &KeyHealth{Check: client.CheckKey, Recheck: time.Minute, Alerts: e.h.Alerts, Now: e.clock.Now}
	if e.h.Key.Verify(ctx) {
		t.Fatal("the revoked key passed the cold start check")
	}

	ids := []string{"cs_test_rotatedKey0001", "cs_test_rotatedKey0002"}
	for i, id := range ids {
		e.paid(id, oracle.TierQuick, "Should I open a bakery?")
		if failed := e.run(record(fmt.Sprint("p", i), job(id), 1)); len(failed) != 0 {
			t.Fatal("the item failed")
		}
	}
	parked := e.generateJobs()
	if len(parked) != len(ids) || len(e.model.Calls()) != 0 {
		t.Fatalf("%d jobs parked and %d model calls, want both parked without a call", len(parked), len(e.model.Calls()))
	}

	// The operator fixes the key in its secret, as docs/operating.md says.
	if _, err := ssm.NewFromConfig(e.f.AWS).PutParameter(ctx, &ssm.PutParameterInput{
		Name: aws.String(arn[strings.Index(arn, ":parameter")+len(":parameter"):]), Value: aws.String("rotated-key"),
		Type: ssmtypes.ParameterTypeSecureString, Overwrite: aws.Bool(true)}); err != nil {
		t.Fatal(err)
	}
	// One parking interval later the parked jobs come back.
	e.clock.Add(e.h.Key.Recheck)
	for i, j := range parked {
		if j.NotBefore == nil || j.NotBefore.After(e.clock.Now()) {
			t.Fatalf("parked job %+v is due after one parking interval", j)
		}
		if failed := e.run(record(fmt.Sprint("r", i), mustJSON(t, j), 2)); len(failed) != 0 {
			t.Fatal("the resumed item failed")
		}
	}
	for _, id := range ids {
		if o := e.order(id); o.Status != oracle.StatusReady {
			t.Fatalf("order %s is %s after the rotation, want READY", id, o.Status)
		}
	}
	if calls := e.model.Calls(); len(calls) != len(ids) {
		t.Fatalf("%d model calls, want one per order", len(calls))
	}
	if jobs := e.generateJobs(); len(jobs) != 0 {
		t.Fatalf("jobs parked again: %+v", jobs)
	}
	if strings.Contains(e.logs.String(), "rotated-key") || strings.Contains(e.logs.String(), "revoked-key") {
		t.Fatal("a key reached the logs")
	}
}
