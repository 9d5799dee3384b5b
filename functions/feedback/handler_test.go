package main

import (
	"context"
	"encoding/json"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/mail"
	"42sisters.ai/oracle/shared/obs"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/sesevent"
	"42sisters.ai/oracle/shared/store"
)

type env struct {
	t       *testing.T
	h       *Handler
	orders  *store.Orders
	ledger  *store.Ledger
	alerts  func() []string
	logs    *testkit.Buffer
	metrics *testkit.Metrics
}

func newEnv(t *testing.T) *env {
	t.Helper()
	f := provision.ForTest(t, nil)
	db := awsenv.NewTables(f.AWS)
	hasher, err := audit.NewHasher("feedback-test-pepper-0123456789")
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, orders: store.NewOrders(db, f.Ref("OrdersTable"), time.Now), ledger: store.NewLedger(db, f.Ref("LedgerTable"), time.Now), logs: &testkit.Buffer{}, metrics: &testkit.Metrics{}}
	e.alerts = testkit.AlertTap(t, f.AWS, f.Ref("AlertsTopic"), provision.TestRegion, provision.Account)
	log := obs.NewLogger(e.logs, "DEBUG")
	e.h = &Handler{Orders: e.orders, Suppression: e.ledger, Hasher: hasher, Metrics: e.metrics, Log: log,
		Alerts: &alert.Alerter{SNS: awsenv.NewTopics(f.AWS), Topic: f.Ref("AlertsTopic"), Timeout: testAlertTimeout, Dedupe: e.ledger, Log: log}}
	return e
}

// sent stores a paid order whose verdict email was sent as messageID.
func (e *env) sent(id, messageID string) {
	e.t.Helper()
	ctx := context.Background()
	if _, err := e.orders.ClaimOrder(ctx, oracle.Order{SessionID: id, Status: oracle.StatusPaid, Tier: oracle.TierQuick, Query: "q",
		AmountTotal: 100, Currency: "cad", Source: oracle.SourceWebhook, SessionCreated: time.Now().UTC()}, time.Minute); err != nil {
		e.t.Fatal(err)
	}
	tok, err := e.orders.ClaimMail(ctx, id, oracle.MailVerdict, 0, time.Minute)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.orders.MailSent(ctx, id, oracle.MailVerdict, tok, messageID, oracle.MailSent); err != nil {
		e.t.Fatal(err)
	}
}

// notification is the SQS record SNS delivers for an SES event of typ
// about the verdict email of id, sent as messageID to addr.
func notification(t *testing.T, typ sesevent.EventType, id, messageID, addr string) events.SQSMessage {
	t.Helper()
	ev := sesevent.Event{EventType: typ, Mail: sesevent.Mail{Timestamp: time.Now().UTC(), Source: "oracle@42sisters.ai", MessageID: messageID,
		Destination: []string{addr}, Tags: map[string][]string{mail.TagSession: {id}, mail.TagKind: {"verdict"}, sesevent.TagConfigurationSet: {"oracle-mail"}}}}
	switch typ {
	case sesevent.Delivery:
		ev.Delivery = &sesevent.DeliveryInfo{Timestamp: time.Now().UTC(), Recipients: []string{addr}, SMTPResponse: "250 ok"}
	case sesevent.Bounce:
		ev.Bounce = &sesevent.BounceInfo{BounceType: sesevent.BouncePermanent, BounceSubType: sesevent.BounceGeneral, Timestamp: time.Now().UTC(),
			BouncedRecipients: []sesevent.BouncedRecipient{{EmailAddress: addr, Action: "failed", Status: "5.1.1"}}}
	case sesevent.Complaint:
		ev.Complaint = &sesevent.ComplaintInfo{Timestamp: time.Now().UTC(), ComplainedRecipients: []sesevent.ComplainedRecipient{{EmailAddress: addr}}}
	case sesevent.Send:
		ev.Send = &sesevent.SendInfo{}
	case sesevent.Reject:
		ev.Reject = &sesevent.RejectInfo{Reason: "Bad content"}
	}
	inner, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(sesevent.Notification{Type: sesevent.NotificationType, MessageID: "sns-" + messageID, TopicARN: "arn:aws:sns:us-east-1:123456789012:mail-events", Message: string(inner), Timestamp: time.Now().UTC()})
	if err != nil {
		t.Fatal(err)
	}
	return events.SQSMessage{MessageId: "sqs-" + string(typ) + "-" + messageID, Body: string(body)}
}

func (e *env) run(recs ...events.SQSMessage) int {
	e.t.Helper()
	resp, err := e.h.Handle(context.Background(), events.SQSEvent{Records: recs})
	if err != nil {
		e.t.Fatal(err)
	}
	return len(resp.BatchItemFailures)
}

func (e *env) state(id string) oracle.MailState {
	e.t.Helper()
	o, _, err := e.orders.Get(context.Background(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	return o.Mail[oracle.MailVerdict]
}

// Each SES event moves the email's state as SES documents it, once, for
// the message it names; bounces and complaints reach the operator once.
func TestSESEventsMoveTheMailState(t *testing.T) {
	e := newEnv(t)
	const addr = "Jane.Doe+feedback@example.com"
	cases := []struct {
		name   string
		events []sesevent.EventType
		want   oracle.MailState
		alerts []string
		// counted is the metric the stack's reputation counts, once per
		// email however often SES says it.
		counted string
	}{
		{"send only", []sesevent.EventType{sesevent.Send}, oracle.MailSent, nil, ""},
		{"delivered", []sesevent.EventType{sesevent.Send, sesevent.Delivery, sesevent.Delivery}, oracle.MailDelivered, nil, ""},
		{"bounced", []sesevent.EventType{sesevent.Send, sesevent.Bounce, sesevent.Bounce}, oracle.MailBounced, []string{"] WARN |", "| EMAIL_BOUNCED |"}, obs.EmailsBounced},
		{"complained after delivery", []sesevent.EventType{sesevent.Delivery, sesevent.Complaint}, oracle.MailComplained, []string{"] WARN |", "| EMAIL_COMPLAINT |"}, obs.EmailsComplained},
		{"rejected", []sesevent.EventType{sesevent.Reject}, oracle.MailUndeliverable, []string{"] ERROR |", "| EMAIL_FAILED |"}, ""},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			id := "cs_test_feedback" + strings.Repeat("x", i+1)
			msg := "0100019a-" + strings.Repeat("m", i+1)
			e.sent(id, msg)
			before := len(e.alerts())
			counts := e.metrics.Counts()
			for _, typ := range tc.events {
				if n := e.run(notification(t, typ, id, msg, addr)); n != 0 {
					t.Fatalf("%s failed", typ)
				}
			}
			if got := e.state(id); got != tc.want {
				t.Fatalf("state %q, want %q", got, tc.want)
			}
			after := e.metrics.Counts()
			for _, name := range []string{obs.EmailsBounced, obs.EmailsComplained} {
				want := counts[name]
				if name == tc.counted {
					want++
				}
				if after[name] != want {
					t.Errorf("%s %v, want %v", name, after[name], want)
				}
			}
			var mine []string
			for _, a := range e.alerts()[before:] {
				if strings.Contains(a, oracle.ShortID(id)) {
					mine = append(mine, a)
				}
			}
			if (len(mine) != 0) != (tc.alerts != nil) || len(mine) > 1 {
				t.Fatalf("alerts %q, want one with %q", mine, tc.alerts)
			}
			for _, a := range mine {
				for _, want := range tc.alerts {
					if !strings.Contains(a, want) {
						t.Errorf("alert %q lacks %q", a, want)
					}
				}
				if strings.Contains(strings.ToLower(a), "jane.doe") {
					t.Errorf("the alert holds the address: %s", a)
				}
			}
		})
	}
	if strings.Contains(strings.ToLower(e.logs.String()), "jane.doe") {
		t.Error("a log line holds the address")
	}
}

// SES's event can come before the mailer has recorded the send it is
// about. It is tried again while the claim lives (every recordPoll, up to
// RecordWait): applied once the record lands, with its alert; failed for
// SQS to deliver again when it does not, never dropped as another
// message's. (make test's end-to-end run lost a bounce this way.)
func TestEventBeforeTheSendIsRecorded(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	claimed := func(id string) string {
		t.Helper()
		if _, err := e.orders.ClaimOrder(ctx, oracle.Order{SessionID: id, Status: oracle.StatusPaid, Tier: oracle.TierQuick, Query: "q",
			AmountTotal: 100, Currency: "cad", Source: oracle.SourceWebhook, SessionCreated: time.Now().UTC()}, time.Minute); err != nil {
			t.Fatal(err)
		}
		tok, err := e.orders.ClaimMail(ctx, id, oracle.MailVerdict, 0, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	const late, never = "cs_test_feedbackrecordlate", "cs_test_feedbackrecordnever"
	tok := claimed(late)
	claimed(never)
	var slept []time.Duration
	record := true
	e.h.RecordWait = 300 * time.Millisecond
	e.h.Sleep = func(_ context.Context, d time.Duration) error {
		slept = append(slept, d)
		if record && len(slept) == 2 { // the mailer's record lands while the event waits
			record = false
			return e.orders.MailSent(ctx, late, oracle.MailVerdict, tok, "msg-late", oracle.MailSent)
		}
		return nil
	}
	before := len(e.alerts())
	if n := e.run(notification(t, sesevent.Bounce, late, "msg-late", "late@example.com")); n != 0 {
		t.Fatalf("%d failures, want the bounce applied once the send was recorded", n)
	}
	if got := e.state(late); got != oracle.MailBounced || len(slept) != 2 {
		t.Fatalf("state %q after %d waits, want bounced after 2", got, len(slept))
	}
	if alerts := e.alerts()[before:]; len(alerts) != 1 || !strings.Contains(alerts[0], "EMAIL_BOUNCED") {
		t.Fatalf("alerts %q, want the bounce's", alerts)
	}
	slept = nil
	if n := e.run(notification(t, sesevent.Bounce, never, "msg-never", "never@example.com")); n != 1 {
		t.Fatalf("%d failures, want the event failed for SQS to deliver again", n)
	}
	if got := e.state(never); got != "" || len(slept) != 3 {
		t.Fatalf("state %q after %d waits, want no state after 3 (300 ms)", got, len(slept))
	}
}

// A complaint puts the address, as sent and as a keyed hash, on the
// suppression list the mailer reads.
func TestComplaintSuppressesTheAddress(t *testing.T) {
	e := newEnv(t)
	const id, msg, addr = "cs_test_complaint", "0100019a-complaint", "complainer@example.com"
	e.sent(id, msg)
	hash := e.h.Hasher.Email(addr)
	if ok, _ := e.ledger.Suppressed(context.Background(), hash); ok {
		t.Fatal("suppressed before the complaint")
	}
	e.run(notification(t, sesevent.Complaint, id, msg, addr))
	if ok, err := e.ledger.Suppressed(context.Background(), hash); !ok || err != nil {
		t.Fatalf("not suppressed after the complaint: %v %v", ok, err)
	}
}

// An autoresponse or a chat account's email answers no order: a complaint
// about it still suppresses the address, and its other events change
// nothing.
func TestComplaintAboutAnEmailOfNoOrderSuppressesTheAddress(t *testing.T) {
	e := newEnv(t)
	for _, kind := range []oracle.MailKind{oracle.MailAutoresponse, oracle.MailChatSignIn, oracle.MailChatPaymentFailed} {
		addr := "annoyed-" + string(kind) + "@example.com"
		event := func(typ sesevent.EventType) events.SQSMessage {
			m := notification(t, typ, "", "0100019a-"+string(kind), addr)
			m.Body = strings.ReplaceAll(m.Body, `\"verdict\"`, `\"`+string(kind)+`\"`)
			return m
		}
		if n := e.run(event(sesevent.Delivery), event(sesevent.Bounce)); n != 0 {
			t.Fatalf("%s: %d events failed", kind, n)
		}
		hash := e.h.Hasher.Email(addr)
		if ok, _ := e.ledger.Suppressed(context.Background(), hash); ok {
			t.Fatalf("%s: a delivery or bounce suppressed the address", kind)
		}
		if n := e.run(event(sesevent.Complaint)); n != 0 {
			t.Fatalf("%s: the complaint failed", kind)
		}
		if ok, err := e.ledger.Suppressed(context.Background(), hash); !ok || err != nil {
			t.Fatalf("%s: not suppressed after the complaint: %v %v", kind, ok, err)
		}
	}
	if a := e.alerts(); len(a) != 0 {
		t.Fatalf("alerts %q", a)
	}
	if c := e.metrics.Counts(); c[obs.EmailsBounced] != 3 || c[obs.EmailsComplained] != 3 {
		t.Fatalf("counted %v, want each kind's bounce and complaint", c)
	}
}

// What carries no state of ours is acknowledged; what cannot be read fails,
// alerts, and goes on to the dead-letter queue.
func TestEventsThatAreNotOursOrNotReadable(t *testing.T) {
	e := newEnv(t)
	const id = "cs_test_notours"
	e.sent(id, "0100019a-right")
	other := notification(t, sesevent.Bounce, id, "0100019a-wrong", "x@example.com")
	untagged := notification(t, sesevent.Delivery, id, "0100019a-right", "x@example.com")
	untagged.Body = strings.ReplaceAll(untagged.Body, mail.TagSession, "someone_else")
	confirm, err := json.Marshal(sesevent.Notification{Type: "SubscriptionConfirmation", MessageID: "confirm", TopicARN: "arn:aws:sns:us-east-1:123456789012:mail-events",
		Message: "You have chosen to subscribe to the topic.", SubscribeURL: "https://sns.us-east-1.amazonaws.com/?Action=ConfirmSubscription", Token: "token"})
	if err != nil {
		t.Fatal(err)
	}
	if n := e.run(other, untagged, events.SQSMessage{MessageId: "confirm", Body: string(confirm)}); n != 0 {
		t.Fatalf("%d acknowledged events failed", n)
	}
	if c := e.metrics.Counts(); len(c) != 0 {
		t.Fatalf("counted %v for acknowledged events", c)
	}
	if got := e.state(id); got != oracle.MailSent {
		t.Fatalf("state %q: an event for another message moved it", got)
	}
	if n := e.run(events.SQSMessage{MessageId: "garbage-1", Body: `{"eventType":"Nope"}`}); n != 1 {
		t.Fatal("garbage was acknowledged")
	}
	if a := e.alerts(); len(a) != 1 || !strings.Contains(a[0], "GARBAGE_JOB") {
		t.Fatalf("alerts %q", a)
	}
	if c := e.metrics.Counts(); !maps.Equal(c, map[string]float64{"FeedbackRecordFailures": 1}) {
		t.Fatalf("counted %v, want one FeedbackRecordFailures", c)
	}
}

// The samples in events/feedback stay valid: they name a session this
// stack has no order for, so they are read and change nothing.
func TestSampleEvents(t *testing.T) {
	e := newEnv(t)
	for file, ev := range testkit.SQSSamples(t, "feedback") {
		if _, err := sesevent.Parse(ev.Records[0].Body); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if n := e.run(ev.Records...); n != 0 {
			t.Fatalf("%s failed", file)
		}
	}
}

// testAlertTimeout is a test's budget for an alert, not Lambda's: the
// alert's Ledger dedupe gets a third of it, and make test's shared moto
// can take over a second to answer under load.
const testAlertTimeout = 30 * time.Second
