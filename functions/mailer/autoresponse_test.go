package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/mail"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/queue"
	"42sisters.ai/oracle/shared/store"
)

const canonical = "Your inquiry has been received by the 42Sisters.AI Oracle. Expect a response within 24 hours. " +
	"Thank you for reaching out. — 42 Sisters AI · oracle@42sisters.ai"

// received stores a message from sender with subject in the inbox bucket,
// as SES's receipt rule would, and returns its key.
func (e *env) received(sender, subject string) string {
	e.t.Helper()
	key := fmt.Sprintf("inbound/test-%d", time.Now().UnixNano())
	raw := "From: Customer <" + sender + ">\r\nTo: oracle@42sisters.ai\r\nSubject: " + subject +
		"\r\nMessage-ID: <" + strings.TrimPrefix(key, "inbound/") + "@mail.example.com>\r\n\r\nHello, a question about my verdict.\r\n"
	if err := e.h.Inbox.(interface {
		Put(context.Context, string, []byte) error
	}).Put(context.Background(), key, []byte(raw)); err != nil {
		e.t.Fatal(err)
	}
	return key
}

func autoresponseJob(key string, attempt int) events.SQSMessage {
	b, _ := json.Marshal(queue.Job{Kind: oracle.MailAutoresponse, Inbox: key, Attempt: attempt})
	return events.SQSMessage{MessageId: fmt.Sprintf("%s-%d", key, attempt), Body: string(b)}
}

// replyRecords are the audit records of the autoresponses.
func (e *env) replyRecords() []audit.Record {
	e.t.Helper()
	var out []audit.Record
	for _, r := range testkit.AuditRecords(e.t, e.s3, e.f.Ref("AuditBucket")) {
		if r.Source == audit.SourceInbox {
			out = append(out, r)
		}
	}
	return out
}

// V3 and V9, as the mailer sends them: one acknowledgement with the
// canonical text under "Re: " once, however often the job comes.
func TestAutoresponseSentOnceWithTheCanonicalText(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct{ subject, want string }{
		{"Question about my order", "Re: Question about my order"},
		{"Re: Hello", "Re: Hello"},
	} {
		addr := uniqueAddress(t)
		key := e.received(addr, tc.subject)
		job := autoresponseJob(key, 0)
		if n := e.run(job, job); n != 0 {
			t.Fatalf("%d records failed", n)
		}
		if n := e.run(job); n != 0 {
			t.Fatalf("%d records failed", n)
		}
		got := e.inbox(addr)
		if len(got) != 1 {
			t.Fatalf("%d autoresponses to %q, want 1", len(got), tc.subject)
		}
		if got[0].Subject != tc.want || strings.TrimSpace(got[0].Text) != canonical || got[0].ReplyTo != "oracle@42sisters.ai" {
			t.Errorf("autoresponse %q / %q / reply-to %q", got[0].Subject, got[0].Text, got[0].ReplyTo)
		}
	}
	// G3: each autoresponse is in the audit log, by keyed hash only.
	var sent int
	for _, r := range e.replyRecords() {
		if r.Event == audit.EventAutoresponse && r.Status == audit.StatusEmailSent {
			sent++
			if r.Inbox == nil || r.Inbox.MessageKey == "" || r.Inbox.Domain != "example.com" || !strings.HasPrefix(r.Email, audit.HashPrefix) {
				t.Errorf("record %+v", r)
			}
		}
	}
	if sent != 2 {
		t.Fatalf("%d autoresponse records, want 2", sent)
	}
}

// G5: a failed autoresponse alerts and is retried on the email schedule;
// after the last attempt it is given up, and the operator told to answer
// by hand.
func TestAutoresponseRetriedOnTheScheduleThenGivenUp(t *testing.T) {
	e := newEnv(t)
	busy := &mail.Error{Class: mail.Transient, Transport: "SES", Status: 503, Code: "ServiceUnavailable"}
	e.h.Transport = failing(busy, busy, busy, busy)
	addr := uniqueAddress(t)
	key := e.received(addr, "Hello")
	for attempt := range e.h.Schedule {
		if n := e.run(autoresponseJob(key, attempt)); n != 0 {
			t.Fatalf("attempt %d: the job failed", attempt)
		}
		jobs := e.mailJobs()
		if attempt < len(e.h.Schedule)-1 {
			next := jobs[len(jobs)-1]
			if len(jobs) != attempt+1 || next.Kind != oracle.MailAutoresponse || next.Inbox != key || next.Attempt != attempt+1 ||
				next.NotBefore == nil || time.Until(*next.NotBefore) < e.h.Schedule[attempt+1]-time.Minute {
				t.Fatalf("after attempt %d: jobs %+v", attempt, jobs)
			}
		} else if len(jobs) != attempt {
			t.Fatalf("the last attempt queued another: %+v", jobs)
		}
	}
	alerts := e.alerts()
	var warned, gaveUp int
	for _, a := range alerts {
		switch {
		case strings.Contains(a, "| AUTORESPONSE_FAILED |") && strings.Contains(a, "WARN"):
			warned++
		case strings.Contains(a, "| AUTORESPONSE_FAILED |") && strings.Contains(a, "ERROR") && strings.Contains(a, "answer it by hand"):
			gaveUp++
		}
		if strings.Contains(a, addr) {
			t.Errorf("an alert shows the address: %s", a)
		}
	}
	if warned != len(e.h.Schedule)-1 || gaveUp != 1 {
		t.Fatalf("%d retry alerts and %d given up, want %d and 1: %q", warned, gaveUp, len(e.h.Schedule)-1, alerts)
	}
	// A late duplicate of any attempt sends nothing.
	if n := e.run(autoresponseJob(key, 1)); n != 0 {
		t.Fatal("the duplicate failed")
	}
	if n := e.h.Transport.(*transport).sends(); n != len(e.h.Schedule) {
		t.Fatalf("%d sends, want %d", n, len(e.h.Schedule))
	}
}

func TestAutoresponseToAGoneMessageIsAcknowledged(t *testing.T) {
	e := newEnv(t)
	e.h.Transport = failing()
	if n := e.run(autoresponseJob("inbound/expired-long-ago", 0)); n != 0 {
		t.Fatal("the job failed: SQS would retry it until the dead-letter queue")
	}
	if n := e.h.Transport.(*transport).sends(); n != 0 {
		t.Fatalf("%d sends", n)
	}
}

// The echoed subject is the one part of the acknowledgement the customer
// wrote; when it trips gate 2 the acknowledgement goes under a neutral one.
func TestAutoresponseSubjectThatTripsTheFilterIsReplaced(t *testing.T) {
	e := newEnv(t)
	addr := uniqueAddress(t)
	if n := e.run(autoresponseJob(e.received(addr, "Bet on Manifold Markets"), 0)); n != 0 {
		t.Fatal("the job failed")
	}
	got := e.inbox(addr)
	if len(got) != 1 || got[0].Subject != "Re: your message" {
		t.Fatalf("autoresponses %+v", got)
	}
}

// A complained address gets no autoresponse either.
func TestAutoresponseNotSentToASuppressedAddress(t *testing.T) {
	e := newEnv(t)
	addr := uniqueAddress(t)
	if _, err := e.ledger.Suppress(context.Background(), e.h.Hasher.Email(addr), "complaint"); err != nil {
		t.Fatal(err)
	}
	if n := e.run(autoresponseJob(e.received(addr, "Hi"), 0)); n != 0 {
		t.Fatal("the job failed")
	}
	if got := e.inbox(addr); len(got) != 0 {
		t.Fatalf("%d autoresponses to a suppressed address", len(got))
	}
}

// Each email sent is remembered by its message id, so that a reply naming
// it in In-Reply-To finds its order: a verdict email's by its send's
// record on the order, in no Ledger item.
func TestSentEmailIsRememberedForReplies(t *testing.T) {
	e := newEnv(t)
	addr := uniqueAddress(t)
	id := e.paidSession(oracle.TierQuick, addr)
	e.ready(id, oracle.TierQuick, oracle.VerdictGreen)
	if n := e.run(record(id, oracle.MailVerdict)); n != 0 {
		t.Fatal("the job failed")
	}
	got := e.inbox(addr)
	if len(got) != 1 {
		t.Fatalf("%d emails", len(got))
	}
	if _, inLedger, err := e.ledger.SentMessage(context.Background(), got[0].ID); err != nil || inLedger {
		t.Fatalf("the verdict email's message in the Ledger: %t %v", inLedger, err)
	}
	session, ok, err := store.NewSentMessages(awsenv.NewQueries(e.f.AWS), e.f.Ref("OrdersTable"), e.ledger).SentMessage(context.Background(), got[0].ID)
	if err != nil || !ok || session != id {
		t.Fatalf("SentMessage(%s) = %q %v %v, want %s", got[0].ID, session, ok, err, id)
	}
}
