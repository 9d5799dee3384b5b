package main

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/store"
)

// A verdict's email waits on two round trips, counted on the AWS calls the
// handler makes: the delivery's claim, which reads the order in the same
// request, made while the address is read from Stripe and looked up on the
// suppression list; then the send. Gate 2's audit record follows the send
// with the delivery's record, the send's three audit records in one
// object. The claim's answer is held until the suppression list is asked:
// a handler that waited for the claim first would be held. In all the
// email makes four DynamoDB and S3 requests (seven before its records were
// one object and the delivery's record, MailSent, became what a reply
// finds the order by, store.SentMessages) and the send.
func TestAVerdictEmailWaitsOnTheClaimThenTheSend(t *testing.T) {
	var calls *testkit.AWSCalls
	e := newEnvWith(t, func(c *aws.Config) { calls = testkit.NoteAWSCalls(c) })
	addr := uniqueAddress(t)
	id := e.paidSession(oracle.TierQuick, addr)
	e.ready(id, oracle.TierQuick, oracle.VerdictGreen)
	calls.Reset()
	calls.Hold("UpdateItem", "GetItem")
	if n := e.run(record(id, oracle.MailVerdict)); n != 0 {
		t.Fatal("the job failed")
	}
	steps, ops := calls.StepsThrough("SendEmail"), calls.Ops()
	t.Logf("the path to the send: %s (%d round trips); every call: %q", testkit.FormatSteps(steps), len(steps), ops)
	if held := calls.Held(); len(held) != 0 {
		t.Errorf("held in vain: %q: the claim was waited for before the suppression list was asked", held)
	}
	if want := [][]string{{"GetItem", "UpdateItem"}, {"SendEmail"}}; !slices.EqualFunc(steps, want, slices.Equal) {
		t.Errorf("the path to the send is %s, want %s", testkit.FormatSteps(steps), testkit.FormatSteps(want))
	}
	if i := slices.Index(ops, "PutObject"); i < slices.Index(ops, "SendEmail") {
		t.Errorf("calls %q: an audit record was written before the send", ops)
	}
	slices.Sort(ops)
	if want := []string{"GetItem", "PutObject", "SendEmail", "UpdateItem", "UpdateItem"}; !slices.Equal(ops, want) {
		t.Errorf("the email made %q, want %q", ops, want)
	}
	if n := len(e.inbox(addr)); n != 1 {
		t.Fatalf("%d emails, want 1", n)
	}
	if f := e.filterRecords(); len(f) != 1 || f[0].Action != "PASS" {
		t.Fatalf("gate 2's records %+v, want one PASS", f)
	}
}

// A job that recorded its send and died before the send's records (the
// crash point mailer/after-record) is redelivered: it finds the delivery
// closed by its own attempt and writes gate 2's record, the attempt's, the
// email's and the sent message's, without sending again. A duplicate of an
// attempt that failed before writes nothing: its records were written when
// it failed.
func TestARedeliveredJobWritesTheRecordsOfItsSend(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		attempt int // the attempt that sent the email; the job is attempt 0
		records bool
	}{
		{"the job's own attempt sent it", 0, true},
		{"a later attempt sent it", 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			addr := uniqueAddress(t)
			id := e.paidSession(oracle.TierQuick, addr)
			e.ready(id, oracle.TierQuick, oracle.VerdictGreen)
			for a := 0; a <= tc.attempt; a++ {
				c, err := e.orders.ClaimOrderMail(ctx, id, oracle.MailVerdict, a, time.Minute)
				if err != nil {
					t.Fatal(err)
				}
				if a < tc.attempt {
					_, err = e.orders.MailFailed(ctx, id, oracle.MailVerdict, c.Token, store.Try{Attempt: a, At: time.Now().UTC(), Class: "transient"}, time.Now().Add(time.Minute))
				} else {
					err = e.orders.MailSent(ctx, id, oracle.MailVerdict, c.Token, "ses-sent-before-the-crash", oracle.MailSent)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			if n := e.run(record(id, oracle.MailVerdict)); n != 0 {
				t.Fatal("the redelivered job failed")
			}
			if n := len(e.inbox(addr)); n != 0 {
				t.Fatalf("%d emails sent again", n)
			}
			// A verdict email's message is found by its send's record on
			// the order (written before the crash), never in the Ledger.
			if _, inLedger, err := e.ledger.SentMessage(ctx, "ses-sent-before-the-crash"); err != nil || inLedger {
				t.Fatalf("the verdict email's message in the Ledger: %t %v", inLedger, err)
			}
			session, found, err := store.NewSentMessages(awsenv.NewQueries(e.f.AWS), e.f.Ref("OrdersTable"), e.ledger).SentMessage(ctx, "ses-sent-before-the-crash")
			if err != nil || !found || session != id {
				t.Fatalf("the sent message: %q %t %v, want %s", session, found, err, id)
			}
			got := map[audit.Event]int{}
			for _, r := range testkit.AuditRecords(t, e.s3, e.f.Ref("AuditBucket")) {
				got[r.Event]++
			}
			if !tc.records {
				if len(got) != 0 {
					t.Fatalf("records %v: want none written by the duplicate", got)
				}
				return
			}
			want := map[audit.Event]int{audit.EventFilter: 1, audit.EventMailAttempt: 1, audit.MailEvent(oracle.MailVerdict): 1}
			if !maps.Equal(got, want) {
				t.Fatalf("records %v: want %v", got, want)
			}
			for _, r := range e.mailRecords() {
				if r.Status != audit.StatusEmailSent || r.Email != e.h.Hasher.Email(addr) {
					t.Errorf("the email's record %+v: want sent, to the address's hash", r)
				}
			}
			if n := e.metrics.Counts()["EmailsSent"]; n != 0 {
				t.Errorf("EmailsSent counted %v times for records written again, want 0", n)
			}
			// The three in the send's one object, which the job delivered
			// again finds there: it adds nothing.
			kind := oracle.MailVerdict
			want1 := map[string][]string{audit.RecordID(id, audit.NameMail, kind): {audit.RecordID(id, audit.NameFilterMail, kind),
				audit.RecordID(id, audit.NameMailAttempt, kind, 0), audit.RecordID(id, audit.NameMail, kind)}}
			if got := testkit.AuditObjects(t, e.s3, e.f.Ref("AuditBucket")); !maps.EqualFunc(got, want1, slices.Equal) {
				t.Errorf("objects %q, want %q", got, want1)
			}
			if n := e.run(record(id, oracle.MailVerdict)); n != 0 {
				t.Fatal("the job delivered again failed")
			}
			v, err := e.s3.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String(e.f.Ref("AuditBucket"))})
			if err != nil {
				t.Fatal(err)
			}
			if len(v.Versions) != 1 {
				t.Errorf("%d object versions after the job was delivered again, want the one", len(v.Versions))
			}
		})
	}
}
