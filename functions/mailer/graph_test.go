package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"42sisters.ai/oracle/functions/mailer/letter"
	fakegraph "42sisters.ai/oracle/infra/fakes/fakegraph"
	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/mail"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/queue"
)

// SPEC_ORACLE_EMAIL_RETRY's verification criteria, as component tests:
// the mailer against moto (orders, Ledger, queues, audit log, alerts) and
// the fake Microsoft Graph over HTTP, with the schedule's clock injected.

// graphEnv is env with the Graph transport and a clock.
type graphEnv struct {
	*env
	graph *fakegraph.Server
	clock *testkit.Clock
	// bodies are the sendMail request bodies, in order.
	mu     sync.Mutex
	bodies [][]byte
}

func newGraphEnv(t *testing.T) *graphEnv {
	t.Helper()
	e := &graphEnv{env: newEnv(t), graph: fakegraph.New(fakegraph.Options{}), clock: testkit.NewClock(time.Now().UTC())}
	srv := httptest.NewServer(e.graph)
	t.Cleanup(srv.Close)
	g, err := mail.NewGraph(mail.GraphConfig{TenantID: fakegraph.DefaultTenant, ClientID: fakegraph.DefaultClientID, ClientSecret: fakegraph.DefaultClientSecret,
		Sender: letter.DefaultBrand().Sender, APIBase: srv.URL + "/v1.0", LoginBase: srv.URL,
		HTTP: &http.Client{Timeout: 10 * time.Second, Transport: recordingTransport{e}}})
	if err != nil {
		t.Fatal(err)
	}
	e.h.Transport, e.h.TransportName, e.h.Now = g, "Graph", e.clock.Now
	return e
}

// recordingTransport keeps each sendMail body: the bytes of each attempt.
type recordingTransport struct{ e *graphEnv }

func (rt recordingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.HasSuffix(r.URL.Path, "/sendMail") && r.Body != nil {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		rt.e.mu.Lock()
		rt.e.bodies = append(rt.e.bodies, b)
		rt.e.mu.Unlock()
	}
	return http.DefaultTransport.RoundTrip(r)
}

func (e *graphEnv) control(c fakegraph.Control) {
	e.t.Helper()
	if _, err := e.graph.Control(c); err != nil {
		e.t.Fatal(err)
	}
}

// order pays for a verdict and stores it; it returns the session and the
// customer's address.
func (e *graphEnv) order(tier oracle.Tier) (string, string) {
	e.t.Helper()
	addr := uniqueAddress(e.t)
	id := e.paidSession(tier, addr)
	e.ready(id, tier, oracle.VerdictAmber)
	return id, addr
}

// job is the message of a mail job.
func job(j queue.Job) events.SQSMessage {
	b, _ := json.Marshal(j)
	name := j.Nonce // a chat account's email names no session
	if j.SessionID != "" {
		name = j.SessionID[len(j.SessionID)-6:]
	}
	return events.SQSMessage{MessageId: "m-" + name, Body: string(b)}
}

// follow runs the session's verdict mail job, then each job the mailer
// queues for it when it is due (advancing the clock as SQS's delays and the
// hops would), until none is queued; it returns the clock at each send.
func (e *graphEnv) follow(id string) []time.Time {
	e.t.Helper()
	return e.followJob(queue.Job{SessionID: id, Kind: oracle.MailVerdict})
}

// followJob is follow from the job first.
func (e *graphEnv) followJob(first queue.Job) []time.Time {
	e.t.Helper()
	var at []time.Time
	pending := []queue.Job{first}
	seen := 0
	for steps := 0; len(pending) > 0; steps++ {
		if steps > 50 {
			e.t.Fatal("the mail queue never empties")
		}
		j := pending[0]
		pending = pending[1:]
		if j.NotBefore != nil && j.NotBefore.After(e.clock.Now()) {
			e.clock.Add(j.NotBefore.Sub(e.clock.Now()))
		}
		before := e.graph.CountCalls(fakegraph.KindSend)
		if n := e.run(job(j)); n != 0 {
			e.t.Fatalf("job %+v failed", j)
		}
		if e.graph.CountCalls(fakegraph.KindSend) > before {
			at = append(at, e.clock.Now())
		}
		sent := e.mailJobs()
		pending = append(pending, sent[seen:]...)
		seen = len(sent)
	}
	return at
}

func (e *graphEnv) inGraph(addr string) int {
	n := 0
	for _, m := range e.graph.Received() {
		for _, to := range m.To {
			if strings.EqualFold(to, addr) {
				n++
			}
		}
	}
	return n
}

func (e *graphEnv) mailState(id string) oracle.MailState {
	e.t.Helper()
	o, _, err := e.orders.Get(context.Background(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	return o.Mail[oracle.MailVerdict]
}

// VER-01: the same session twice within the retry window (the first job
// again, and ten concurrent copies of the scheduled retry) gives one email.
func TestSameSessionTwiceInTheRetryWindowSendsOnce(t *testing.T) {
	e := newGraphEnv(t)
	id, addr := e.order(oracle.TierQuick)
	e.control(fakegraph.Control{Send: []fakegraph.SendAnswer{{Status: 503}}})
	if n := e.run(job(queue.Job{SessionID: id, Kind: oracle.MailVerdict})); n != 0 {
		t.Fatal("the first attempt's job failed")
	}
	retry := e.mailJobs()
	if len(retry) != 1 || retry[0].Attempt != 1 {
		t.Fatalf("queued %+v, want attempt 2", retry)
	}
	e.clock.Add(retry[0].NotBefore.Sub(e.clock.Now()))
	var wg sync.WaitGroup
	for i := range 11 {
		wg.Go(func() {
			j := retry[0]
			if i == 10 {
				j = queue.Job{SessionID: id, Kind: oracle.MailVerdict} // the first job again
			}
			if n := e.run(job(j)); n != 0 {
				t.Error("a duplicate failed")
			}
		})
	}
	wg.Wait()
	if n := e.inGraph(addr); n != 1 {
		t.Fatalf("%d emails, want 1", n)
	}
	if e.mailState(id) != oracle.MailSent {
		t.Fatalf("mail state %q", e.mailState(id))
	}
}

// VER-02: 503 on attempts 1 and 2, then 202: attempt 2 at T+5 min,
// attempt 3 at T+35 min, the email delivered once, the delivery closed as
// sent.
func TestGraphRetryScheduleFiresOnTime(t *testing.T) {
	e := newGraphEnv(t)
	id, addr := e.order(oracle.TierFull)
	e.control(fakegraph.Control{Send: []fakegraph.SendAnswer{{Status: 503}, {Status: 503}}})
	t0 := e.clock.Now()
	at := e.follow(id)
	want := []time.Duration{0, 5 * time.Minute, 35 * time.Minute}
	if len(at) != len(want) {
		t.Fatalf("%d attempts, want 3", len(at))
	}
	for i, d := range want {
		if got := at[i].Sub(t0); got != d {
			t.Errorf("attempt %d at T+%s, want T+%s", i+1, got, d)
		}
	}
	if n := e.inGraph(addr); n != 1 || e.mailState(id) != oracle.MailSent {
		t.Fatalf("%d emails, state %q", n, e.mailState(id))
	}
}

// VER-03: 503 on all four attempts: no fifth, one dead-letter record
// naming the session with the four attempts, one CRITICAL alert naming it.
func TestGraphDeadLetterAfterFourFailures(t *testing.T) {
	e := newGraphEnv(t)
	id, addr := e.order(oracle.TierStrategy)
	e.control(fakegraph.Control{SendAlways: &fakegraph.SendAnswer{Status: 503}})
	at := e.follow(id)
	if len(at) != 4 || e.graph.CountCalls(fakegraph.KindSend) != 4 {
		t.Fatalf("%d attempts (%d sendMail calls), want 4 and never a fifth", len(at), e.graph.CountCalls(fakegraph.KindSend))
	}
	d, ok, err := e.ledger.MailDeadLetter(context.Background(), id, oracle.MailVerdict)
	if err != nil || !ok || len(d.Tries) != 4 || d.Class != "transient" || d.Transport != "Graph" || d.Tries[3].Code == "" {
		t.Fatalf("dead letter %+v %v %v", d, ok, err)
	}
	a := e.alerts()
	if len(a) != 1 || !strings.Contains(a[0], "CRITICAL") || !strings.Contains(a[0], "| EMAIL_DEAD_LETTER | "+oracle.ShortID(id)+" |") || strings.Contains(a[0], addr) {
		t.Fatalf("alerts %q, want one CRITICAL EMAIL_DEAD_LETTER naming the session", a)
	}
	if !e.mailState(id).Undelivered() {
		t.Fatalf("mail state %q: the page would not say the email could not be delivered", e.mailState(id))
	}
}

// VER-04: a 400 aborts at once: one attempt, a dead-letter record, an
// alert, within the one invocation. A 403 says the account cannot send:
// the job is parked, no attempt spent, no dead letter.
func TestGraphAbortsOn400AndParksOn403(t *testing.T) {
	t.Run("400", func(t *testing.T) {
		e := newGraphEnv(t)
		id, _ := e.order(oracle.TierQuick)
		e.control(fakegraph.Control{Send: []fakegraph.SendAnswer{{Status: 400, Code: "ErrorInvalidRecipients"}}})
		if at := e.follow(id); len(at) != 1 {
			t.Fatalf("%d attempts, want 1", len(at))
		}
		d, ok, _ := e.ledger.MailDeadLetter(context.Background(), id, oracle.MailVerdict)
		if !ok || d.Class != "permanent" || len(d.Tries) != 1 || d.Tries[0].Code != "ErrorInvalidRecipients" {
			t.Fatalf("dead letter %+v %v", d, ok)
		}
		if a := e.alerts(); len(a) != 1 || !strings.Contains(a[0], "| EMAIL_FAILED |") {
			t.Fatalf("alerts %q", a)
		}
	})
	t.Run("403", func(t *testing.T) {
		e := newGraphEnv(t)
		id, addr := e.order(oracle.TierQuick)
		e.control(fakegraph.Control{Send: []fakegraph.SendAnswer{{Status: 403}, {Status: 403}}})
		at := e.follow(id) // parked twice, then sent
		if len(at) != 3 || e.inGraph(addr) != 1 {
			t.Fatalf("%d attempts, %d emails: want the email sent once the account works", len(at), e.inGraph(addr))
		}
		if gap := at[1].Sub(at[0]); gap != DefaultBlockedRetry {
			t.Errorf("parked for %s, want %s", gap, DefaultBlockedRetry)
		}
		if _, ok, _ := e.ledger.MailDeadLetter(context.Background(), id, oracle.MailVerdict); ok {
			t.Fatal("a blocked account dead-lettered the email")
		}
		if a := e.alerts(); len(a) == 0 || !strings.Contains(a[0], "| EMAIL_BLOCKED |") {
			t.Fatalf("alerts %q", a)
		}
	})
}

// VER-05: a 429 with Retry-After 120 s: the next attempt no earlier than
// T+120 s, even where the schedule's step is shorter.
func TestGraphRetryAfterPostponesTheNextAttempt(t *testing.T) {
	e := newGraphEnv(t)
	e.h.Schedule = []time.Duration{0, 30 * time.Second, time.Minute, 2 * time.Minute}
	id, addr := e.order(oracle.TierQuick)
	e.control(fakegraph.Control{Send: []fakegraph.SendAnswer{{Status: 429, RetryAfterS: 120}}})
	at := e.follow(id)
	if len(at) != 2 || at[1].Sub(at[0]) != 120*time.Second || e.inGraph(addr) != 1 {
		t.Fatalf("attempts at %v, %d emails: want the second 120 s after the first", at, e.inGraph(addr))
	}
}

// VER-06: sendMail answers 401 once; the token is fetched again and the
// message resent within the same attempt, and delivered. A refused refresh
// (FM-03, GAP-03) is an account that cannot send: parked and alerted, not
// a crash and not a lost email.
func TestGraphTokenRefreshedOnceOn401(t *testing.T) {
	e := newGraphEnv(t)
	id, addr := e.order(oracle.TierQuick)
	e.control(fakegraph.Control{Send: []fakegraph.SendAnswer{{Status: 401}}})
	if at := e.follow(id); len(at) != 1 || e.inGraph(addr) != 1 {
		t.Fatalf("%d attempts, %d emails, want one attempt that delivered", len(at), e.inGraph(addr))
	}
	if n := e.graph.CountCalls(fakegraph.KindToken); n != 2 {
		t.Fatalf("%d token requests, want 2 (the first and the refresh)", n)
	}

	id2, addr2 := e.order(oracle.TierQuick)
	e.control(fakegraph.Control{ExpireTokens: true, Token: []fakegraph.TokenAnswer{{Status: 401, Error: "invalid_client"}}})
	if n := e.run(job(queue.Job{SessionID: id2, Kind: oracle.MailVerdict})); n != 0 {
		t.Fatal("the job failed")
	}
	if a := e.alerts(); len(a) != 1 || !strings.Contains(a[0], "| EMAIL_BLOCKED |") || !strings.Contains(a[0], "invalid_client") {
		t.Fatalf("alerts %q, want EMAIL_BLOCKED naming the refused token", a)
	}
	if e.inGraph(addr2) != 0 || e.mailState(id2) != "" {
		t.Fatalf("state %q after a refused token", e.mailState(id2))
	}
}

// VER-07: the message of attempt N is byte for byte the message of attempt
// 1 (but for its Date), rendered from the stored verdict, and the audit
// record of each attempt carries the same hash and its number.
func TestEveryAttemptSendsTheSameBytes(t *testing.T) {
	e := newGraphEnv(t)
	id, addr := e.order(oracle.TierStrategy)
	e.control(fakegraph.Control{Send: []fakegraph.SendAnswer{{Status: 503}, {Status: 502}, {Status: 504}}})
	if at := e.follow(id); len(at) != 4 {
		t.Fatalf("%d attempts, want 4", len(at))
	}
	e.mu.Lock()
	bodies := e.bodies
	e.mu.Unlock()
	if len(bodies) != 4 {
		t.Fatalf("%d sendMail bodies, want 4", len(bodies))
	}
	var first string
	for i, b := range bodies {
		raw, err := base64.StdEncoding.DecodeString(string(b))
		if err != nil {
			t.Fatal(err)
		}
		msg := withoutDate(string(raw))
		if i == 0 {
			first = msg
			continue
		}
		if msg != first {
			t.Fatalf("attempt %d sent other bytes than attempt 1:\n%s\n---\n%s", i+1, msg, first)
		}
	}
	want, err := letter.Verdict(letter.DefaultBrand(), oracle.TierStrategy, "Should I open a <b>bakery</b>?", analysis(oracle.TierStrategy, oracle.VerdictAmber),
		"http://localhost:3000/oracle/result?session_id="+id)
	if err != nil {
		t.Fatal(err)
	}
	got := e.graph.Received()
	if len(got) != 1 || got[0].Text != want.Text || got[0].To[0] != addr {
		t.Fatal("the email delivered is not the stored verdict's letter")
	}
	var hashes []string
	for _, r := range testkit.AuditRecords(t, e.s3, e.f.Ref("AuditBucket")) {
		if r.Event == audit.EventMailAttempt && r.SessionID == id {
			hashes = append(hashes, r.Mail.MessageHash)
		}
	}
	if len(hashes) != 4 {
		t.Fatalf("%d attempt records, want 4", len(hashes))
	}
	for _, h := range hashes {
		if h == "" || h != hashes[0] {
			t.Fatalf("the attempts' hashes differ: %q", hashes)
		}
	}
}

func withoutDate(raw string) string {
	var keep []string
	for _, line := range strings.Split(raw, "\r\n") {
		if !strings.HasPrefix(line, "Date: ") {
			keep = append(keep, line)
		}
	}
	return strings.Join(keep, "\r\n")
}
