package sesevent_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"42sisters.ai/oracle/shared/sesevent"
)

// The fixtures in testdata are the example records of the SES Developer
// Guide ("Examples of event data that Amazon SES publishes to Amazon SNS")
// and the envelopes of the SNS Developer Guide ("Amazon SNS message and JSON
// formats"). notification_bounce.json and notification_complaint.json are
// that guide's Notification example with its Message replaced by the SES
// bounce and complaint records, as a queue subscribed without raw delivery
// receives them.

const docMessageID = "EXAMPLE7c191be45-e9aedb9a-02f9-4d12-a87d-dd0099a07f8a-000000"

func fixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func ms(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestParseDocumentedEvents(t *testing.T) {
	tests := []struct {
		file       string
		typ        sesevent.EventType
		recipients []string
		permanent  bool
		mailTime   time.Time
		check      func(t *testing.T, e sesevent.Event)
	}{
		{
			file: "bounce.json", typ: sesevent.Bounce, recipients: []string{"recipient@example.com"}, permanent: true,
			mailTime: ms("2017-08-05T00:40:02.012Z"),
			check: func(t *testing.T, e sesevent.Event) {
				b := e.Bounce
				if b.BounceSubType != sesevent.BounceGeneral || len(b.BouncedRecipients) != 1 ||
					b.BouncedRecipients[0].Status != "5.1.1" || b.BouncedRecipients[0].Action != "failed" ||
					b.BouncedRecipients[0].DiagnosticCode != "smtp; 550 5.1.1 user unknown" ||
					b.ReportingMTA != "dsn; mta.example.com" || !b.Timestamp.Equal(ms("2017-08-05T00:41:02.669Z")) ||
					b.FeedbackID == "" {
					t.Errorf("bounce = %+v", b)
				}
				if e.Mail.Source != "Sender Name <sender@example.com>" || e.Mail.SendingAccountID != "123456789012" ||
					len(e.Mail.Headers) != 5 || e.Mail.Headers[2] != (sesevent.Header{Name: "Subject", Value: "Message sent from Amazon SES"}) ||
					e.Mail.CommonHeaders == nil || e.Mail.CommonHeaders.Subject != "Message sent from Amazon SES" {
					t.Errorf("mail = %+v", e.Mail)
				}
			},
		},
		{
			file: "complaint.json", typ: sesevent.Complaint, recipients: []string{"recipient@example.com"},
			mailTime: ms("2017-08-05T00:40:01.123Z"),
			check: func(t *testing.T, e sesevent.Event) {
				c := e.Complaint
				if c.ComplaintFeedbackType != "abuse" || !c.ArrivalDate.Equal(ms("2017-08-05T00:41:02.669Z")) ||
					c.ComplaintSubType != "" || !strings.HasPrefix(c.UserAgent, "Mozilla/5.0") {
					t.Errorf("complaint = %+v", c)
				}
			},
		},
		{
			file: "delivery.json", typ: sesevent.Delivery, recipients: []string{"recipient@example.com"},
			mailTime: ms("2016-10-19T23:20:52.240Z"),
			check: func(t *testing.T, e sesevent.Event) {
				d := e.Delivery
				if d.ProcessingTimeMillis != 11893 || d.SMTPResponse != "250 2.6.0 Message received" ||
					d.ReportingMTA != "mta.example.com" || !d.Timestamp.Equal(ms("2016-10-19T23:21:04.133Z")) {
					t.Errorf("delivery = %+v", d)
				}
				if got := e.Tag("myCustomTag2"); got != "myCustomTagValue2" {
					t.Errorf("Tag(myCustomTag2) = %q", got)
				}
			},
		},
		{
			file: "send.json", typ: sesevent.Send, recipients: []string{"recipient@example.com"},
			mailTime: ms("2016-10-14T05:02:16.645Z"),
			check: func(t *testing.T, e sesevent.Event) {
				if e.Send == nil || e.Tag("myCustomTag1") != "myCustomTagValue1" {
					t.Errorf("send = %v, tags %v", e.Send, e.Mail.Tags)
				}
			},
		},
		{
			file: "reject.json", typ: sesevent.Reject, recipients: []string{"sender@example.com"},
			mailTime: ms("2016-10-14T17:38:15.211Z"),
			check: func(t *testing.T, e sesevent.Event) {
				if e.Reject.Reason != "Bad content" {
					t.Errorf("reject = %+v", e.Reject)
				}
			},
		},
		{
			file: "rendering_failure.json", typ: sesevent.RenderingFailure, recipients: []string{"recipient@example.com"},
			mailTime: ms("2018-01-22T18:43:06.197Z"),
			check: func(t *testing.T, e sesevent.Event) {
				if e.Failure.TemplateName != "MyTemplate" || !strings.Contains(e.Failure.ErrorMessage, "attributeName") {
					t.Errorf("failure = %+v", e.Failure)
				}
			},
		},
		{
			file: "delivery_delay.json", typ: sesevent.DeliveryDelay, recipients: []string{"recipient@example.com"},
			mailTime: ms("2020-06-16T00:15:40.641Z"),
			check: func(t *testing.T, e sesevent.Event) {
				d := e.DeliveryDelay
				if d.DelayType != "TransientCommunicationFailure" || !d.ExpirationTime.Equal(ms("2020-06-16T00:25:40.914Z")) ||
					len(d.DelayedRecipients) != 1 || d.DelayedRecipients[0].Status != "4.4.1" {
					t.Errorf("deliveryDelay = %+v", d)
				}
			},
		},
		{
			file: "notification_bounce.json", typ: sesevent.Bounce, recipients: []string{"recipient@example.com"}, permanent: true,
			mailTime: ms("2017-08-05T00:40:02.012Z"),
			check:    func(*testing.T, sesevent.Event) {},
		},
		{
			file: "notification_complaint.json", typ: sesevent.Complaint, recipients: []string{"recipient@example.com"},
			mailTime: ms("2017-08-05T00:40:01.123Z"),
			check:    func(*testing.T, sesevent.Event) {},
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			e, err := sesevent.Parse(fixture(t, tt.file))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if e.EventType != tt.typ {
				t.Errorf("EventType = %q, want %q", e.EventType, tt.typ)
			}
			if e.Mail.MessageID != docMessageID {
				t.Errorf("messageId = %q", e.Mail.MessageID)
			}
			if !e.Mail.Timestamp.Equal(tt.mailTime) {
				t.Errorf("mail.timestamp = %v, want %v", e.Mail.Timestamp, tt.mailTime)
			}
			if got := e.Recipients(); !slices.Equal(got, tt.recipients) {
				t.Errorf("Recipients() = %v, want %v", got, tt.recipients)
			}
			if got := e.PermanentBounce(); got != tt.permanent {
				t.Errorf("PermanentBounce() = %v, want %v", got, tt.permanent)
			}
			if got := e.Tag(sesevent.TagConfigurationSet); got != "ConfigSet" {
				t.Errorf("Tag(%s) = %q, want ConfigSet", sesevent.TagConfigurationSet, got)
			}
			tt.check(t, e)
		})
	}
}

func TestParseRejectsGarbage(t *testing.T) {
	tests := []struct {
		name string
		body string
		want string // in the error's text
		// notification: the error wraps ErrNotANotification
		notification bool
	}{
		{name: "empty", body: "", want: "empty"},
		{name: "blank", body: " \n\t", want: "empty"},
		{name: "not JSON", body: "Hello world!", want: "not a JSON object"},
		{name: "an array", body: `[{"eventType":"Send"}]`, want: "not a JSON object"},
		{name: "an empty object", body: `{}`, want: "no eventType"},
		{name: "null", body: `null`, want: "no eventType"},
		{name: "open is not tracked", body: `{"eventType":"Open","mail":{"messageId":"m"},"open":{}}`, want: `unsupported eventType "Open"`},
		{name: "an address as event type", body: `{"eventType":"bob@example.com","mail":{"messageId":"m"}}`, want: "unsupported eventType (not shown)"},
		{name: "event type of the wrong case", body: `{"eventType":"bounce","mail":{"messageId":"m"},"bounce":{}}`, want: "unsupported eventType"},
		{name: "no message id", body: `{"eventType":"Send","mail":{"destination":["bob@example.com"]},"send":{}}`, want: "no mail.messageId"},
		{name: "blank message id", body: `{"eventType":"Send","mail":{"messageId":" "},"send":{}}`, want: "no mail.messageId"},
		{name: "no mail", body: `{"eventType":"Send","send":{}}`, want: "no mail.messageId"},
		{name: "bounce without its object", body: `{"eventType":"Bounce","mail":{"messageId":"m"}}`, want: "no bounce object"},
		{name: "complaint without its object", body: `{"eventType":"Complaint","mail":{"messageId":"m"}}`, want: "no complaint object"},
		{name: "delivery without its object", body: `{"eventType":"Delivery","mail":{"messageId":"m"},"bounce":{}}`, want: "no delivery object"},
		{name: "rendering failure without its object", body: `{"eventType":"Rendering Failure","mail":{"messageId":"m"}}`, want: "no failure object"},
		{name: "feedback notification", body: `{"notificationType":"Bounce","mail":{"messageId":"m"},"bounce":{}}`, want: "feedback notification"},
		{name: "an address as timestamp", body: `{"eventType":"Send","mail":{"messageId":"m","timestamp":"bob@example.com"}}`, want: "wrong form"},
		{name: "destination of the wrong type", body: `{"eventType":"Send","mail":{"messageId":"m","destination":"bob@example.com"}}`, want: "cannot unmarshal"},
		{name: "tag of the wrong type", body: `{"eventType":"Send","mail":{"messageId":"m","tags":{"bob@example.com":1}}}`, want: "the event"},
		{name: "cut short", body: `{"eventType":"Send","mail":{"messageId":"bob@exam`, want: "not a JSON object"},
		{name: "subscription confirmation", body: fixture(t, "subscription_confirmation.json"), want: `Type "SubscriptionConfirmation"`, notification: true},
		{name: "unsubscribe confirmation", body: fixture(t, "unsubscribe_confirmation.json"), want: `Type "UnsubscribeConfirmation"`, notification: true},
		{name: "envelope of an address type", body: `{"Type":"bob@example.com","Message":"{}"}`, want: "(not shown)", notification: true},
		{name: "envelope of no type", body: `{"Type":"","Message":"{}"}`, want: "not a notification", notification: true},
		{name: "notification without message", body: `{"Type":"Notification","MessageId":"n"}`, want: "no Message"},
		{name: "notification of plain text", body: `{"Type":"Notification","Message":"Hello world!"}`, want: "the event"},
		{name: "notification of a notification", body: `{"Type":"Notification","Message":"{\"Type\":\"Notification\",\"Message\":\"{}\"}"}`, want: "no eventType"},
		{name: "envelope timestamp of an address", body: `{"Type":"Notification","Timestamp":"bob@example.com","Message":"{}"}`, want: "wrong form"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := sesevent.Parse(tt.body)
			if err == nil {
				t.Fatalf("Parse accepted it: %+v", e)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not say %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "@") {
				t.Errorf("error %q holds an address", err)
			}
			if got := errors.Is(err, sesevent.ErrNotANotification); got != tt.notification {
				t.Errorf("errors.Is(err, ErrNotANotification) = %v, want %v (%v)", got, tt.notification, err)
			}
		})
	}
}

// TestRoundTrip marshals each documented event, bare and in an SNS
// envelope, and parses it back to the same value.
func TestRoundTrip(t *testing.T) {
	for _, file := range []string{"bounce.json", "complaint.json", "delivery.json", "send.json", "reject.json", "rendering_failure.json", "delivery_delay.json"} {
		t.Run(file, func(t *testing.T) {
			want, err := sesevent.Parse(fixture(t, file))
			if err != nil {
				t.Fatal(err)
			}
			b, err := json.Marshal(want)
			if err != nil {
				t.Fatal(err)
			}
			got, err := sesevent.Parse(string(b))
			if err != nil {
				t.Fatalf("parse %s: %v", b, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("bare round trip:\n got %+v\nwant %+v", got, want)
			}
			env, err := json.Marshal(sesevent.Notification{
				Type: sesevent.NotificationType, MessageID: "22b80b92-fdea-4c2c-8f9d-bdfb0c7bf324",
				TopicARN: "arn:aws:sns:us-east-1:123456789012:events", Message: string(b),
				Timestamp: ms("2026-04-16T12:00:00.123Z"), SignatureVersion: "2", Signature: "c2ln",
			})
			if err != nil {
				t.Fatal(err)
			}
			got, err = sesevent.Parse(string(env))
			if err != nil {
				t.Fatalf("parse %s: %v", env, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("enveloped round trip:\n got %+v\nwant %+v", got, want)
			}
		})
	}
}

// TestBuiltEventRoundTrip: an event built from the types, as the fake SES
// builds them, marshals into what Parse reads back, timestamps included.
func TestBuiltEventRoundTrip(t *testing.T) {
	at := time.Date(2026, 4, 16, 12, 0, 0, 123e6, time.UTC)
	want := sesevent.Event{
		EventType: sesevent.Bounce,
		Mail: sesevent.Mail{
			Timestamp: at, Source: "Oracle <oracle@example.com>", MessageID: "0100019d-0001",
			Destination: []string{"bounce@simulator.amazonses.com"},
			Tags:        map[string][]string{sesevent.TagConfigurationSet: {"oracle"}, "session_id": {"cs_test_a1B2"}, "mail_kind": {"verdict"}},
		},
		Bounce: &sesevent.BounceInfo{
			BounceType: sesevent.BouncePermanent, BounceSubType: sesevent.BounceOnAccountSuppressionList,
			BouncedRecipients: []sesevent.BouncedRecipient{{EmailAddress: "bounce@simulator.amazonses.com", Action: "failed", Status: "5.1.1"}},
			Timestamp:         at.Add(time.Second), FeedbackID: "f-1",
		},
	}
	if err := want.Validate(); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	for _, absent := range []string{`"complaint"`, `"delivery"`, `"send"`, `"arrivalDate"`, `"headers"`} {
		if strings.Contains(string(b), absent) {
			t.Errorf("%s holds %s, which the event does not have", b, absent)
		}
	}
	got, err := sesevent.Parse(string(b))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	if got.Tag("session_id") != "cs_test_a1B2" || got.Tag("mail_kind") != "verdict" || got.Tag("absent") != "" {
		t.Errorf("tags = %v", got.Mail.Tags)
	}
	if !got.PermanentBounce() {
		t.Error("PermanentBounce() = false for a Permanent bounce")
	}
}

func TestRecipients(t *testing.T) {
	mail := sesevent.Mail{MessageID: "m", Destination: []string{"a@example.com", "b@example.com"}}
	tests := []struct {
		name string
		e    sesevent.Event
		want []string
	}{
		{"send names the destination", sesevent.Event{EventType: sesevent.Send, Mail: mail, Send: &sesevent.SendInfo{}}, []string{"a@example.com", "b@example.com"}},
		{"bounce names the bounced", sesevent.Event{EventType: sesevent.Bounce, Mail: mail, Bounce: &sesevent.BounceInfo{
			BouncedRecipients: []sesevent.BouncedRecipient{{EmailAddress: "b@example.com"}}}}, []string{"b@example.com"}},
		{"complaint names the complainers", sesevent.Event{EventType: sesevent.Complaint, Mail: mail, Complaint: &sesevent.ComplaintInfo{
			ComplainedRecipients: []sesevent.ComplainedRecipient{{EmailAddress: "a@example.com"}}}}, []string{"a@example.com"}},
		{"delivery names the delivered", sesevent.Event{EventType: sesevent.Delivery, Mail: mail, Delivery: &sesevent.DeliveryInfo{
			Recipients: []string{"b@example.com"}}}, []string{"b@example.com"}},
		{"delay names the delayed", sesevent.Event{EventType: sesevent.DeliveryDelay, Mail: mail, DeliveryDelay: &sesevent.DeliveryDelayInfo{
			DelayedRecipients: []sesevent.DelayedRecipient{{EmailAddress: "a@example.com"}}}}, []string{"a@example.com"}},
		{"a bounce naming no one falls back to the destination", sesevent.Event{EventType: sesevent.Bounce, Mail: mail, Bounce: &sesevent.BounceInfo{}}, []string{"a@example.com", "b@example.com"}},
		{"a transient bounce is a bounce", sesevent.Event{EventType: sesevent.Bounce, Mail: mail, Bounce: &sesevent.BounceInfo{BounceType: sesevent.BounceTransient,
			BouncedRecipients: []sesevent.BouncedRecipient{{EmailAddress: "a@example.com"}}}}, []string{"a@example.com"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.e.Recipients()
			if !slices.Equal(got, tt.want) {
				t.Fatalf("Recipients() = %v, want %v", got, tt.want)
			}
			got[0] = "changed"
			if again := tt.e.Recipients(); !slices.Equal(again, tt.want) {
				t.Errorf("changing the result changed the event: %v", again)
			}
			if tt.e.PermanentBounce() {
				t.Error("PermanentBounce() = true for an event that is not a Permanent bounce")
			}
		})
	}
}
