package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"42sisters.ai/oracle/infra/fakes/fakegraph"
	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/inbox"
	"42sisters.ai/oracle/shared/mail"
)

const mailbox = "oracle@42sisters.ai"

// graphEnv is the test env with a fake Graph mailbox and the Poller.
type graphEnv struct {
	*env
	graph *httptest.Server
	fake  *fakegraph.Server
	p     *Poller
	sent  *requests
}

// requests are the method and path of every request the fake Graph was
// sent, in order: the fake's own log counts only tokens and sendMail.
type requests struct {
	mu  sync.Mutex
	got []string
}

func (r *requests) record(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.got = append(r.got, req.Method+" "+req.URL.Path)
		r.mu.Unlock()
		next.ServeHTTP(w, req)
	})
}

func (r *requests) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

func newGraphEnv(t *testing.T) *graphEnv {
	t.Helper()
	e := &graphEnv{env: newEnv(t), fake: fakegraph.New(fakegraph.Options{}), sent: &requests{}}
	e.graph = httptest.NewServer(e.sent.record(e.fake))
	t.Cleanup(e.graph.Close)
	g, err := mail.NewGraph(mail.GraphConfig{TenantID: fakegraph.DefaultTenant, ClientID: fakegraph.DefaultClientID,
		ClientSecret: fakegraph.DefaultClientSecret, Sender: mailbox, APIBase: e.graph.URL + "/v1.0", LoginBase: e.graph.URL})
	if err != nil {
		t.Fatal(err)
	}
	e.p = &Poller{Graph: g, Mailbox: mailbox, Lookback: 7 * 24 * time.Hour, State: e.ledger, Store: e.messages, Core: e.h.Core,
		Alerts: e.h.Alerts, FailureAlertEvery: time.Hour, Log: e.h.Log, Now: e.clock.Now}
	e.h.Poll = e.p.Poll
	return e
}

// deliver puts a message in the mailbox, received ago before the clock.
func (e *graphEnv) deliver(raw []byte, ago time.Duration) {
	e.t.Helper()
	u := e.graph.URL + "/_inbox/" + url.PathEscape(mailbox) + "?received=" + url.QueryEscape(e.clock.Now().Add(-ago).Format(time.RFC3339))
	resp, err := http.Post(u, "message/rfc822", bytes.NewReader(raw))
	if err != nil {
		e.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		e.t.Fatalf("deliver: %d", resp.StatusCode)
	}
}

// poll invokes the function as its schedule does, with the sample event
// events/inbox/poll.json.
func (e *graphEnv) poll() {
	e.t.Helper()
	ev, err := os.ReadFile("../../events/inbox/poll.json")
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.handle(ev); err != nil {
		e.t.Fatalf("a poll failed the invocation: %v", err)
	}
}

func (e *graphEnv) count(kind alert.Kind) int {
	e.inboxAlerts() // reads the tap into e.raised
	n := 0
	for _, a := range e.raised {
		if strings.Contains(a, "| "+string(kind)+" |") {
			n++
		}
	}
	return n
}

// V1 and G7: the first poll records the unread messages already there as
// seen, alerts and answers none of them, and says so once; later polls
// process only what is new (V2, V3 through Graph).
func TestFirstPollSeedsThenNewMessagesAreProcessed(t *testing.T) {
	e := newGraphEnv(t)
	for i := range 3 {
		e.deliver(message(fmt.Sprintf("waiting%d@example.com", i), "Waiting", fmt.Sprintf("Message-ID: <waiting-%d@example.com>", i)), time.Duration(i+1)*time.Hour)
	}
	e.poll()
	e.poll()
	if n := e.count(alert.InboxMessage); n != 0 {
		t.Fatalf("%d message alerts on the first read, want 0", n)
	}
	if jobs := e.jobs(); len(jobs) != 0 {
		t.Fatalf("%d acknowledgements on the first read, want 0", len(jobs))
	}
	if n := e.count(alert.InboxSeeded); n != 1 {
		t.Fatalf("%d seeding notices, want 1", n)
	}
	if !strings.Contains(strings.Join(e.raised, "\n"), "its 3 unread message(s)") {
		t.Fatalf("the notice does not count the messages: %q", e.raised)
	}
	e.deliver(message("new@example.com", "A new question", "Message-ID: <new-1@example.com>"), 0)
	e.poll()
	if n := e.count(alert.InboxMessage); n != 1 {
		t.Fatalf("%d message alerts after a new message, want 1", n)
	}
	jobs := e.jobs()
	if len(jobs) != 1 || !strings.HasPrefix(jobs[0].Inbox, inbox.Prefix+"graph-") {
		t.Fatalf("jobs %+v", jobs)
	}
	// V2: the alert names the sender (keyed hash and domain), the subject
	// and the stored message the operator reads.
	hash := strings.TrimPrefix(e.h.Core.Hasher.Email("new@example.com"), audit.HashPrefix)[:12]
	if a := e.inboxAlerts(); !strings.Contains(a[0], hash+" at example.com") || !strings.Contains(a[0], `"A new question"`) ||
		!strings.Contains(a[0], "stored as "+jobs[0].Inbox+", read it with make ops ACTION=inbox SHOW="+inbox.ID(jobs[0].Inbox)) {
		t.Fatalf("alert %q", a[0])
	}
	// The stored message is the one the mailer will answer.
	if raw, _, err := e.messages.Get(context.Background(), jobs[0].Inbox); err != nil || !strings.Contains(string(raw), "new@example.com") {
		t.Fatalf("stored message: %v", err)
	}
	if recs := e.received(); len(recs) != 1 || recs[0].Inbox.Via != "graph" {
		t.Fatalf("records %+v", recs)
	}
}

// V10, G2, G6 and FM-8: every new message is processed once, however the
// polls overlap, each known by its own Message-ID (two received in the
// same second are two).
func TestOverlappingPollsProcessEachMessageOnce(t *testing.T) {
	e := newGraphEnv(t)
	e.poll() // the first read, of an empty mailbox
	for i := range 3 {
		e.deliver(message(fmt.Sprintf("sender%d@example.com", i), "Same second", fmt.Sprintf("Message-ID: <same-second-%d@example.com>", i)), 0)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(e.poll)
	}
	wg.Wait()
	e.poll()
	if n := e.count(alert.InboxMessage); n != 3 {
		t.Fatalf("%d alerts, want 3", n)
	}
	if jobs := e.jobs(); len(jobs) != 3 {
		t.Fatalf("%d acknowledgements, want 3", len(jobs))
	}
	for _, r := range e.received() {
		if seen, err := e.ledger.MessageSeen(context.Background(), r.Inbox.MessageKey); err != nil || !seen {
			t.Errorf("message %s not recorded as seen: %v", r.Inbox.MessageKey, err)
		}
	}
}

// V8, INV-1 and FM-1: Graph refusing the poll does not fail the invocation
// or touch the state; the operator hears of it once an hour at most, and
// the next poll reads what this one could not.
func TestAFailingPollIsNotFatal(t *testing.T) {
	e := newGraphEnv(t)
	e.poll()
	e.deliver(message("patient@example.com", "Hello", "Message-ID: <patient@example.com>"), 0)
	if _, err := e.fake.Control(fakegraph.Control{ExpireTokens: true, Token: []fakegraph.TokenAnswer{{Status: 401}, {Status: 503}}}); err != nil {
		t.Fatal(err)
	}
	e.poll()
	e.poll()
	if n := e.count(alert.InboxUnreadable); n != 1 {
		t.Fatalf("%d unreadable alerts for two failed polls, want 1", n)
	}
	if n := e.count(alert.InboxMessage); n != 0 {
		t.Fatalf("message alerts while Graph failed: %d", n)
	}
	e.poll()
	if n := e.count(alert.InboxMessage); n != 1 {
		t.Fatalf("%d message alerts after Graph recovered, want 1", n)
	}
	if jobs := e.jobs(); len(jobs) != 1 {
		t.Fatalf("%d acknowledgements, want 1", len(jobs))
	}
}

// V7, adapted: no list is capped; a message is remembered for the
// retention, which outlasts the lookback (TestConfig), and a poll never
// lists one older than the lookback, so an expired record is never met
// again.
func TestOldMessagesAreNeitherListedNorRemembered(t *testing.T) {
	e := newGraphEnv(t)
	e.poll()
	e.deliver(message("old@example.com", "Old", "Message-ID: <old@example.com>"), 8*24*time.Hour)
	e.deliver(message("recent@example.com", "Recent", "Message-ID: <recent@example.com>"), 6*24*time.Hour)
	e.poll()
	if n := e.count(alert.InboxMessage); n != 1 {
		t.Fatalf("%d alerts, want 1 (the message within the lookback)", n)
	}
}

// INV-8: the poll only reads the mailbox. Over the first read, new
// messages, a repeated poll and one Graph refuses, every request it makes
// is the token, the list or a message's $value, each a GET but the token:
// Graph marks a message read (PATCH), moves, copies or deletes it
// (POST …/move, DELETE) only when asked, and nothing asks. Every message
// is still in the mailbox, unread, afterwards.
func TestThePollOnlyReadsTheMailbox(t *testing.T) {
	e := newGraphEnv(t)
	e.deliver(message("waiting@example.com", "Waiting", "Message-ID: <ro-waiting@example.com>"), time.Hour)
	e.poll() // the first read
	for i := range 3 {
		e.deliver(message(fmt.Sprintf("reader%d@example.com", i), "Read only", fmt.Sprintf("Message-ID: <ro-%d@example.com>", i)), 0)
	}
	e.poll()
	e.poll()
	if _, err := e.fake.Control(fakegraph.Control{ExpireTokens: true, Token: []fakegraph.TokenAnswer{{Status: 503}}}); err != nil {
		t.Fatal(err)
	}
	e.poll()
	if n := e.count(alert.InboxMessage); n != 3 {
		t.Fatalf("%d message alerts, want 3", n)
	}
	reads := map[string]*regexp.Regexp{
		"token": regexp.MustCompile(`^POST /` + fakegraph.DefaultTenant + `/oauth2/v2\.0/token$`),
		"list":  regexp.MustCompile(`^GET /v1\.0/users/` + regexp.QuoteMeta(mailbox) + `/mailFolders/inbox/messages$`),
		"mime":  regexp.MustCompile(`^GET /v1\.0/users/` + regexp.QuoteMeta(mailbox) + `/messages/[^/]+/\$value$`),
	}
	made := map[string]int{}
	for _, r := range e.sent.all() {
		if strings.HasPrefix(r, "POST /_inbox/") { // the test's deliveries
			continue
		}
		kind := ""
		for k, re := range reads {
			if re.MatchString(r) {
				kind = k
			}
		}
		if kind == "" {
			t.Errorf("the poll sent %q: it may only read the mailbox", r)
		}
		made[kind]++
	}
	if made["list"] < 4 || made["mime"] != 3 {
		t.Fatalf("requests %v, want a list per poll and each new message read once", made)
	}
	listed, err := e.p.Graph.Unread(context.Background(), mailbox, e.clock.Now().Add(-2*time.Hour))
	if err != nil || len(listed) != 4 {
		t.Fatalf("%d messages still unread in the mailbox, want all 4: %v", len(listed), err)
	}
}
