package queue_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/shared/queue"
)

func TestParse(t *testing.T) {
	cases := []struct {
		name string
		body string
		ok   bool
	}{
		{"generate", `{"session_id":"cs_test_abc","reason":"paid","attempt":0}`, true},
		{"regenerate", `{"session_id":"cs_test_abc","reason":"regenerate","attempt":0}`, true},
		{"retired quarantine reminder, for the generator to acknowledge", `{"session_id":"cs_test_abc","reason":"quarantine_review","attempt":3,"not_before":"2025-03-02T09:00:00Z"}`, true},
		{"mail", `{"session_id":"cs_test_abc","kind":"silent_drop","attempt":2}`, true},
		{"failure notice", `{"session_id":"cs_test_abc","kind":"failed","attempt":0}`, true},
		{"review notice", `{"session_id":"cs_test_abc","kind":"review","attempt":0}`, true},
		{"divergence notice", `{"session_id":"cs_test_abc","kind":"divergence","attempt":0}`, true},
		{"unknown kind", `{"session_id":"cs_test_abc","kind":"verdict2","attempt":0}`, false},
		{"not json", `hello`, false},
		{"empty", ``, false},
		{"unknown field", `{"session_id":"cs_test_abc","reason":"paid","attempt":0,"email":"a@b.co"}`, false},
		{"trailing data", `{"session_id":"cs_test_abc","reason":"paid","attempt":0} {}`, false},
		{"bad session", `{"session_id":"nope","reason":"paid","attempt":0}`, false},
		{"both reason and kind", `{"session_id":"cs_test_abc","reason":"paid","kind":"verdict","attempt":0}`, false},
		{"neither", `{"session_id":"cs_test_abc","attempt":0}`, false},
		{"unknown reason", `{"session_id":"cs_test_abc","reason":"because","attempt":0}`, false},
		{"negative attempt", `{"session_id":"cs_test_abc","reason":"paid","attempt":-1}`, false},
		{"autoresponse", `{"kind":"autoresponse","inbox":"inbound/0100abc-def","attempt":1}`, true},
		{"autoresponse without its message", `{"kind":"autoresponse","attempt":0}`, false},
		{"autoresponse outside the inbox prefix", `{"kind":"autoresponse","inbox":"records/x","attempt":0}`, false},
		{"autoresponse climbing out of its prefix", `{"kind":"autoresponse","inbox":"inbound/..","attempt":0}`, false},
		{"autoresponse naming a session", `{"session_id":"cs_test_abc","kind":"autoresponse","inbox":"inbound/m","attempt":0}`, false},
		{"autoresponse with a negative attempt", `{"kind":"autoresponse","inbox":"inbound/m","attempt":-1}`, false},
		{"chat sign-in", `{"kind":"chat_signin","account":"%[1]s","nonce":"req_0123456789","attempt":0}`, true},
		{"chat payment failed", `{"kind":"chat_payment_failed","account":"%[1]s","nonce":"in_1MtHbELkdIwHu7ix","attempt":2}`, true},
		{"chat mail without its account", `{"kind":"chat_signin","nonce":"req_0123456789","attempt":0}`, false},
		{"chat mail naming an address", `{"kind":"chat_signin","account":"a@b.co","nonce":"req_0123456789","attempt":0}`, false},
		{"chat mail without its nonce", `{"kind":"chat_signin","account":"%[1]s","attempt":0}`, false},
		{"chat mail with a short nonce", `{"kind":"chat_signin","account":"%[1]s","nonce":"x","attempt":0}`, false},
		{"chat mail naming a session", `{"session_id":"cs_test_abc","kind":"chat_signin","account":"%[1]s","nonce":"req_0123456789","attempt":0}`, false},
		{"chat mail with a negative attempt", `{"kind":"chat_payment_failed","account":"%[1]s","nonce":"in_1MtHbELkdIwHu7ix","attempt":-1}`, false},
		{"an order's mail naming an account", `{"session_id":"cs_test_abc","kind":"verdict","account":"%[1]s","attempt":0}`, false},
		{"an order's mail naming an inbox message", `{"session_id":"cs_test_abc","kind":"verdict","inbox":"inbound/m","attempt":0}`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := strings.ReplaceAll(c.body, "%[1]s", "hmac-sha256:0123456789abcdef0123456789abcdef")
			if _, err := queue.Parse(body); (err == nil) != c.ok {
				t.Fatalf("Parse: %v, want ok=%v", err, c.ok)
			}
		})
	}
}

func TestSendDelaysUpToTheSQSCap(t *testing.T) {
	ctx := context.Background()
	f := provision.ForTest(t, nil)
	c := sqs.NewFromConfig(f.AWS)
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	s := queue.NewSender(queue.NewClient(f.AWS), f.Ref("GenerateQueue"), func() time.Time { return now })
	if err := s.Send(ctx, queue.Job{SessionID: "bad", Reason: queue.ReasonPaid}); err == nil {
		t.Fatal("an invalid job was sent")
	}
	later := now.Add(2 * time.Hour)
	if err := s.Send(ctx, queue.Job{SessionID: "cs_test_delay", Reason: queue.ReasonRegenerate, NotBefore: &later}); err != nil {
		t.Fatal(err)
	}
	a, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(f.Ref("GenerateQueue")),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessagesDelayed, types.QueueAttributeNameApproximateNumberOfMessages},
	})
	if err != nil {
		t.Fatal(err)
	}
	// SQS is at least once: a send the SDK retried on a busy machine may
	// land twice. What matters is that none of it is visible yet.
	delayed, _ := strconv.Atoi(a.Attributes[string(types.QueueAttributeNameApproximateNumberOfMessagesDelayed)])
	visible, _ := strconv.Atoi(a.Attributes[string(types.QueueAttributeNameApproximateNumberOfMessages)])
	if delayed < 1 || visible != 0 {
		t.Fatalf("%d delayed and %d visible messages, want the job delayed", delayed, visible)
	}
}
