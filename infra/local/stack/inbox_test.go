package stack_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"42sisters.ai/oracle/infra/local/stack"
	"42sisters.ai/oracle/infra/motoserver"
	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/oracle"
)

// receive posts a raw message to the stack's stand-in for SES receiving,
// as `curl -X POST localhost:3000/_local/inbox --data-binary @message.eml`.
func receive(t *testing.T, s *stack.Stack, raw string) {
	t.Helper()
	resp, err := http.Post(s.APIURL+"/_local/inbox", "message/rfc822", strings.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("/_local/inbox: %d %s", resp.StatusCode, body)
	}
	// SES invokes the function asynchronously, as the route does: wait
	// until the invocation, and any retry, settled.
	s.WaitAsync()
}

// eml is a message from sender with the headers given and a body that no
// log, Ledger item or audit record may hold.
func eml(sender, subject string, headers ...string) string {
	used.address(sender)
	h := append([]string{"From: A Customer <" + sender + ">", "To: oracle@42sisters.ai", "Subject: " + subject,
		"Date: " + time.Now().UTC().Format(time.RFC1123Z)}, headers...)
	return strings.Join(h, "\r\n") + "\r\n\r\nThank you! One more question: inbox-body-never-logged.\r\n\r\n> quoted verdict\r\n"
}

// autoresponses are the acknowledgements in the local mailbox to addr.
func autoresponses(t *testing.T, s *stack.Stack, addr string) []motoserver.Sent {
	t.Helper()
	var out []motoserver.Sent
	for _, m := range mailbox(t, s.APIURL, addr) {
		if strings.Contains(m.Text, "Your inquiry has been received by the 42Sisters.AI Oracle.") {
			out = append(out, m)
		}
	}
	return out
}

// The support inbox end to end: a customer replies to their verdict email
// and gets one acknowledgement, the operator one alert naming the order;
// the same message again changes nothing; the same sender within 24 hours
// is alerted but not answered; a bounce and an auto-reply are alerted and
// never answered; no address or body lands in a log, the Ledger or the
// audit log.
func TestInboxEndToEnd(t *testing.T) {
	t.Parallel()
	o := options(t)
	o.ScheduleOff = true
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s, err := stack.Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	q := sqs.NewFromConfig(s.AWS)
	addr := fmt.Sprintf("replying-%d@example.com", time.Now().UnixNano())
	const query = "Should I open a bakery that only sells sourdough?"
	session := pay(t, s, "quick", query, addr)
	waitReady(t, s.APIURL, session)
	verdict := mailbox(t, s.APIURL, addr)
	if len(verdict) != 1 {
		t.Fatalf("%d emails before the reply, want the verdict", len(verdict))
	}
	// The verdict email's Message-ID, as SES writes it, from the id the
	// mailer recorded; the customer's reply names it in In-Reply-To. The
	// mailer records it after the send, so the email can be in the mailbox
	// a moment before the id is in the order.
	var sesID string
	if !testkit.Eventually(10*time.Second, 20*time.Millisecond, func() bool {
		sesID = stringAttr(orderItem(t, s, session), "mail_verdict_message_id")
		return sesID != ""
	}) {
		t.Fatal("the order has no verdict message id")
	}
	reply := eml(addr, "Re: "+verdict[0].Subject, "Message-ID: <reply-1-"+session[8:20]+"@mail.example.com>",
		"In-Reply-To: <"+sesID+"@email.amazonses.com>", "References: <"+sesID+"@email.amazonses.com>")

	t.Run("a reply to the verdict email: one alert naming the order, one acknowledgement", func(t *testing.T) {
		receive(t, s, reply)
		drained(ctx, t, q, s)
		got := autoresponses(t, s, addr)
		if len(got) != 1 || got[0].Subject != "Re: "+verdict[0].Subject {
			t.Fatalf("autoresponses %+v", got)
		}
		testkit.Eventually(10*time.Second, 100*time.Millisecond, func() bool { return len(alertsOf(s, alert.InboxMessage)) > 0 })
		a := alertsOf(s, alert.InboxMessage)
		if len(a) != 1 || !strings.Contains(a[0], "| "+oracle.ShortID(session)+" |") || !strings.Contains(a[0], "acknowledged") {
			t.Fatalf("inbox alerts %q", a)
		}
	})

	t.Run("the same message delivered twice: nothing more", func(t *testing.T) {
		receive(t, s, reply)
		drained(ctx, t, q, s)
		if got := autoresponses(t, s, addr); len(got) != 1 {
			t.Fatalf("%d autoresponses, want still 1", len(got))
		}
		if a := alertsOf(s, alert.InboxMessage); len(a) != 1 {
			t.Fatalf("inbox alerts %q, want still 1", a)
		}
	})

	t.Run("the same sender again within 24 hours: an alert, no second acknowledgement", func(t *testing.T) {
		receive(t, s, eml(strings.ToUpper(addr[:1])+addr[1:], "Another question", "Message-ID: <reply-2-"+session[8:20]+"@mail.example.com>"))
		drained(ctx, t, q, s)
		if !testkit.Eventually(10*time.Second, 100*time.Millisecond, func() bool { return len(alertsOf(s, alert.InboxMessage)) == 2 }) {
			t.Fatalf("inbox alerts %q, want 2", alertsOf(s, alert.InboxMessage))
		}
		if a := alertsOf(s, alert.InboxMessage)[1]; !strings.Contains(a, "not acknowledged (cooldown)") {
			t.Fatalf("alert %q", a)
		}
		if got := autoresponses(t, s, addr); len(got) != 1 {
			t.Fatalf("%d autoresponses, want still 1", len(got))
		}
	})

	t.Run("a bounce and an auto-reply: alerts, no reply", func(t *testing.T) {
		daemon := fmt.Sprintf("mailer-daemon-%d@mx.example.com", time.Now().UnixNano())
		away := fmt.Sprintf("away-%d@example.com", time.Now().UnixNano())
		receive(t, s, eml(daemon, "Undelivered Mail Returned to Sender", "Message-ID: <bounce-"+session[8:20]+"@mx.example.com>",
			"Auto-Submitted: auto-replied", "Content-Type: multipart/report; report-type=delivery-status; boundary=b"))
		receive(t, s, eml(away, "Out of office", "Message-ID: <away-"+session[8:20]+"@example.com>", "Auto-Submitted: auto-replied"))
		drained(ctx, t, q, s)
		if !testkit.Eventually(10*time.Second, 100*time.Millisecond, func() bool { return len(alertsOf(s, alert.InboxMessage)) == 4 }) {
			t.Fatalf("inbox alerts %q, want 4", alertsOf(s, alert.InboxMessage))
		}
		for _, a := range alertsOf(s, alert.InboxMessage)[2:] {
			if !strings.Contains(a, "not acknowledged (automatic)") {
				t.Errorf("alert %q", a)
			}
		}
		for _, to := range []string{daemon, away} {
			if got := mailboxNow(t, s.APIURL, to); len(got) != 0 {
				t.Errorf("answered %s: %v", to, got)
			}
		}
	})

	privacySweep(t, s, o, []string{addr, "inbox-body-never-logged"}, []string{query})
}

// TestInboxThroughGraph is `MAIL_TRANSPORT=graph make run`: mail to the
// support address lands in the fake Microsoft 365 mailbox, the schedule's
// poll reads it; the first poll only records what was waiting (V1, G7).
func TestInboxThroughGraph(t *testing.T) {
	t.Parallel()
	o := options(t)
	o.MailTransport = "graph"
	o.ScheduleOff = true
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s, err := stack.Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	q := sqs.NewFromConfig(s.AWS)
	waiting := fmt.Sprintf("waiting-%d@example.com", time.Now().UnixNano())
	receive(t, s, eml(waiting, "Sent before the first poll", "Message-ID: <waiting@example.com>"))
	if _, err := s.Fire(ctx, "InboxFunction"); err != nil {
		t.Fatal(err)
	}
	// Alerts reach the stack's tap through SNS and SQS: wait for the notice.
	testkit.Eventually(10*time.Second, 100*time.Millisecond, func() bool { return len(alertsOf(s, alert.InboxSeeded)) > 0 })
	if n, seeded := len(alertsOf(s, alert.InboxMessage)), len(alertsOf(s, alert.InboxSeeded)); n != 0 || seeded != 1 {
		t.Fatalf("after the first poll: %d message alerts, %d seeding notices; want 0 and 1", n, seeded)
	}
	addr := fmt.Sprintf("graph-reader-%d@example.com", time.Now().UnixNano())
	receive(t, s, eml(addr, "A question", "Message-ID: <graph-question@example.com>"))
	for range 2 { // the second poll finds nothing new
		if _, err := s.Fire(ctx, "InboxFunction"); err != nil {
			t.Fatal(err)
		}
	}
	drained(ctx, t, q, s)
	testkit.Eventually(10*time.Second, 100*time.Millisecond, func() bool { return len(alertsOf(s, alert.InboxMessage)) > 0 })
	if a := alertsOf(s, alert.InboxMessage); len(a) != 1 || !strings.Contains(a[0], "acknowledged") {
		t.Fatalf("inbox alerts %q", a)
	}
	if got := autoresponses(t, s, addr); len(got) != 1 || got[0].Subject != "Re: A question" {
		t.Fatalf("autoresponses %+v", got)
	}
	if got := mailboxNow(t, s.APIURL, waiting); len(got) != 0 {
		t.Fatalf("the message waiting before the first poll was answered: %v", got)
	}
	privacySweep(t, s, o, []string{addr, waiting, "inbox-body-never-logged"}, nil)
}

// TestAFailingInboxReachesItsDestination is SES's asynchronous invocation
// as Lambda runs it: the route answers at once; the inbox function, unable
// to queue the acknowledgement, fails the invocation and Lambda's two
// retries; the invocation's record goes to the on-failure destination
// (DeadLetterQueue), which the deadletter function records and alerts
// once as INBOX_FAILED, naming the stored message; the message was never
// alerted as INBOX_MESSAGE, and nothing of it reaches a log.
func TestAFailingInboxReachesItsDestination(t *testing.T) {
	t.Parallel()
	o := options(t)
	o.ScheduleOff = true
	o.AsyncRetryDelays = []time.Duration{50 * time.Millisecond, 100 * time.Millisecond}
	o.Env = map[string]map[string]string{"InboxFunction": {"MAIL_QUEUE_URL": "http://localhost:1/000000000000/no-such-queue"}}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s, err := stack.Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	addr := fmt.Sprintf("failing-%d@example.com", time.Now().UnixNano())
	resp, err := http.Post(s.APIURL+"/_local/inbox", "message/rfc822", strings.NewReader(eml(addr, "Are you there?", "Message-ID: <failing@example.com>")))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Stored string `json:"stored"`
	}
	err = json.NewDecoder(resp.Body).Decode(&got)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusAccepted || got.Stored == "" {
		t.Fatalf("/_local/inbox: %d %+v %v", resp.StatusCode, got, err)
	}
	s.WaitAsync()
	if n := strings.Count(o.Log.(*testkit.Buffer).String(), "InboxFunction: asynchronous invocation failed (attempt "); n != 3 {
		t.Fatalf("%d attempts, want the invocation and two retries", n)
	}
	if !testkit.Eventually(30*time.Second, 100*time.Millisecond, func() bool { return len(alertsOf(s, alert.InboxFailed)) > 0 }) {
		t.Fatal("no INBOX_FAILED alert")
	}
	if a := alertsOf(s, alert.InboxFailed); len(a) != 1 || !strings.Contains(a[0], "stored as "+got.Stored+" (RetriesExhausted after 3 attempts") ||
		!strings.Contains(a[0], "make inbox-replay") {
		t.Fatalf("alerts %q, want one naming %s", a, got.Stored)
	}
	if a := alertsOf(s, alert.InboxMessage); len(a) != 0 {
		t.Fatalf("the failed message was alerted as processed: %q", a)
	}
	privacySweep(t, s, o, []string{addr, "inbox-body-never-logged"}, nil)
}
