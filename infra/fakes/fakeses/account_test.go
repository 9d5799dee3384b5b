package fakeses_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"

	"42sisters.ai/oracle/infra/fakes/fakeses"
	"42sisters.ai/oracle/shared/awsenv"
)

// TestAccountAnswersAndPauses: GetAccount, which moto lacks, is answered
// by the front through the SDK, and /_control pauses and resumes sending.
func TestAccountAnswersAndPauses(t *testing.T) {
	front := httptest.NewServer(fakeses.New(fakeses.Options{Moto: "http://127.0.0.1:1"}))
	defer front.Close()
	ses := sesv2.NewFromConfig(awsenv.ForEndpoint(front.URL, region))
	account := func() *sesv2.GetAccountOutput {
		t.Helper()
		out, err := ses.GetAccount(context.Background(), &sesv2.GetAccountInput{})
		if err != nil {
			t.Fatalf("GetAccount: %v", err)
		}
		return out
	}
	control := func(body string) {
		t.Helper()
		resp, err := http.Post(front.URL+"/_control", "application/json", bytes.NewBufferString(body))
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("control %s: %v %v", body, resp, err)
		}
		resp.Body.Close()
	}
	a := account()
	if !a.SendingEnabled || aws.ToString(a.EnforcementStatus) != "HEALTHY" || a.SendQuota == nil || a.SendQuota.Max24HourSend != fakeses.Quota || a.SendQuota.SentLast24Hours != 0 {
		t.Fatalf("fresh account %+v", a)
	}
	control(`{"sending_paused": true}`)
	if account().SendingEnabled {
		t.Fatal("sending still enabled after the pause")
	}
	control(`{"reset": true}`)
	if !account().SendingEnabled {
		t.Fatal("sending still paused after the reset")
	}
}
