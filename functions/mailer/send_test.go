package main

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"42sisters.ai/oracle/functions/mailer/letter"
	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/mail"
	"42sisters.ai/oracle/shared/obs"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/quarantine"
	"42sisters.ai/oracle/shared/queue"
	"42sisters.ai/oracle/shared/repair"
	"42sisters.ai/oracle/shared/sosfilter"
	"42sisters.ai/oracle/shared/store"
)

// The send outcomes of the Handler over memory: the order store, the
// queues, the audit log, the alerts and SES are in memory, so each case
// runs in milliseconds. The component tests in handler_test.go run the
// same Handler against the real services.

// memOrders is the order store's mail deliveries in memory, keeping the
// rules of shared/store the mailer relies on: a claim only while the
// order is owed the email, one claim at a time per kind, a delivery once
// closed never claimed again, and an attempt recorded as failed never
// made again.
type memOrders struct {
	mu       sync.Mutex
	orders   map[string]oracle.Order
	claims   map[string]string // session#kind: the live claim's token
	closed   map[string]string // session#kind: the message id, or why nothing left
	next     map[string]int    // session#kind: the lowest attempt still to be made
	tries    map[string][]store.Try
	released int
}

func newMemOrders(orders ...oracle.Order) *memOrders {
	m := &memOrders{orders: map[string]oracle.Order{}, claims: map[string]string{}, closed: map[string]string{},
		next: map[string]int{}, tries: map[string][]store.Try{}}
	for _, o := range orders {
		m.orders[o.SessionID] = o
	}
	return m
}

func (m *memOrders) ClaimOrderMail(_ context.Context, id string, kind oracle.MailKind, attempt int, _ time.Duration) (store.MailClaim, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := id + "#" + string(kind)
	o, found := m.orders[id]
	c := store.MailClaim{Order: o, Result: m.closed[k], Next: m.next[k]}
	switch {
	case !found:
		return c, store.ErrNoOrder
	case !store.MailOwed(kind, o):
		return c, store.ErrMailNotOwed
	case m.closed[k] != "":
		return c, store.ErrAlreadySent
	case m.claims[k] != "":
		return c, store.ErrMailInFlight
	case m.next[k] > attempt:
		return c, store.ErrAttemptSpent
	}
	m.claims[k] = "claim-" + strconv.Itoa(len(m.claims)+m.released+len(m.tries[k])+1)
	c.Token = m.claims[k]
	return c, nil
}

func (m *memOrders) MailSent(_ context.Context, id string, kind oracle.MailKind, token, result string, state oracle.MailState) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := id + "#" + string(kind)
	if m.claims[k] != token {
		return errors.New("the claim is not the caller's")
	}
	delete(m.claims, k)
	m.closed[k] = result
	m.setState(id, kind, state)
	return nil
}

func (m *memOrders) MailFailed(_ context.Context, id string, kind oracle.MailKind, token string, try store.Try, nextAt time.Time) ([]store.Try, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := id + "#" + string(kind)
	if m.claims[k] != token {
		return nil, errors.New("the claim is not the caller's")
	}
	delete(m.claims, k)
	m.next[k] = try.Attempt + 1
	m.tries[k] = append(m.tries[k], try)
	if nextAt.IsZero() {
		m.closed[k] = "undeliverable"
		m.setState(id, kind, oracle.MailUndeliverable)
	}
	return append([]store.Try(nil), m.tries[k]...), nil
}

func (m *memOrders) setState(id string, kind oracle.MailKind, state oracle.MailState) {
	if state == "" {
		return
	}
	o := m.orders[id]
	if o.Mail == nil {
		o.Mail = map[oracle.MailKind]oracle.MailState{}
	}
	o.Mail[kind] = state
	m.orders[id] = o
}

func (m *memOrders) ReleaseMail(_ context.Context, id string, kind oracle.MailKind, token string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := id + "#" + string(kind)
	if m.claims[k] == token {
		delete(m.claims, k)
		m.released++
	}
	return nil
}

// memLedger keeps the mail dead letters, the suppression list and the
// sent messages; the autoresponse tests use the real Ledger (handler_test).
type memLedger struct {
	mu         sync.Mutex
	dead       map[string]store.MailDeadLetter
	suppressed map[string]bool
	sent       map[string]string // message id -> session
	fail       error             // when set, every dead-letter write fails with it
}

func newMemLedger() *memLedger {
	return &memLedger{dead: map[string]store.MailDeadLetter{}, suppressed: map[string]bool{}, sent: map[string]string{}}
}

func (l *memLedger) RecordSentMessage(_ context.Context, messageID, sessionID string, _ time.Duration) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sent[messageID] = sessionID
	return nil
}

var errNoReplies = errors.New("memLedger keeps no autoresponses and no chat emails")

func (l *memLedger) ClaimReply(context.Context, string, int, time.Duration, time.Duration) (string, error) {
	return "", errNoReplies
}
func (l *memLedger) ReplySent(context.Context, string, string, string) error { return errNoReplies }
func (l *memLedger) ReplyFailed(context.Context, string, string, store.Try, time.Time) ([]store.Try, error) {
	return nil, errNoReplies
}
func (l *memLedger) ReleaseReply(context.Context, string, string) error { return errNoReplies }

func (l *memLedger) ClaimChatMail(context.Context, store.ChatMail, int, time.Duration, time.Duration) (string, time.Time, error) {
	return "", time.Time{}, errNoReplies
}
func (l *memLedger) ChatMailSent(context.Context, store.ChatMail, string, string) error {
	return errNoReplies
}
func (l *memLedger) ChatMailFailed(context.Context, store.ChatMail, string, store.Try, time.Time) ([]store.Try, error) {
	return nil, errNoReplies
}
func (l *memLedger) ReleaseChatMail(context.Context, store.ChatMail, string) error {
	return errNoReplies
}

func (l *memLedger) RecordMailDeadLetter(_ context.Context, d store.MailDeadLetter, _ time.Duration) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fail != nil {
		return false, l.fail
	}
	k := store.MailDeadLetterKey(d.SessionID, d.Kind)
	if _, ok := l.dead[k]; ok {
		return false, nil
	}
	l.dead[k] = d
	return true, nil
}

func (l *memLedger) Suppressed(_ context.Context, emailHash string) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.suppressed[emailHash], nil
}

func (m *memOrders) QuarantineReady(_ context.Context, id string, q store.Quarantine) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	o := m.orders[id]
	if o.Status != oracle.StatusReady {
		return false, nil
	}
	o.Status, o.QuarantineGate, o.QuarantineTerms, o.QuarantineRecord = oracle.StatusQuarantined, q.Gate, q.Terms, q.Record
	m.orders[id] = o
	return true, nil
}

// session answers every retrieval with the same address.
type session string

func (s session) RetrieveSession(_ context.Context, id string) (oracle.Session, error) {
	return oracle.Session{ID: id, Email: string(s)}, nil
}

// transport answers each send with the next of errs (nil: sent), and
// sends once they are spent; it keeps every message it was given.
type transport struct {
	mu   sync.Mutex
	errs []error
	got  []mail.Outgoing
}

func failing(errs ...error) *transport { return &transport{errs: errs} }

func (t *transport) Send(_ context.Context, m mail.Outgoing) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.got = append(t.got, m)
	if len(t.errs) > 0 {
		err := t.errs[0]
		t.errs = t.errs[1:]
		if err != nil {
			return "", err
		}
	}
	return "ses-message-" + strconv.Itoa(len(t.got)), nil
}

func (t *transport) sends() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.got)
}

type jobs struct{ sent []queue.Job }

func (q *jobs) Send(_ context.Context, j queue.Job) error {
	q.sent = append(q.sent, j)
	return j.Validate()
}

type memQuarantine struct{}

func (memQuarantine) Put(_ context.Context, r quarantine.Record) (string, error) {
	return "quarantine/" + r.SessionID, nil
}

// memEnv is a Handler over memory, with a clock and the schedule
// compressed into minutes of the test's clock.
type memEnv struct {
	h         *Handler
	orders    *memOrders
	ledger    *memLedger
	transport *transport
	mail      *jobs
	alerts    *testkit.Alerts
	audit     *testkit.AuditLog
	clock     *testkit.Clock
	logs      *testkit.Buffer
	metrics   *testkit.Metrics
}

const memSession = "cs_test_outcome"

func newMemEnv(t *testing.T, tr *transport) *memEnv {
	t.Helper()
	verdict, err := oracle.Analysis{Verdict: oracle.VerdictGreen, Summary: "The instinct is sound; start small."}.CanonicalJSON()
	if err != nil {
		t.Fatal(err)
	}
	filter, err := sosfilter.New()
	if err != nil {
		t.Fatal(err)
	}
	hasher, err := audit.NewHasher("mailer-test-pepper-0123456789")
	if err != nil {
		t.Fatal(err)
	}
	e := &memEnv{
		orders: newMemOrders(oracle.Order{SessionID: memSession, Status: oracle.StatusReady, Tier: oracle.TierQuick, Query: "Should I open a bakery?",
			Verdict: string(verdict), AmountTotal: 100, Currency: "cad", Source: oracle.SourceWebhook, SessionCreated: time.Now().UTC()}),
		ledger: newMemLedger(), transport: tr, mail: &jobs{}, alerts: &testkit.Alerts{}, audit: &testkit.AuditLog{},
		clock: testkit.NewClock(time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)), logs: &testkit.Buffer{}, metrics: &testkit.Metrics{},
	}
	log := obs.NewLogger(e.logs, "DEBUG")
	schedule, err := parseSchedule(DefaultSchedule)
	if err != nil {
		t.Fatal(err)
	}
	e.h = &Handler{Orders: e.orders, Ledger: e.ledger, Test: session("customer@example.com"), Transport: tr, TransportName: "SES",
		Schedule: schedule, BlockedRetry: DefaultBlockedRetry, DeadLetterRetention: 90 * 24 * time.Hour,
		Audit:  &audit.Recorder{Writer: e.audit, Alerts: e.alerts, Log: log},
		Alerts: e.alerts, Verdicts: intact{}, Filter: filter, Quarantine: memQuarantine{}, Mail: e.mail,
		Hasher: hasher, Brand: letter.DefaultBrand(), BaseURL: "http://localhost:3000",
		Metrics: e.metrics, Log: log, Now: e.clock.Now, Lease: time.Minute}
	return e
}

// deliver hands the handler one job and reports whether its item failed.
func (e *memEnv) deliver(t *testing.T, j queue.Job) bool {
	t.Helper()
	body, _ := json.Marshal(j)
	resp, err := e.h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m", Body: string(body)}}})
	if err != nil {
		t.Fatal(err)
	}
	return len(resp.BatchItemFailures) != 0
}

// queued takes the jobs sent to the mail queue since the last call.
func (e *memEnv) queued() []queue.Job {
	out := e.mail.sent
	e.mail.sent = nil
	return out
}

// runQueue delivers each queued job when it is due, advancing the clock
// to it (as SQS's delays and the hops do), until the queue is empty; it
// returns the times of the sends.
func (e *memEnv) runQueue(t *testing.T, first queue.Job) []time.Time {
	t.Helper()
	var at []time.Time
	pending := []queue.Job{first}
	for steps := 0; len(pending) > 0; steps++ {
		if steps > 100 {
			t.Fatal("the queue never empties")
		}
		j := pending[0]
		pending = pending[1:]
		if j.NotBefore != nil && j.NotBefore.After(e.clock.Now()) {
			e.clock.Add(j.NotBefore.Sub(e.clock.Now()))
		}
		before := e.transport.sends()
		if e.deliver(t, j) {
			t.Fatalf("job %+v failed", j)
		}
		if e.transport.sends() > before {
			at = append(at, e.clock.Now())
		}
		pending = append(pending, e.queued()...)
	}
	return at
}

var start = queue.Job{SessionID: memSession, Kind: oracle.MailVerdict}

// VER-02, over memory: 503 on the first two attempts, then sent on the
// third, 5 and 35 minutes after the first; one email, the delivery closed
// as sent, every attempt's record with the same message hash.
func TestRetryScheduleFiresOnTime(t *testing.T) {
	for _, kind := range retriedKinds {
		t.Run(string(kind), func(t *testing.T) {
			busy := &mail.Error{Class: mail.Transient, Transport: "SES", Status: 503, Code: "ServiceUnavailable"}
			e := newMemEnv(t, failing(busy, busy))
			first := e.owe(kind)
			t0 := e.clock.Now()
			at := e.runQueue(t, first)
			want := []time.Time{t0, t0.Add(5 * time.Minute), t0.Add(35 * time.Minute)}
			if !slices.EqualFunc(at, want, time.Time.Equal) {
				t.Fatalf("sends at %v, want %v", at, want)
			}
			if got := e.orders.closed[memSession+"#"+string(kind)]; got != "ses-message-3" {
				t.Fatalf("delivery closed with %q", got)
			}
			if e.orders.orders[memSession].Mail[kind] != oracle.MailSent {
				t.Fatalf("mail state %q", e.orders.orders[memSession].Mail[kind])
			}
			var hashes []string
			for n := range 3 {
				r, ok := e.audit.Record(audit.RecordID(memSession, audit.NameMailAttempt, kind, n))
				if !ok || r.Mail == nil || r.Mail.Attempt != n {
					t.Fatalf("attempt %d has no record: %+v", n, r)
				}
				hashes = append(hashes, r.Mail.MessageHash)
			}
			if hashes[0] == "" || hashes[0] != hashes[1] || hashes[1] != hashes[2] {
				t.Fatalf("attempts' message hashes %q: not one message", hashes)
			}
			if len(e.alerts.Raised()) != 0 {
				t.Fatalf("alerts %q for an email that arrived", e.alerts.Kinds())
			}
		})
	}
}

// retriedKinds are the emails whose schedule the tests run: the verdict,
// and the notice of a silent drop (SILENT_DROP FM-2, GAP-SD-07), which
// takes the same path.
var retriedKinds = []oracle.MailKind{oracle.MailVerdict, oracle.MailSilentDrop}

// owe puts the order in the state that owes an email of kind, and returns
// that email's first job.
func (e *memEnv) owe(kind oracle.MailKind) queue.Job {
	if kind == oracle.MailSilentDrop {
		o := e.orders.orders[memSession]
		o.Status, o.DropReason, o.Verdict, o.Query = oracle.StatusDropped, oracle.DropQueryEmpty, "", ""
		e.orders.orders[memSession] = o
	}
	return queue.Job{SessionID: memSession, Kind: kind}
}

// VER-03, over memory: 503 on all four attempts; no fifth, one dead-letter
// record listing the four, one CRITICAL alert naming the session.
func TestDeadLetterAfterTheLastAttempt(t *testing.T) {
	for _, kind := range retriedKinds {
		t.Run(string(kind), func(t *testing.T) {
			busy := &mail.Error{Class: mail.Transient, Transport: "SES", Status: 503, Code: "ServiceUnavailable"}
			e := newMemEnv(t, failing(busy, busy, busy, busy, nil))
			first := e.owe(kind)
			t0 := e.clock.Now()
			at := e.runQueue(t, first)
			if len(at) != 4 || !at[3].Equal(t0.Add(5*time.Minute+30*time.Minute+2*time.Hour)) {
				t.Fatalf("sends at %v, want four, the last at +2h35m", at)
			}
			d, ok := e.ledger.dead[store.MailDeadLetterKey(memSession, kind)]
			if !ok || len(d.Tries) != 4 || d.Class != "transient" || d.Transport != "SES" || d.Tries[3].Code != "ServiceUnavailable" {
				t.Fatalf("dead letter %+v %v", d, ok)
			}
			raised := e.alerts.Raised()
			if len(raised) != 1 || raised[0].Kind != alert.EmailDeadLetter || raised[0].Severity != alert.Critical || raised[0].Session != memSession {
				t.Fatalf("alerts %+v, want one CRITICAL EMAIL_DEAD_LETTER for the session", raised)
			}
			if !strings.Contains(raised[0].Text(e.clock.Now()), oracle.ShortID(memSession)) {
				t.Fatalf("the alert does not name the session: %s", raised[0].Text(e.clock.Now()))
			}
			if !e.orders.orders[memSession].Mail[kind].Undelivered() {
				t.Fatal("the page would not say the email could not be delivered")
			}
			// Each retry of the schedule is a new job and each delivery a success
			// to SQS: the record-failure alarm does not count a failing address.
			// The email failed for good once, the dashboard's EmailsFailed.
			if c := e.metrics.Counts(); len(c) != 1 || c[obs.EmailsFailed] != 1 {
				t.Fatalf("counted %v for the schedule's retries, want only the one email failed", c)
			}
			// A late duplicate of the last job changes nothing.
			last := first
			last.Attempt = 3
			if e.deliver(t, last) || e.transport.sends() != 4 || len(e.alerts.Raised()) != 1 {
				t.Fatalf("a duplicate of the last attempt sent or alerted again: %d sends, %q", e.transport.sends(), e.alerts.Kinds())
			}
		})
	}
}

// VER-04 and VER-05, over memory, and the other failure classes: what one
// attempt's failure calls for.
func TestEachFailureClassIsHandledOnce(t *testing.T) {
	tests := []struct {
		name      string
		err       error
		closed    string        // the delivery's result; "" while it stays open
		next      time.Duration // the wait before the job queued next; -1 for none
		nextTry   int           // that job's attempt
		deadClass string        // the dead letter's class; "" for none
		alerts    []string
	}{
		{"sent", nil, "ses-message-1", -1, 0, "", nil},
		{"503", &mail.Error{Class: mail.Transient, Status: 503}, "", 5 * time.Minute, 1, "", nil},
		{"429 with a shorter Retry-After", &mail.Error{Class: mail.Transient, Status: 429, RetryAfter: time.Minute}, "", 5 * time.Minute, 1, "", nil},
		{"429 with a longer Retry-After", &mail.Error{Class: mail.Transient, Status: 429, RetryAfter: 20 * time.Minute}, "", 20 * time.Minute, 1, "", nil},
		{"unclassified", errors.New("transport"), "", 5 * time.Minute, 1, "", nil},
		{"400", &mail.Error{Class: mail.Permanent, Code: "MessageRejected", Status: 400}, "undeliverable", -1, 0, "permanent", []string{string(alert.EmailFailed)}},
		{"blocked", &mail.Error{Class: mail.Blocked, Code: "SendingPausedException", Status: 400}, "", DefaultBlockedRetry, 0, "", []string{string(alert.EmailBlocked)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newMemEnv(t, failing(tc.err))
			if e.deliver(t, start) {
				t.Fatal("the item failed: SQS would deliver it again instead of the schedule")
			}
			if got := e.orders.closed[memSession+"#verdict"]; got != tc.closed {
				t.Errorf("delivery closed with %q, want %q", got, tc.closed)
			}
			if len(e.orders.claims) != 0 {
				t.Errorf("%d claims still held", len(e.orders.claims))
			}
			q := e.queued()
			switch {
			case tc.next < 0 && len(q) != 0:
				t.Errorf("queued %+v, want nothing", q)
			case tc.next >= 0 && (len(q) != 1 || q[0].Attempt != tc.nextTry || !q[0].NotBefore.Equal(e.clock.Now().Add(tc.next))):
				t.Errorf("queued %+v, want attempt %d after %s", q, tc.nextTry, tc.next)
			}
			d, dead := e.ledger.dead[store.MailDeadLetterKey(memSession, oracle.MailVerdict)]
			if dead != (tc.deadClass != "") || d.Class != tc.deadClass {
				t.Errorf("dead letter %+v, want class %q", d, tc.deadClass)
			}
			if kinds := e.alerts.Kinds(); !slices.Equal(kinds, tc.alerts) {
				t.Errorf("alerts %q, want %q", kinds, tc.alerts)
			}
			// An email's end is counted once: sent, or failed for good;
			// a retry or a parked job is neither yet.
			sent, failed := 0.0, 0.0
			switch tc.closed {
			case "":
			case "undeliverable":
				failed = 1
			default:
				sent = 1
			}
			if c := e.metrics.Counts(); c[obs.EmailsSent] != sent || c[obs.EmailsFailed] != failed {
				t.Errorf("EmailsSent %v, EmailsFailed %v; want %v, %v", c[obs.EmailsSent], c[obs.EmailsFailed], sent, failed)
			}
		})
	}
}

// A blocked account spends no attempt: the schedule starts where it was
// once the account sends again, and nothing is dropped however long it lasts.
func TestBlockedAccountParksWithoutSpendingAttempts(t *testing.T) {
	blocked := &mail.Error{Class: mail.Blocked, Code: "AccountSuspendedException", Status: 400}
	busy := &mail.Error{Class: mail.Transient, Status: 503}
	errs := []error{busy}
	for range 20 { // five hours blocked
		errs = append(errs, blocked)
	}
	e := newMemEnv(t, failing(errs...))
	at := e.runQueue(t, start)
	if len(at) != 22 || e.orders.closed[memSession+"#verdict"] == "" || e.orders.closed[memSession+"#verdict"] == "undeliverable" {
		t.Fatalf("%d sends, closed %q: want the email sent once the account works", len(at), e.orders.closed[memSession+"#verdict"])
	}
	if tries := e.orders.tries[memSession+"#verdict"]; len(tries) != 1 {
		t.Fatalf("attempts spent %+v, want only the 503", tries)
	}
}

// FM-04: when the dead-letter record cannot be written, the alert still
// goes out and says so.
func TestDeadLetterAlertSurvivesALostRecord(t *testing.T) {
	e := newMemEnv(t, failing(&mail.Error{Class: mail.Permanent, Status: 400}))
	e.ledger.fail = errors.New("ledger unavailable")
	e.deliver(t, start)
	raised := e.alerts.Raised()
	if len(raised) != 1 || raised[0].Kind != alert.EmailFailed || !strings.Contains(raised[0].Detail, "could NOT be written") {
		t.Fatalf("alerts %+v", raised)
	}
}

// A job due later is sent on (a hop), not delivered early.
func TestAJobIsNotDeliveredBeforeItsTime(t *testing.T) {
	e := newMemEnv(t, failing())
	later := start
	at := e.clock.Now().Add(2 * time.Hour)
	later.NotBefore, later.Attempt = &at, 3
	if e.deliver(t, later) || e.transport.sends() != 0 {
		t.Fatal("delivered before its time")
	}
	if q := e.queued(); len(q) != 1 || !q[0].NotBefore.Equal(at) || q[0].Attempt != 3 {
		t.Fatalf("hop %+v", q)
	}
}

// A complained address is not emailed again.
func TestSuppressedAddressIsNotEmailed(t *testing.T) {
	e := newMemEnv(t, failing())
	e.ledger.suppressed[e.h.Hasher.Email("customer@example.com")] = true
	e.deliver(t, start)
	if e.transport.sends() != 0 || e.orders.orders[memSession].Mail[oracle.MailVerdict] != oracle.MailSuppressed {
		t.Fatalf("%d sends, state %q", e.transport.sends(), e.orders.orders[memSession].Mail[oracle.MailVerdict])
	}
}

// intact passes every stored verdict: these tests are about sending; the
// corrupt ones are TestCorruptVerdictIsNeverMailed's, against the store.
type intact struct{}

func (intact) Check(context.Context, oracle.Order) (repair.Outcome, error) { return repair.Intact, nil }

// REGEN_CONSISTENCY failure mode 4 and REGEN-GAP-04, over memory: the
// divergence notice rides the one retry schedule of every email. Graph or
// SES down when it is sent: retried 5 minutes later and sent; down on all
// four attempts: no fifth, a dead letter and one CRITICAL alert.
func TestDivergenceNoticeRidesTheRetrySchedule(t *testing.T) {
	busy := &mail.Error{Class: mail.Transient, Transport: "SES", Status: 503, Code: "ServiceUnavailable"}
	notice := queue.Job{SessionID: memSession, Kind: oracle.MailDivergence}
	for _, tc := range []struct {
		name  string
		tr    *transport
		sends int
		dead  bool
	}{
		{name: "down once", tr: failing(busy), sends: 2},
		{name: "down throughout", tr: failing(busy, busy, busy, busy, nil), sends: 4, dead: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newMemEnv(t, tc.tr)
			o := e.orders.orders[memSession]
			o.Regen, o.RegenReason, o.OriginalVerdict, o.Divergence = true, oracle.RegenExpired, oracle.VerdictRed, oracle.DivergenceSignificant
			e.orders.orders[memSession] = o
			t0 := e.clock.Now()
			at := e.runQueue(t, notice)
			if len(at) != tc.sends || !at[1].Equal(t0.Add(5*time.Minute)) {
				t.Fatalf("sends at %v, want %d, the second 5 minutes after the first", at, tc.sends)
			}
			_, dead := e.ledger.dead[store.MailDeadLetterKey(memSession, oracle.MailDivergence)]
			raised := e.alerts.Raised()
			if dead != tc.dead || (tc.dead && (len(raised) != 1 || raised[0].Kind != alert.EmailDeadLetter)) || (!tc.dead && len(raised) != 0) {
				t.Fatalf("dead letter %v, alerts %q; want dead letter %v with one EMAIL_DEAD_LETTER", dead, e.alerts.Kinds(), tc.dead)
			}
			if st := e.orders.orders[memSession].Mail[oracle.MailDivergence]; (st == oracle.MailSent) == tc.dead {
				t.Fatalf("notice's mail state %q", st)
			}
		})
	}
}
