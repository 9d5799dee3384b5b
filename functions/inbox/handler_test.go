package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/inbox"
	"42sisters.ai/oracle/shared/obs"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/queue"
	"42sisters.ai/oracle/shared/sosfilter"
	"42sisters.ai/oracle/shared/store"
)

type env struct {
	t        *testing.T
	f        *provision.Fixture
	h        *Handler
	ledger   *store.Ledger
	orders   *store.Orders
	messages *inbox.Messages
	s3       *s3.Client
	sqs      *sqs.Client
	clock    *testkit.Clock
	alerts   func() []string
	logs     *testkit.Buffer
	n        int
	raised   []string // every alert read from the tap so far
}

func newEnv(t *testing.T) *env {
	t.Helper()
	f := provision.ForTest(t, nil)
	db := awsenv.NewTables(f.AWS)
	hasher, err := audit.NewHasher("inbox-test-pepper-0123456789")
	if err != nil {
		t.Fatal(err)
	}
	filter, err := sosfilter.New()
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, f: f, s3: awsenv.S3(f.AWS), sqs: sqs.NewFromConfig(f.AWS), logs: &testkit.Buffer{},
		clock: testkit.NewClock(time.Now().UTC().Truncate(time.Second))}
	e.ledger = store.NewLedger(db, f.Ref("LedgerTable"), e.clock.Now)
	e.orders = store.NewOrders(db, f.Ref("OrdersTable"), e.clock.Now)
	e.messages = inbox.NewMessages(e.s3, f.Ref("InboxBucket"))
	e.alerts = testkit.AlertTap(t, f.AWS, f.Ref("AlertsTopic"), provision.TestRegion, provision.Account)
	log := obs.NewLogger(e.logs, "DEBUG")
	alerts := &alert.Alerter{SNS: awsenv.NewTopics(f.AWS), Topic: f.Ref("AlertsTopic"), Timeout: testAlertTimeout, Dedupe: e.ledger, Log: log}
	core := &Core{Ledger: e.ledger, Orders: e.orders, Sent: store.NewSentMessages(awsenv.NewQueries(f.AWS), f.Ref("OrdersTable"), e.ledger), Mail: queue.NewSender(queue.NewClient(f.AWS), f.Ref("MailQueue"), e.clock.Now),
		Alerts: alerts, Audit: &audit.Recorder{Writer: audit.NewWriter(e.s3, f.Ref("AuditBucket")), Alerts: alerts, Log: log},
		Filter: filter, Hasher: hasher,
		Policy:   inbox.Policy{Own: []string{oracle.SupportAddress}, Skip: inbox.DefaultSkip},
		Cooldown: 24 * time.Hour, Retention: 45 * 24 * time.Hour, Lease: DefaultLease, Log: log, Now: e.clock.Now}
	e.h = &Handler{Core: core, Messages: e.messages, Alerts: alerts, Log: log,
		Failures: store.NewDeadLetters(awsenv.NewQueries(f.AWS), f.Ref("LedgerTable")), Releaser: e.ledger,
		FailureQueue: f.Attr("DeadLetterQueue.Arn")[strings.LastIndex(f.Attr("DeadLetterQueue.Arn"), ":")+1:]}
	return e
}

// message is a received email from sender: headers as given, then a body.
func message(sender, subject string, headers ...string) []byte {
	h := []string{"From: Someone <" + sender + ">", "To: oracle@42sisters.ai", "Subject: " + subject,
		"Date: Tue, 24 Nov 2026 12:00:00 +0000"}
	h = append(h, headers...)
	return []byte(strings.Join(h, "\r\n") + "\r\n\r\nThe body, which no log or record may hold: secret-body-text.\r\n")
}

// receive stores raw as SES's receipt rule would and returns the event SES
// then invokes the function with, with its spam and virus verdicts.
func (e *env) receive(raw []byte, spam, virus string) json.RawMessage {
	e.t.Helper()
	e.n++
	id := fmt.Sprintf("%s%d", strings.ReplaceAll(strings.ToLower(e.t.Name()), "_", ""), e.n)
	id = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, id)
	if err := e.messages.Put(context.Background(), inbox.Prefix+id, raw); err != nil {
		e.t.Fatal(err)
	}
	return sesEvent(e.t, id, spam, virus)
}

// sesEvent is events/inbox/received.json naming the message id, with the
// verdicts given.
func sesEvent(t *testing.T, id, spam, virus string) json.RawMessage {
	t.Helper()
	b, err := os.ReadFile("../../events/inbox/received.json")
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(b), "o3vrnil0e2ic28trm7dfhrc2v0clambda4nbp0g1", id, 1)
	s = strings.Replace(s, `"spamVerdict": {"status": "PASS"}`, `"spamVerdict": {"status": "`+spam+`"}`, 1)
	s = strings.Replace(s, `"virusVerdict": {"status": "PASS"}`, `"virusVerdict": {"status": "`+virus+`"}`, 1)
	return json.RawMessage(s)
}

func (e *env) handle(ev json.RawMessage) error {
	a, err := e.h.Handle(context.Background(), ev)
	if a != nil {
		e.t.Fatalf("an answer %+v to an event that is no replay", a)
	}
	return err
}

// replay invokes the function as `make inbox-replay` does and returns its
// answer as the command reads it.
func (e *env) replay(ev json.RawMessage) ([]byte, replayAnswer) {
	e.t.Helper()
	a, err := e.h.Handle(context.Background(), ev)
	if err != nil || a == nil {
		e.t.Fatalf("replay: %+v %v", a, err)
	}
	b, err := json.Marshal(a)
	if err != nil {
		e.t.Fatal(err)
	}
	return b, *a
}

// jobs are the autoresponse jobs queued since the last call.
func (e *env) jobs() []queue.Job {
	e.t.Helper()
	var out []queue.Job
	for _, b := range testkit.Drain(e.t, e.sqs, e.f.Ref("MailQueue")) {
		j, err := queue.Parse(b)
		if err != nil {
			e.t.Fatalf("job %s: %v", b, err)
		}
		out = append(out, j)
	}
	return out
}

// inboxAlerts are the INBOX_MESSAGE alerts raised so far.
func (e *env) inboxAlerts() []string {
	e.raised = append(e.raised, e.alerts()...)
	var out []string
	for _, a := range e.raised {
		if strings.Contains(a, "| "+string(alert.InboxMessage)+" |") {
			out = append(out, a)
		}
	}
	return out
}

// received are the audit records of received messages.
func (e *env) received() []audit.Record {
	var out []audit.Record
	for _, r := range testkit.AuditRecords(e.t, e.s3, e.f.Ref("AuditBucket")) {
		if r.Event == audit.EventInboxMessage {
			out = append(out, r)
		}
	}
	return out
}

// V2, V3 and V10: a new message alerts once, with the sender's keyed hash
// and domain, the subject and the stored message the operator reads with
// `make ops ACTION=inbox SHOW=…`, is acknowledged once, and is recorded
// as processed.
func TestNewMessageAlertedAndAcknowledgedOnce(t *testing.T) {
	e := newEnv(t)
	const addr = "user@example.com"
	ev := e.receive(message(addr, "Question about my verdict", "Message-ID: <v2@example.com>"), "PASS", "PASS")
	if err := e.handle(ev); err != nil {
		t.Fatal(err)
	}
	jobs := e.jobs()
	if len(jobs) != 1 || jobs[0].Kind != oracle.MailAutoresponse || !strings.HasPrefix(jobs[0].Inbox, inbox.Prefix) {
		t.Fatalf("jobs %+v, want one autoresponse", jobs)
	}
	a := e.inboxAlerts()
	hash := strings.TrimPrefix(e.h.Core.Hasher.Email(addr), audit.HashPrefix)[:12]
	if len(a) != 1 || !strings.Contains(a[0], "WARN") || !strings.Contains(a[0], hash+" at example.com") ||
		!strings.Contains(a[0], `"Question about my verdict"`) || !strings.Contains(a[0], "no order; acknowledged") {
		t.Fatalf("alerts %q", a)
	}
	// The alert names the stored message and how to read it.
	if !strings.Contains(a[0], "stored as "+jobs[0].Inbox+", read it with make ops ACTION=inbox SHOW="+inbox.ID(jobs[0].Inbox)) {
		t.Fatalf("the alert does not name the stored message %s: %q", jobs[0].Inbox, a[0])
	}
	recs := e.received()
	if len(recs) != 1 || recs[0].Inbox.Outcome != "acknowledged" || recs[0].Inbox.Via != "ses" || recs[0].Email != e.h.Core.Hasher.Email(addr) {
		t.Fatalf("records %+v", recs)
	}
	if seen, err := e.ledger.MessageSeen(context.Background(), recs[0].Inbox.MessageKey); err != nil || !seen {
		t.Fatalf("the message is not recorded as processed: %v %v", seen, err)
	}
	e.noPrivateData(addr)
}

// V4, V5, V6, G8 and the automatic mail of RFC 3834: each alerts, none is
// answered.
func TestSkippedSendersAreAlertedNotAnswered(t *testing.T) {
	e := newEnv(t)
	cases := []struct {
		name, sender  string
		headers       []string
		spam, virus   string
		outcome, kind string
	}{
		{"V4 the skip set", "noreply@stripe.com", nil, "PASS", "PASS", "skip_list", ""},
		{"V4 the skip set in capitals", "Receipts@Stripe.com", nil, "PASS", "PASS", "skip_list", ""},
		{"V5 a no-reply prefix", "no-reply@anything.com", nil, "PASS", "PASS", "no_reply", ""},
		{"G8 a no-reply prefix in capitals", "NO-REPLY@anything.com", nil, "PASS", "PASS", "no_reply", ""},
		{"a noreply prefix", "noreply@shop.example", nil, "PASS", "PASS", "no_reply", ""},
		{"V6 our own address", "oracle@42sisters.ai", nil, "PASS", "PASS", "own_address", ""},
		{"an auto-reply", "person@example.com", []string{"Auto-Submitted: auto-replied"}, "PASS", "PASS", "automatic", "auto-replied"},
		{"list mail", "person@example.com", []string{"List-Id: <news.example.com>"}, "PASS", "PASS", "automatic", ""},
		{"bulk mail", "person@example.com", []string{"Precedence: bulk"}, "PASS", "PASS", "automatic", ""},
		{"a bounce", "MAILER-DAEMON@mx.example.com", []string{"Content-Type: multipart/report; report-type=delivery-status; boundary=b"}, "PASS", "PASS", "automatic", ""},
		{"spam", "person@example.com", nil, "FAIL", "PASS", "spam_or_virus", ""},
		{"a virus", "person@example.com", nil, "PASS", "FAIL", "spam_or_virus", ""},
	}
	for i, c := range cases {
		raw := message(c.sender, "Hello "+fmt.Sprint(i), append([]string{fmt.Sprintf("Message-ID: <skip-%d@example.com>", i)}, c.headers...)...)
		if err := e.handle(e.receive(raw, c.spam, c.virus)); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if jobs := e.jobs(); len(jobs) != 0 {
			t.Errorf("%s: answered: %+v", c.name, jobs)
		}
		a := e.inboxAlerts()
		if len(a) != i+1 || !strings.Contains(a[i], "not acknowledged ("+c.outcome+")") {
			t.Errorf("%s: alerts %q", c.name, a[len(a)-1:])
		}
		if c.kind != "" && !strings.Contains(a[i], c.kind+"]") {
			t.Errorf("%s: the alert does not say the mail is automatic: %s", c.name, a[i])
		}
	}
}

// G2 and FM-8: the same message delivered again, or ten times at once (a
// redelivered event, overlapping runs), is processed once.
func TestTheSameMessageIsProcessedOnce(t *testing.T) {
	e := newEnv(t)
	raw := message("again@example.com", "Twice", "Message-ID: <twice@example.com>")
	ev := e.receive(raw, "PASS", "PASS")
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			if err := e.handle(ev); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	// The same message stored again under another SES id (delivered twice).
	if err := e.handle(e.receive(raw, "PASS", "PASS")); err != nil {
		t.Fatal(err)
	}
	if jobs := e.jobs(); len(jobs) != 1 {
		t.Fatalf("%d autoresponse jobs, want 1", len(jobs))
	}
	if a := e.inboxAlerts(); len(a) != 1 {
		t.Fatalf("%d alerts, want 1: %q", len(a), a)
	}
	if recs := e.received(); len(recs) != 1 {
		t.Fatalf("%d records, want 1", len(recs))
	}
}

// G1: a second message from the same sender within 24 hours is alerted
// and not answered; after the cooldown it is answered again.
func TestOneAcknowledgementPerSenderPerDay(t *testing.T) {
	e := newEnv(t)
	for i, step := range []struct {
		after   time.Duration
		sender  string
		answers int
		outcome string
	}{
		{0, "talkative@example.com", 1, "; acknowledged"},
		{time.Hour, "Talkative@Example.com", 0, "(cooldown)"},
		{0, "other@example.com", 1, "; acknowledged"},
		{23 * time.Hour, "talkative@example.com", 1, "; acknowledged"},
	} {
		e.clock.Add(step.after)
		raw := message(step.sender, "Message "+fmt.Sprint(i), fmt.Sprintf("Message-ID: <cool-%d@example.com>", i))
		if err := e.handle(e.receive(raw, "PASS", "PASS")); err != nil {
			t.Fatal(err)
		}
		if jobs := e.jobs(); len(jobs) != step.answers {
			t.Fatalf("step %d: %d answers, want %d", i, len(jobs), step.answers)
		}
		if a := e.inboxAlerts(); len(a) != i+1 || !strings.Contains(a[i], step.outcome) {
			t.Fatalf("step %d: alerts %q", i, a)
		}
	}
}

// The alert names the order: a session id the message names, or the email
// it replies to (the id SES gave the mailer's send).
func TestMessageFindsItsOrder(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	const named, replied = "cs_test_inboxNamedOrder0001", "cs_test_inboxRepliedOrder002"
	for _, id := range []string{named, replied} {
		if _, err := e.orders.ClaimOrder(ctx, oracle.Order{SessionID: id, Status: oracle.StatusPaid, Tier: oracle.TierQuick, Query: "q",
			AmountTotal: 100, Currency: "cad", Source: oracle.SourceWebhook, SessionCreated: e.clock.Now()}, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.ledger.RecordSentMessage(ctx, "0100019abcdef-sent", replied, time.Hour); err != nil {
		t.Fatal(err)
	}
	for i, c := range []struct {
		name    string
		headers []string
		subject string
		want    string
	}{
		{"names its session", nil, "About " + named, "order " + oracle.ShortID(named)},
		{"replies to our email", []string{"In-Reply-To: <0100019abcdef-sent@email.amazonses.com>"}, "Re: Your verdict", "order " + oracle.ShortID(replied)},
		{"references our email", []string{"References: <x@example.com> <0100019abcdef-sent@us-west-2.amazonses.com>"}, "Re: Re: Your verdict", "order " + oracle.ShortID(replied)},
		{"names a session that is no order", nil, "About cs_test_NoSuchOrderAnywhere99", "no order"},
		{"replies to something else", []string{"In-Reply-To: <other@example.com>"}, "Re: hi", "no order"},
	} {
		raw := message(fmt.Sprintf("buyer%d@example.com", i), c.subject, append([]string{fmt.Sprintf("Message-ID: <order-%d@example.com>", i)}, c.headers...)...)
		if err := e.handle(e.receive(raw, "PASS", "PASS")); err != nil {
			t.Fatal(err)
		}
		a := e.inboxAlerts()
		if len(a) != i+1 || !strings.Contains(a[i], c.want+";") {
			t.Errorf("%s: alert %q, want %q", c.name, a[len(a)-1], c.want)
		}
	}
}

// The subject an alert shows is shortened, and withheld when the content
// filter stops it or it holds an address.
func TestAlertShowsTheSubjectSafely(t *testing.T) {
	e := newEnv(t)
	for i, c := range []struct{ subject, want string }{
		{"Bet on Manifold Markets", `"[withheld: the content filter stopped it]"`},
		{"Write to me at private@example.org", `"[withheld: the content filter stopped it]"`},
		{strings.Repeat("long ", 40), `"` + strings.Repeat("long ", 15) + "long…" + `"`},
	} {
		raw := message(fmt.Sprintf("subject%d@example.com", i), c.subject, fmt.Sprintf("Message-ID: <subject-%d@example.com>", i))
		if err := e.handle(e.receive(raw, "PASS", "PASS")); err != nil {
			t.Fatal(err)
		}
		a := e.inboxAlerts()
		if !strings.Contains(a[len(a)-1], c.want) {
			t.Errorf("alert %q, want the subject as %s", a[len(a)-1], c.want)
		}
	}
}

// V8 and INV-1: a failure leaves the message unprocessed, nothing half
// done; SES's retry of the invocation processes it.
func TestAFailedProcessingIsRetriedWhole(t *testing.T) {
	e := newEnv(t)
	working := e.h.Core.Mail
	e.h.Core.Mail = queue.NewSender(queue.NewClient(e.f.AWS), e.f.Ref("MailQueue")+"-missing", e.clock.Now)
	ev := e.receive(message("retry@example.com", "Hello", "Message-ID: <retry@example.com>"), "PASS", "PASS")
	if err := e.handle(ev); err == nil {
		t.Fatal("a failed processing returned no error: SES would not retry it")
	}
	if a := e.inboxAlerts(); len(a) != 0 {
		t.Fatalf("alerts before the message was processed: %q", a)
	}
	e.h.Core.Mail = working
	if err := e.handle(ev); err != nil {
		t.Fatal(err)
	}
	if jobs := e.jobs(); len(jobs) != 1 {
		t.Fatalf("%d jobs after the retry, want 1 (the cooldown was not released?)", len(jobs))
	}
	if a := e.inboxAlerts(); len(a) != 1 {
		t.Fatalf("alerts %q", a)
	}
}

// What cannot be read is alerted and never retried in vain; a stored
// message that cannot be fetched is retried.
func TestUnreadableInvocations(t *testing.T) {
	e := newEnv(t)
	if err := e.handle(json.RawMessage(`{"nothing":"here"}`)); err != nil {
		t.Fatalf("garbage: %v", err)
	}
	if err := e.handle(sesEvent(t, "../../records", "PASS", "PASS")); err != nil {
		t.Fatalf("a path for an id: %v", err)
	}
	if err := e.handle(sesEvent(t, "neverstored", "PASS", "PASS")); err == nil {
		t.Fatal("a missing message was not retried")
	}
	if err := e.handle(e.receive([]byte("\x00\x01 not a message"), "PASS", "PASS")); err != nil {
		t.Fatalf("not a message: %v", err)
	}
	var kinds []string
	for _, a := range e.alerts() {
		kinds = append(kinds, strings.Split(a, " | ")[2])
	}
	want := []string{"GARBAGE_JOB", "GARBAGE_JOB", "INBOX_UNREADABLE", "INBOX_MESSAGE"}
	if strings.Join(kinds, ",") != strings.Join(want, ",") {
		t.Fatalf("alerts %v, want %v", kinds, want)
	}
	if jobs := e.jobs(); len(jobs) != 0 {
		t.Fatalf("jobs %+v", jobs)
	}
}

// noPrivateData checks that the address and the body are in no log line,
// Ledger item or audit record.
func (e *env) noPrivateData(addr string) {
	e.t.Helper()
	logs := e.logs.String()
	if strings.Contains(strings.ToLower(logs), addr) || strings.Contains(logs, "secret-body-text") {
		e.t.Errorf("the logs hold the address or the body:\n%s", logs)
	}
	for _, r := range testkit.AuditRecords(e.t, e.s3, e.f.Ref("AuditBucket")) {
		b, _ := json.Marshal(r)
		if strings.Contains(string(b), "secret-body-text") {
			e.t.Errorf("an audit record holds the body: %s", b)
		}
	}
	for _, item := range testkit.TableItems(e.t, e.f.AWS, e.f.Ref("LedgerTable")) {
		if strings.Contains(item, addr) || strings.Contains(item, "secret-body-text") || strings.Contains(item, "Question") {
			e.t.Errorf("a Ledger item holds the address, the subject or the body: %s", item)
		}
	}
}

// The sample event (events/inbox/received.json, which `make
// inbox-replay` sends with another id) is SES's receipt event as the
// handler reads it: the message it names, once stored, is processed.
func TestSampleEvent(t *testing.T) {
	e := newEnv(t)
	b, err := os.ReadFile("../../events/inbox/received.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.messages.Put(context.Background(), inbox.Prefix+"o3vrnil0e2ic28trm7dfhrc2v0clambda4nbp0g1",
		message("customer@example.com", "Re: Your 42 Sisters AI Verdict", "Message-ID: <CAF-sample-reply@mail.example.com>")); err != nil {
		t.Fatal(err)
	}
	if err := e.handle(b); err != nil {
		t.Fatal(err)
	}
	if jobs := e.jobs(); len(jobs) != 1 || jobs[0].Inbox != inbox.Prefix+"o3vrnil0e2ic28trm7dfhrc2v0clambda4nbp0g1" {
		t.Fatalf("jobs %+v", jobs)
	}
}

// A message whose processing failed past Lambda's retries (its record
// kept by the deadletter function from the on-failure destination) is
// processed by `make inbox-replay` (events/inbox/replay.json) once the
// cause is fixed: one alert, one acknowledgement, the record removed, and
// a second replay finds nothing. A message named by its id is replayed
// whether or not a record names it.
func TestAFailedInvocationIsReplayed(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	working := e.h.Core.Mail
	e.h.Core.Mail = queue.NewSender(queue.NewClient(e.f.AWS), e.f.Ref("MailQueue")+"-missing", e.clock.Now)
	ev := e.receive(message("failed@example.com", "Lost?", "Message-ID: <failed@example.com>"), "PASS", "PASS")
	for range 3 { // the invocation and Lambda's two retries
		if err := e.handle(ev); err == nil {
			t.Fatal("a failed processing returned no error")
		}
	}
	var rec struct {
		Records []struct {
			SES struct {
				Mail struct {
					MessageID string `json:"messageId"`
				} `json:"mail"`
			} `json:"ses"`
		}
	}
	if err := json.Unmarshal(ev, &rec); err != nil {
		t.Fatal(err)
	}
	object := inbox.Prefix + rec.Records[0].SES.Mail.MessageID
	if _, err := e.ledger.RecordDeadLetter(ctx, store.DeadLetter{Queue: e.h.FailureQueue, MessageID: "m-1", BodySHA256: "00", BodyBytes: 1, Inbox: object}, time.Hour); err != nil {
		t.Fatal(err)
	}
	sample, err := os.ReadFile("../../events/inbox/replay.json")
	if err != nil {
		t.Fatal(err)
	}
	// Replayed before the cause is fixed: it fails again, says so, and
	// the record stays.
	if _, a := e.replay(sample); a.OK || a.Message != "1 message(s) replayed: 0 processed, 0 gone, 1 failed; 0 of 1 record(s) removed; "+
		"fix the cause (the inbox function's log) and run make inbox-replay again" || !strings.HasPrefix(a.Text, "failed     "+object+": ") {
		t.Fatalf("a replay that failed answered %+v", a)
	}
	e.h.Core.Mail = working
	answer, a := e.replay(sample)
	if !a.OK || !a.Changed || a.Message != "1 message(s) replayed: 1 processed, 0 gone, 0 failed; 1 of 1 record(s) removed" || a.Text != "processed  "+object {
		t.Fatalf("the replay answered %+v", a)
	}
	// `make inbox-replay` prints it as `make ops` prints its answer.
	cmd := exec.Command("python3", "../../infra/opsverb/ops.py", "answer", "inbox")
	cmd.Stdin = bytes.NewReader(append([]byte("a log line before the answer\n"), answer...))
	if out, err := cmd.CombinedOutput(); err != nil || string(out) != a.Message+"\n"+a.Text+"\n" {
		t.Fatalf("make inbox-replay prints %q (%v)", out, err)
	}
	if jobs := e.jobs(); len(jobs) != 1 || jobs[0].Inbox != object {
		t.Fatalf("jobs %+v, want the acknowledgement of %s", jobs, object)
	}
	if a := e.inboxAlerts(); len(a) != 1 || !strings.Contains(a[0], "stored as "+object) {
		t.Fatalf("alerts %q", a)
	}
	if left, err := e.h.Failures.DeadJobs(ctx, e.h.FailureQueue); err != nil || len(left) != 0 {
		t.Fatalf("records left %+v %v, want none", left, err)
	}
	if _, a := e.replay(sample); !a.OK || a.Changed || a.Message != "no failed invocation is recorded: nothing to replay" {
		t.Fatalf("a second replay answered %+v", a)
	}
	if jobs := e.jobs(); len(jobs) != 0 {
		t.Fatalf("a second replay queued %+v", jobs)
	}
	named := e.receive(message("named@example.com", "Named", "Message-ID: <named@example.com>"), "PASS", "PASS")
	if err := json.Unmarshal(named, &rec); err != nil {
		t.Fatal(err)
	}
	if _, a := e.replay(json.RawMessage(`{"replay":{"ids":["` + rec.Records[0].SES.Mail.MessageID + `"]}}`)); !a.OK ||
		a.Message != "1 message(s) replayed: 1 processed, 0 gone, 0 failed; 0 of 0 record(s) removed" {
		t.Fatalf("replay by id answered %+v", a)
	}
	if jobs := e.jobs(); len(jobs) != 1 {
		t.Fatalf("replay by id: jobs %+v", jobs)
	}
	if a, err := e.h.Handle(ctx, json.RawMessage(`{"replay":{"ids":["../x"]}}`)); err == nil {
		t.Fatalf("a path was replayed: %+v", a)
	}
}

// INV-8 with SES receiving: the stored message is the inbox, and the
// function only reads it. Processed, failed and replayed, it is still
// there, byte for byte, never rewritten (its ETag and time unchanged).
func TestTheStoredMessageIsOnlyRead(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	raw := message("kept@example.com", "Kept", "Message-ID: <kept@example.com>")
	ev := e.receive(raw, "PASS", "PASS")
	var rec struct {
		Records []struct {
			SES struct {
				Mail struct {
					MessageID string `json:"messageId"`
				} `json:"mail"`
			} `json:"ses"`
		}
	}
	if err := json.Unmarshal(ev, &rec); err != nil {
		t.Fatal(err)
	}
	object := inbox.Prefix + rec.Records[0].SES.Mail.MessageID
	head := func() string {
		out, err := e.s3.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(e.f.Ref("InboxBucket")), Key: aws.String(object)})
		if err != nil {
			t.Fatalf("the stored message: %v", err)
		}
		return aws.ToString(out.ETag) + " " + aws.ToTime(out.LastModified).String()
	}
	before := head()
	working := e.h.Core.Mail
	e.h.Core.Mail = queue.NewSender(queue.NewClient(e.f.AWS), e.f.Ref("MailQueue")+"-missing", e.clock.Now)
	if err := e.handle(ev); err == nil {
		t.Fatal("a failed processing returned no error")
	}
	e.h.Core.Mail = working
	for range 2 { // Lambda's retries
		if err := e.handle(ev); err != nil {
			t.Fatal(err)
		}
	}
	e.replay(json.RawMessage(`{"replay":{"ids":["` + inbox.ID(object) + `"]}}`))
	if jobs := e.jobs(); len(jobs) != 1 {
		t.Fatalf("%d acknowledgements, want 1", len(jobs))
	}
	got, _, err := e.messages.Get(ctx, object)
	if err != nil || string(got) != string(raw) || head() != before {
		t.Fatalf("the stored message changed: %v", err)
	}
}

// testAlertTimeout is a test's budget for an alert, not Lambda's: the
// alert's Ledger dedupe gets a third of it, and make test's shared moto
// can take over a second to answer under load.
const testAlertTimeout = 30 * time.Second
