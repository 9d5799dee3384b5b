package store_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/store"
)

// deadLetterItem reads a dead letter's record as the Ledger keeps it.
func deadLetterItem(t *testing.T, f *provision.Fixture, queue, id string) map[string]ddbtypes.AttributeValue {
	t.Helper()
	out, err := dynamodb.NewFromConfig(f.AWS).GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName:      aws.String(f.Ref("LedgerTable")),
		Key:            map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: store.DeadLetterKey(queue, id)}},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	return out.Item
}

func attr(item map[string]ddbtypes.AttributeValue, name string) string {
	switch v := item[name].(type) {
	case *ddbtypes.AttributeValueMemberS:
		return v.Value
	case *ddbtypes.AttributeValueMemberN:
		return v.Value
	}
	return ""
}

// The first record of a message stands, with what the message was; the
// message arriving again finds it and writes nothing.
func TestDeadLetterIsRecordedOnce(t *testing.T) {
	ctx := context.Background()
	f := provision.ForTest(t, nil)
	clk := testkit.NewClock(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
	ledger := store.NewLedger(awsenv.NewTables(f.AWS), f.Ref("LedgerTable"), clk.Now)
	sent := time.Date(2026, 11, 21, 11, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		d    store.DeadLetter
		want map[string]string // attributes of the record ("" = absent)
	}{
		{"job", store.DeadLetter{Queue: "MailDLQ", MessageID: "m-job", SentAt: sent, SessionID: "cs_test_deadjob0000000001",
			Kind: "verdict", Attempt: 2, Job: `{"session_id":"cs_test_deadjob0000000001","kind":"verdict","attempt":2}`},
			map[string]string{"queue": "MailDLQ", "message_id": "m-job", "sent_at": "2026-11-21T11:00:00Z", "dead_at": "2026-11-21T12:00:00Z",
				"session_id": "cs_test_deadjob0000000001", "kind": "verdict", "reason": "", "attempt": "2",
				"job": `{"session_id":"cs_test_deadjob0000000001","kind":"verdict","attempt":2}`, "body_sha256": "", "body_bytes": "",
				"expires_at": "1795867200"}}, // dead_at + 7 days
		{"autoresponse job, which names no session", store.DeadLetter{Queue: "MailDLQ", MessageID: "m-auto", Kind: "autoresponse", Attempt: 3,
			Job: `{"kind":"autoresponse","inbox":"inbound/abc","attempt":3}`},
			map[string]string{"session_id": "", "kind": "autoresponse", "attempt": "3", "job": `{"kind":"autoresponse","inbox":"inbound/abc","attempt":3}`}},
		{"garbage", store.DeadLetter{Queue: "GenerateDLQ", MessageID: "m-garbage", BodySHA256: strings.Repeat("ab", 32), BodyBytes: 7},
			map[string]string{"queue": "GenerateDLQ", "message_id": "m-garbage", "sent_at": "", "body_sha256": strings.Repeat("ab", 32),
				"body_bytes": "7", "session_id": "", "job": "", "kind": "", "reason": "", "attempt": ""}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			first, err := ledger.RecordDeadLetter(ctx, tc.d, 7*24*time.Hour)
			if err != nil || !first {
				t.Fatalf("first record: %v %v", first, err)
			}
			again := tc.d
			again.Attempt, again.BodyBytes = 99, 99
			if first, err := ledger.RecordDeadLetter(ctx, again, 7*24*time.Hour); err != nil || first {
				t.Fatalf("the same message again: first %v, %v", first, err)
			}
			item := deadLetterItem(t, f, tc.d.Queue, tc.d.MessageID)
			for name, want := range tc.want {
				if got := attr(item, name); got != want {
					t.Errorf("%s = %q, want %q", name, got, want)
				}
			}
		})
	}
}

func TestDeadLetterNeedsItsMessageAndOneBody(t *testing.T) {
	ledger := store.NewLedger(nil, "unused", nil) // refused before any write
	for name, d := range map[string]store.DeadLetter{
		"no queue":              {MessageID: "m", BodySHA256: "ab"},
		"no message id":         {Queue: "q", BodySHA256: "ab"},
		"neither":               {Queue: "q", MessageID: "m"},
		"both":                  {Queue: "q", MessageID: "m", BodySHA256: "ab", Job: "{}", SessionID: "cs_test_x"},
		"job without a session": {Queue: "q", MessageID: "m", Job: `{"kind":"verdict","attempt":0}`},
		"job that is no job":    {Queue: "q", MessageID: "m", Job: "{}", SessionID: "cs_test_x"},
	} {
		if _, err := ledger.RecordDeadLetter(context.Background(), d, time.Hour); err == nil {
			t.Errorf("%s: recorded", name)
		}
	}
}

// A record whose answer was lost and retried by the SDK is still the
// first: the message's one alert is not skipped.
func TestRetriedDeadLetterIsStillFirst(t *testing.T) {
	f := provision.ForTest(t, nil)
	l := &testkit.Lossy{}
	db := awsenv.NewTables(f.AWS, func(o *dynamodb.Options) { o.HTTPClient = &http.Client{Transport: l} })
	ledger := store.NewLedger(db, f.Ref("LedgerTable"), nil)
	l.Arm("PutItem")
	first, err := ledger.RecordDeadLetter(context.Background(), store.DeadLetter{Queue: "q", MessageID: "m-lost", BodySHA256: "ab", BodyBytes: 1}, time.Hour)
	if err != nil || !first {
		t.Fatalf("first %v, %v", first, err)
	}
	if l.Armed() {
		t.Fatal("no answer was lost")
	}
}
