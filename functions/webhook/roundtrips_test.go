package main

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/stripex"
)

// A paid session's event waits on two round trips before its generation
// job is on its queue, counted on the AWS calls the handler makes: the
// claim, which also says whether the event was seen (the order it made),
// and the job's send. The Ledger is neither read nor written: the order is
// the event's record (markUnread), and the generator's claim records the
// job's arrival. In all the event makes two DynamoDB and S3 requests (the
// claim, the audit record) and the send.
func TestAPaidEventWaitsOnTheClaimThenTheJob(t *testing.T) {
	var calls *testkit.AWSCalls
	e := newEnvWith(t, Secrets{Test: testSecret}, func(c *aws.Config) { calls = testkit.NoteAWSCalls(c) })
	s := paidSession("cs_test_trips", oracle.TierQuick, "Should I open a bakery on the corner?")
	body := e.event("evt_trips", audit.EventCheckoutCompleted, s)
	calls.Reset()
	if resp := e.send(body); resp.StatusCode != http.StatusOK {
		t.Fatalf("got %s", status(resp))
	}
	steps, ops := calls.StepsThrough("SendMessage"), calls.Ops()
	t.Logf("the path to the job: %s (%d round trips); every call: %q", testkit.FormatSteps(steps), len(steps), ops)
	if want := [][]string{{"PutItem"}, {"SendMessage"}}; !slices.EqualFunc(steps, want, slices.Equal) {
		t.Errorf("the path to the job is %s, want %s", testkit.FormatSteps(steps), testkit.FormatSteps(want))
	}
	slices.Sort(ops)
	if want := []string{"PutItem", "PutObject", "SendMessage"}; !slices.Equal(ops, want) {
		t.Errorf("the event made %q, want %q", ops, want)
	}
	if e.eventRecorded("evt_trips") {
		t.Fatal("the event was marked in the Ledger, where nothing reads it")
	}
	if jobs := e.jobs("GenerateQueue"); len(jobs) != 1 {
		t.Fatalf("%d generate jobs, want 1", len(jobs))
	}
}

// An event whose order may be gone is read in the Ledger first, as every
// event was before the claim answered for the young ones: one older than
// the orders' retention (less a day; the shortest, 4 days, well within the
// Ledger's 30), sent again from Stripe's Dashboard after its order
// expired, and the smoke test's, whose order the smoke test deletes. Each
// is answered 200 as a duplicate, and no order or job comes back.
func TestAnEventWhoseOrderMayBeGoneIsReadInTheLedger(t *testing.T) {
	for _, tc := range []struct {
		name, id string
		smoke    bool
		aged     bool
	}{
		{"older than the orders' retention", "cs_test_goneAged", false, true},
		{"the smoke test's", "cs_test_goneSmoke", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, Secrets{Test: testSecret})
			e.svc.Retention = oracle.MinRetentionDays * 24 * time.Hour
			e.h.OrderRetention = e.svc.Retention
			s := paidSession(tc.id, oracle.TierQuick, "Should I sell bread by subscription?")
			if tc.smoke {
				s.Meta[stripex.MetaSmoke] = "1"
			}
			body := e.event("evt_gone", audit.EventCheckoutCompleted, s)
			if resp := e.send(body); resp.StatusCode != http.StatusOK {
				t.Fatalf("got %s", status(resp))
			}
			if jobs := e.jobs("GenerateQueue"); len(jobs) != 1 {
				t.Fatalf("%d generate jobs, want 1", len(jobs))
			}
			// The order is gone: expired (TTL), or deleted by the smoke test.
			if _, err := e.db.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{
				TableName: aws.String(e.f.Ref("OrdersTable")),
				Key:       map[string]types.AttributeValue{"session_id": &types.AttributeValueMemberS{Value: s.ID}},
			}); err != nil {
				t.Fatal(err)
			}
			if tc.aged {
				e.clock.Add(e.h.OrderRetention - claimMargin)
			}
			if resp := e.send(body); resp.StatusCode != http.StatusOK {
				t.Fatalf("sent again: %s", status(resp))
			}
			if o, ok := e.order(s.ID); ok {
				t.Fatalf("the order came back: %+v", o)
			}
			if jobs := e.jobs("GenerateQueue"); len(jobs) != 0 {
				t.Fatalf("%d generate jobs after the event came again, want none", len(jobs))
			}
			if !strings.Contains(e.logs.String(), "duplicate event ignored") {
				t.Fatal("the event sent again was not a duplicate")
			}
		})
	}
}
