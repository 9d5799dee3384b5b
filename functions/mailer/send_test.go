package main

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
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
	"42sisters.ai/oracle/shared/sosfilter"
	"42sisters.ai/oracle/shared/store"
)

// The send outcomes of the Handler over memory: the order store, the
// queues, the audit log, the alerts and SES are in memory, so each case
// runs in milliseconds. The component tests in handler_test.go run the
// same Handler against the real services.

// memOrders is the order store's mail deliveries in memory, keeping the
// rules of shared/store the mailer relies on: one claim at a time per
// kind, and a delivery once closed never claimed again.
type memOrders struct {
	mu       sync.Mutex
	orders   map[string]oracle.Order
	claims   map[string]string // session#kind: the live claim's token
	closed   map[string]string // session#kind: the message id, or why nothing left
	released int
}

func newMemOrders(orders ...oracle.Order) *memOrders {
	m := &memOrders{orders: map[string]oracle.Order{}, claims: map[string]string{}, closed: map[string]string{}}
	for _, o := range orders {
		m.orders[o.SessionID] = o
	}
	return m
}

func (m *memOrders) Get(_ context.Context, id string) (oracle.Order, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.orders[id]
	return o, ok, nil
}

func (m *memOrders) ClaimMail(_ context.Context, id string, kind oracle.MailKind, _ time.Duration) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := id + "#" + string(kind)
	switch {
	case m.closed[k] != "":
		return "", store.ErrAlreadySent
	case m.claims[k] != "":
		return "", store.ErrMailInFlight
	}
	m.claims[k] = "claim-" + strconv.Itoa(len(m.claims)+m.released+1)
	return m.claims[k], nil
}

func (m *memOrders) MailSent(_ context.Context, id string, kind oracle.MailKind, token, messageID string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := id + "#" + string(kind)
	if m.claims[k] != token {
		return errors.New("the claim is not the caller's")
	}
	delete(m.claims, k)
	m.closed[k] = messageID
	return nil
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

// transport answers every send with err, or a message id.
type transport struct{ err error }

func (t transport) Send(context.Context, mail.Outgoing) (string, error) {
	if t.err != nil {
		return "", t.err
	}
	return "ses-message-1", nil
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

func TestSendOutcomeClosesOrReleasesTheDelivery(t *testing.T) {
	tests := []struct {
		name   string
		err    error
		failed bool   // the item fails: SQS delivers it again
		closed string // the delivery's result; "" while it can be claimed again
		status audit.Status
		alerts []string
	}{
		{"sent", nil, false, "ses-message-1", audit.StatusEmailSent, nil},
		{"temporary", &mail.Error{Class: mail.Transient}, true, "", "", nil},
		{"throttled", &mail.Error{Class: mail.Transient, Code: "TooManyRequestsException", Status: 429}, true, "", "", nil},
		{"blocked", &mail.Error{Class: mail.Blocked, Code: "SendingPausedException", Status: 400}, true, "", "", []string{string(alert.EmailBlocked)}},
		{"refused", &mail.Error{Class: mail.Permanent, Code: "MessageRejected", Status: 400}, false, "refused", audit.StatusEmailFailed, []string{string(alert.EmailFailed)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			const id = "cs_test_outcome"
			verdict, err := oracle.Analysis{Verdict: oracle.VerdictGreen, Summary: "The instinct is sound; start small."}.CanonicalJSON()
			if err != nil {
				t.Fatal(err)
			}
			orders := newMemOrders(oracle.Order{SessionID: id, Status: oracle.StatusReady, Tier: oracle.TierQuick, Query: "Should I open a bakery?",
				Verdict: string(verdict), AmountTotal: 100, Currency: "cad", Source: oracle.SourceWebhook, SessionCreated: time.Now().UTC()})
			filter, err := sosfilter.New()
			if err != nil {
				t.Fatal(err)
			}
			hasher, err := audit.NewHasher("mailer-test-pepper-0123456789")
			if err != nil {
				t.Fatal(err)
			}
			raised, records := &testkit.Alerts{}, &testkit.AuditLog{}
			log := obs.NewLogger(&testkit.Buffer{}, "DEBUG")
			h := &Handler{Orders: orders, Test: session("customer@example.com"), Transport: transport{tc.err},
				Audit:  &audit.Recorder{Writer: records, Alerts: raised, Log: log},
				Alerts: raised, Filter: filter, Quarantine: memQuarantine{}, Mail: &jobs{}, Reminders: &jobs{},
				QuarantineReminder: 24 * time.Hour, Hasher: hasher, Brand: letter.DefaultBrand(), BaseURL: "http://localhost:3000",
				Log: log, Now: time.Now, Lease: time.Minute}
			body, _ := json.Marshal(queue.Job{SessionID: id, Kind: oracle.MailVerdict})
			resp, err := h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m", Body: string(body)}}})
			if err != nil {
				t.Fatal(err)
			}
			if failed := len(resp.BatchItemFailures) != 0; failed != tc.failed {
				t.Errorf("item failed %v, want %v", failed, tc.failed)
			}
			if got := orders.closed[id+"#"+string(oracle.MailVerdict)]; got != tc.closed {
				t.Errorf("delivery closed with %q, want %q", got, tc.closed)
			}
			if tc.closed == "" && (orders.released != 1 || len(orders.claims) != 0) {
				t.Errorf("%d claims released and %d live, want the one released for the retry", orders.released, len(orders.claims))
			}
			if r, ok := records.Record(audit.RecordID(id, audit.NameMail, oracle.MailVerdict)); ok != (tc.status != "") || r.Status != tc.status {
				t.Errorf("mail record %v %q, want %q", ok, r.Status, tc.status)
			}
			if kinds := raised.Kinds(); !slices.Equal(kinds, tc.alerts) {
				t.Errorf("alerts %q, want %q", kinds, tc.alerts)
			}
		})
	}
}
