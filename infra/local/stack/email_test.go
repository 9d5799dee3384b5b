package stack_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"42sisters.ai/oracle/infra/local/stack"
	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/store"
)

// The mailer's schedule compressed from 0, 5 min, 30 min, 2 h to 0, 1 s,
// 2 s, 3 s; one HTTP request per attempt (no SDK retries), so that each
// failure the SES front is told of is one attempt of the schedule.
var compressedMail = map[string]string{
	"MAIL_RETRY_SCHEDULE": "0,1s,2s,3s",
	"AWS_MAX_ATTEMPTS":    "1",
}

// TestEmailRetrySchedule runs the email acceptance items on one local
// stack whose SES front fails on demand, one order at a time (the front's
// failures are the stack's):
//
//   - the transport failing on the first three attempts: one email, sent
//     on attempt 4, and SES's delivery event makes its state delivered;
//   - failing on every attempt: no fifth attempt, one dead-letter record,
//     one CRITICAL alert naming the session, the verdict still on the page
//     with the line that the email could not be delivered;
//   - a 429 with Retry-After 120 s: the next attempt is due no sooner;
//   - a 400: no retry, EMAIL_FAILED and a dead-letter record;
//   - ten concurrent duplicates of a mail job in a retry window: one email;
//   - SES's mailbox simulator: a hard bounce shows on the page, and an
//     address that complained is not emailed again.
func TestEmailRetrySchedule(t *testing.T) {
	t.Parallel()
	o := options(t)
	o.Env = map[string]map[string]string{"MailerFunction": compressedMail}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	s, err := stack.Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	var addrs, queries []string
	track := func(ord order) order {
		addrs, queries = append(addrs, ord.addr), append(queries, ord.query)
		return ord
	}

	t.Run("three failures then sent", func(t *testing.T) {
		sesControl(t, s, `{"reset":true,"fail":[{"status":503,"code":"ServiceUnavailable"},{"status":503,"code":"ServiceUnavailable"},{"status":500,"code":"InternalFailure"}]}`)
		ord := track(buy(t, s, "quick", "retry-thrice"))
		oneVerdictEmail(t, s, ord)
		calls := waitSESCalls(t, s, ord.session, 4)
		for i, c := range calls {
			if ok := c.Status == http.StatusOK; ok != (i == 3) {
				t.Errorf("attempt %d answered %d %s", i+1, c.Status, c.Code)
			}
		}
		waitMailState(t, s, ord.session, oracle.MailDelivered)
		item := orderItem(t, s, ord.session)
		var tries []store.Try
		if err := attributevalue.Unmarshal(item["mail_verdict_tries"], &tries); err != nil || len(tries) != 3 {
			t.Fatalf("recorded tries %+v %v, want the three failures", tries, err)
		}
		for i := 1; i < len(tries); i++ {
			if gap := tries[i].At.Sub(tries[i-1].At); gap < time.Duration(i)*time.Second {
				t.Errorf("attempt %d came %s after attempt %d, before its step of %ds", i+1, gap, i, i)
			}
		}
		if n := countAlerts(s, "EMAIL_DEAD_LETTER") + countAlerts(s, "EMAIL_FAILED"); n != 0 {
			t.Errorf("%d email alerts for an email that arrived", n)
		}
	})

	t.Run("failing on every attempt", func(t *testing.T) {
		sesControl(t, s, `{"reset":true,"fail_always":{"status":503,"code":"ServiceUnavailable"}}`)
		ord := track(buy(t, s, "full", "retry-never"))
		waitAlert(t, s, "EMAIL_DEAD_LETTER")
		sesControl(t, s, `{"reset":true}`)
		// Nothing is left to deliver: had a fifth attempt been queued, the
		// mail queue would still hold it.
		mailIdle(t, s)
		if calls := sesCallsFor(t, s, ord.session); len(calls) != 4 {
			t.Fatalf("%d attempts, want 4 and never a fifth", len(calls))
		}
		var alerts []string
		for _, a := range s.Alerts() {
			if strings.Contains(a, "| EMAIL_DEAD_LETTER |") {
				alerts = append(alerts, a)
			}
		}
		if len(alerts) != 1 || !strings.Contains(alerts[0], "CRITICAL") || !strings.Contains(alerts[0], oracle.ShortID(ord.session)) || strings.Contains(alerts[0], ord.session) {
			t.Fatalf("dead-letter alerts %q, want one CRITICAL naming the session by oracle.ShortID", alerts)
		}
		dead := ledgerItem(t, s, store.MailDeadLetterKey(ord.session, oracle.MailVerdict))
		var d store.MailDeadLetter
		if err := attributevalue.UnmarshalMap(dead, &d); err != nil || len(d.Tries) != 4 || d.Class != "transient" || d.Transport != "SES" {
			t.Fatalf("dead-letter record %+v %v", d, err)
		}
		undeliveredOnThePage(t, s, ord.session)
		if mails := mailboxNow(t, s.APIURL, ord.addr); len(mails) != 0 {
			t.Fatalf("%d emails arrived", len(mails))
		}
	})

	t.Run("400 is not retried", func(t *testing.T) {
		sesControl(t, s, `{"reset":true,"fail":[{"status":400,"code":"MessageRejected"}]}`)
		ord := track(buy(t, s, "strategy", "rejected"))
		waitAlert(t, s, "EMAIL_FAILED")
		undeliveredOnThePage(t, s, ord.session)
		mailIdle(t, s)
		if calls := sesCallsFor(t, s, ord.session); len(calls) != 1 {
			t.Fatalf("%d attempts, want 1: a 400 is not retried", len(calls))
		}
		var d store.MailDeadLetter
		if err := attributevalue.UnmarshalMap(ledgerItem(t, s, store.MailDeadLetterKey(ord.session, oracle.MailVerdict)), &d); err != nil || d.Class != "permanent" || len(d.Tries) != 1 {
			t.Fatalf("dead-letter record %+v %v", d, err)
		}
	})

	t.Run("ten duplicates in a retry window", func(t *testing.T) {
		sesControl(t, s, `{"reset":true,"fail":[{"status":503,"code":"ServiceUnavailable"}]}`)
		ord := track(buy(t, s, "quick", "duplicates"))
		waitSESCalls(t, s, ord.session, 1)
		q := sqs.NewFromConfig(s.AWS)
		var wg sync.WaitGroup
		for i := range 10 {
			wg.Go(func() {
				body := fmt.Sprintf(`{"session_id":%q,"kind":"verdict","attempt":%d}`, ord.session, i%2)
				if _, err := q.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(s.Resources.Ref("MailQueue")), MessageBody: aws.String(body)}); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		oneVerdictEmail(t, s, ord)
		mailIdle(t, s) // every duplicate and the scheduled attempt have run
		if mails := mailboxNow(t, s.APIURL, ord.addr); len(mails) != 1 {
			t.Fatalf("%d emails, want 1", len(mails))
		}
		sent := 0
		for _, c := range sesCallsFor(t, s, ord.session) {
			if c.Status == http.StatusOK {
				sent++
			}
		}
		if sent != 1 {
			t.Fatalf("%d sends accepted, want 1", sent)
		}
	})

	t.Run("a hard bounce and a complaint", func(t *testing.T) {
		sesControl(t, s, `{"reset":true}`)
		const bouncer, complainer = "bounce@simulator.amazonses.com", "complaint@simulator.amazonses.com"
		addrs = append(addrs, bouncer, complainer)
		bounced := pay(t, s, "quick", "Should I sell bread by the sea (bounce)?", bouncer)
		waitMailState(t, s, bounced, oracle.MailBounced)
		waitAlert(t, s, "EMAIL_BOUNCED")
		undeliveredOnThePage(t, s, bounced)

		first := pay(t, s, "quick", "Should I sell bread by the lake (complaint)?", complainer)
		waitMailState(t, s, first, oracle.MailComplained)
		waitAlert(t, s, "EMAIL_COMPLAINT")
		// The next order from that address is not emailed at all.
		second := pay(t, s, "quick", "Should I sell bread by the river (after a complaint)?", complainer)
		waitMailState(t, s, second, oracle.MailSuppressed)
		if calls := sesCallsFor(t, s, second); len(calls) != 0 {
			t.Fatalf("%d sends to an address that complained", len(calls))
		}
		undeliveredOnThePage(t, s, second)
	})

	t.Run("429 with Retry-After", func(t *testing.T) {
		sesControl(t, s, `{"reset":true,"fail_always":{"status":429,"code":"TooManyRequestsException","retry_after_s":120}}`)
		ord := track(buy(t, s, "quick", "retry-after"))
		waitSESCalls(t, s, ord.session, 1)
		var item map[string]ddbtypes.AttributeValue
		if !testkit.Eventually(30*time.Second, 100*time.Millisecond, func() bool {
			item = orderItem(t, s, ord.session)
			_, ok := item["mail_verdict_next_at"]
			return ok
		}) {
			t.Fatalf("the next attempt was never scheduled: %v", item)
		}
		var tries []store.Try
		var nextAt time.Time
		_ = attributevalue.Unmarshal(item["mail_verdict_tries"], &tries)
		_ = attributevalue.Unmarshal(item["mail_verdict_next_at"], &nextAt)
		if len(tries) != 1 || nextAt.Sub(tries[0].At) < 120*time.Second {
			t.Fatalf("the next attempt is due %s after the 429, want at least 120 s (tries %+v)", nextAt.Sub(tries[0].At), tries)
		}
		// The next attempt's job carries that time (the mailer queued it
		// with the time it recorded), and a job is never run before its
		// time: it hops. None has run yet.
		if calls := sesCallsFor(t, s, ord.session); len(calls) != 1 {
			t.Fatalf("%d attempts within seconds of a Retry-After of 120 s", len(calls))
		}
		sesControl(t, s, `{"reset":true}`)
	})

	privacySweep(t, s, o, addrs, queries)
}

// TestEmailThroughGraph is `MAIL_TRANSPORT=graph make run`: the demo's
// email goes through the fake Microsoft Graph, with a client-credentials
// token, and shows in the local mailbox.
func TestEmailThroughGraph(t *testing.T) {
	t.Parallel()
	o := options(t)
	o.MailTransport = "graph"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := stack.Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	ord := buy(t, s, "full", "graph")
	waitReady(t, s.APIURL, ord.session)
	oneVerdictEmail(t, s, ord)
	_, body, _ := send(t, http.DefaultClient, mustRequest(t, "GET", s.GraphURL+"/_calls"))
	var calls []struct {
		Kind   string `json:"kind"`
		Status int    `json:"status"`
	}
	if err := json.Unmarshal(body, &calls); err != nil {
		t.Fatalf("fake Graph calls: %v: %s", err, body)
	}
	var token, sent bool
	for _, c := range calls {
		token = token || (c.Kind == "token" && c.Status == http.StatusOK)
		sent = sent || (c.Kind == "sendMail" && c.Status == http.StatusAccepted)
	}
	if !token || !sent {
		t.Fatalf("fake Graph calls %+v, want a token and an accepted sendMail", calls)
	}
	if sesCallsFor(t, s, ord.session) != nil {
		t.Fatal("the email also went through SES")
	}
	privacySweep(t, s, o, []string{ord.addr}, []string{ord.query})
}

// mailIdle waits until the mail queue holds no job: none visible, in
// flight or delayed.
func mailIdle(t *testing.T, s *stack.Stack) {
	t.Helper()
	q := sqs.NewFromConfig(s.AWS)
	var attrs map[string]string
	if !testkit.Eventually(60*time.Second, 100*time.Millisecond, func() bool {
		out, err := q.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
			QueueUrl: aws.String(s.Resources.Ref("MailQueue")),
			AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages,
				sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible, sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed},
		})
		if err != nil {
			t.Fatal(err)
		}
		attrs = out.Attributes
		return attrs["ApproximateNumberOfMessages"] == "0" && attrs["ApproximateNumberOfMessagesNotVisible"] == "0" && attrs["ApproximateNumberOfMessagesDelayed"] == "0"
	}) {
		t.Fatalf("the mail queue did not empty: %v", attrs)
	}
}

// sesCall is one SendEmail request the SES front answered.
type sesCall struct {
	Status int               `json:"status"`
	Code   string            `json:"code"`
	Tags   map[string]string `json:"tags"`
}

func sesControl(t *testing.T, s *stack.Stack, body string) {
	t.Helper()
	post(t, s.SESURL+"/_control", body)
}

// sesCallsFor lists the SendEmail requests for the session's emails.
func sesCallsFor(t *testing.T, s *stack.Stack, session string) []sesCall {
	t.Helper()
	_, body, _ := send(t, http.DefaultClient, mustRequest(t, "GET", s.SESURL+"/_calls"))
	var all, mine []sesCall
	if err := json.Unmarshal(body, &all); err != nil {
		t.Fatalf("SES front calls: %v: %.200s", err, body)
	}
	for _, c := range all {
		if c.Tags["session_id"] == session {
			mine = append(mine, c)
		}
	}
	return mine
}

// waitSESCalls waits for n SendEmail requests for the session.
func waitSESCalls(t *testing.T, s *stack.Stack, session string, n int) []sesCall {
	t.Helper()
	var calls []sesCall
	if !testkit.Eventually(60*time.Second, 100*time.Millisecond, func() bool {
		calls = sesCallsFor(t, s, session)
		return len(calls) >= n
	}) {
		t.Fatalf("%d SendEmail requests for the session, want %d", len(calls), n)
	}
	return calls
}

// waitMailState waits for the order's verdict email to reach state.
func waitMailState(t *testing.T, s *stack.Stack, session string, want oracle.MailState) {
	t.Helper()
	var got string
	if !testkit.Eventually(30*time.Second, 100*time.Millisecond, func() bool {
		if v, ok := orderItem(t, s, session)["mail_verdict_state"].(*ddbtypes.AttributeValueMemberS); ok {
			got = v.Value
		}
		return got == string(want)
	}) {
		t.Fatalf("the verdict email's state is %q, want %q", got, want)
	}
}

// undeliveredOnThePage checks the verdict API serves the verdict and says
// its email could not be delivered, as the result page then shows.
func undeliveredOnThePage(t *testing.T, s *stack.Stack, session string) {
	t.Helper()
	var body []byte
	if !testkit.Eventually(30*time.Second, 100*time.Millisecond, func() bool {
		var status int
		status, body, _ = send(t, http.DefaultClient, mustRequest(t, "GET", s.APIURL+"/api/verdict?session_id="+session))
		return status == http.StatusOK && strings.Contains(string(body), `"status":"ready"`) && strings.Contains(string(body), `"email":"undelivered"`)
	}) {
		t.Fatalf("verdict API: %s, want the ready verdict with email undelivered", body)
	}
}

// mailboxNow is the local mailbox's messages to addr, without waiting.
func mailboxNow(t *testing.T, api, addr string) []string {
	t.Helper()
	_, body, _ := send(t, http.DefaultClient, mustRequest(t, "GET", api+"/_local/mail?format=json"))
	var all []struct {
		To      []string `json:"to"`
		Subject string   `json:"subject"`
	}
	if err := json.Unmarshal(body, &all); err != nil {
		t.Fatalf("local mailbox: %v", err)
	}
	var out []string
	for _, m := range all {
		for _, to := range m.To {
			if to == addr {
				out = append(out, m.Subject)
			}
		}
	}
	return out
}

// ledgerItem reads a Ledger item, failing when there is none.
func ledgerItem(t *testing.T, s *stack.Stack, key string) map[string]ddbtypes.AttributeValue {
	t.Helper()
	out, err := dynamodb.NewFromConfig(s.AWS).GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(s.Resources.Ref("LedgerTable")),
		Key:       map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: key}},
	})
	if err != nil || out.Item == nil {
		t.Fatalf("Ledger item %s: %v (found %v)", key, err, out != nil && out.Item != nil)
	}
	return out.Item
}
