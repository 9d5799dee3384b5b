package fakeses_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"
	sestypes "github.com/aws/aws-sdk-go-v2/service/sesv2/types"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/smithy-go"

	"42sisters.ai/oracle/infra/fakes/fakeses"
	"42sisters.ai/oracle/infra/motoserver"
	"42sisters.ai/oracle/shared/mail"
	"42sisters.ai/oracle/shared/sesevent"
)

// failures are the failures the mailer must tell apart, as SES answers
// them, and the class its classifier gives each.
var failures = []struct {
	name       string
	control    string
	status     int
	code       string
	retryAfter string
	class      mail.Class
}{
	{"unavailable", `{"status":503,"code":"ServiceUnavailable"}`, 503, "ServiceUnavailable", "", mail.Transient},
	{"throttled", `{"status":429,"code":"TooManyRequestsException","retry_after_s":120}`, 429, "TooManyRequestsException", "120", mail.Transient},
	{"rejected", `{"status":400,"code":"MessageRejected"}`, 400, "MessageRejected", "", mail.Permanent},
	{"paused", `{"status":400,"code":"SendingPausedException"}`, 400, "SendingPausedException", "", mail.Blocked},
}

func queueAll(t *testing.T, f *fixture) {
	t.Helper()
	var parts []string
	for _, fl := range failures {
		parts = append(parts, fl.control)
	}
	f.control(t, `{"fail":[`+strings.Join(parts, ",")+`]}`)
}

// TestQueuedFailuresReachTheSDK: queued failures answer the next sends in
// order, each as the SDK's smithy.APIError with SES's code, status, request
// id and Retry-After, which the mailer's classifier reads; moto never sees
// them, and the send after them goes through.
func TestQueuedFailuresReachTheSDK(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	to := "buyer-" + randomHex(t) + "@example.com"

	queueAll(t, f)
	for _, fl := range failures {
		t.Run("sdk/"+fl.name, func(t *testing.T) {
			_, err := f.ses.SendEmail(ctx, input("", to))
			var api smithy.APIError
			if !errors.As(err, &api) {
				t.Fatalf("SendEmail error %v is not a smithy.APIError", err)
			}
			if api.ErrorCode() != fl.code || api.ErrorMessage() == "" {
				t.Errorf("code %q message %q, want %q with a message", api.ErrorCode(), api.ErrorMessage(), fl.code)
			}
			var re *awshttp.ResponseError
			if !errors.As(err, &re) {
				t.Fatalf("SendEmail error %v carries no HTTP response", err)
			}
			if re.HTTPStatusCode() != fl.status || re.ServiceRequestID() == "" {
				t.Errorf("status %d request id %q, want %d and an id", re.HTTPStatusCode(), re.ServiceRequestID(), fl.status)
			}
			if got := re.Response.Header.Get("Retry-After"); got != fl.retryAfter {
				t.Errorf("Retry-After %q, want %q", got, fl.retryAfter)
			}
		})
	}
	first := f.send(t, input("", to))

	queueAll(t, f)
	ses := &mail.SES{Client: mail.NewClient(f.cfg, func(o *sesv2.Options) {
		o.BaseEndpoint = aws.String(f.url)
		o.RetryMaxAttempts = 1
	})}
	msg := mail.Outgoing{From: sender, To: to, Subject: "Your verdict", Text: "GREEN"}
	for _, fl := range failures {
		t.Run("mailer/"+fl.name, func(t *testing.T) {
			_, err := ses.Send(ctx, msg)
			var me *mail.Error
			if !errors.As(err, &me) {
				t.Fatalf("Send error %v is not a *mail.Error", err)
			}
			if me.Class != fl.class || me.Code != fl.code || me.Status != fl.status {
				t.Errorf("got %s %s %d, want %s %s %d", me.Class, me.Code, me.Status, fl.class, fl.code, fl.status)
			}
			want := time.Duration(0)
			if fl.retryAfter != "" {
				want = 120 * time.Second
			}
			if got := mail.RetryAfter(err); got != want {
				t.Errorf("RetryAfter = %s, want %s", got, want)
			}
		})
	}
	second, err := ses.Send(ctx, msg)
	if err != nil {
		t.Fatalf("the send after the queue: %v", err)
	}

	var statuses []int
	for _, c := range f.front.Calls() {
		statuses = append(statuses, c.Status)
		if c.Injected != (c.Status != http.StatusOK) || (c.Status == http.StatusOK) != (c.MessageID != "") || c.RequestID == "" && c.Injected {
			t.Errorf("call %+v", c)
		}
	}
	if want := []int{503, 429, 400, 400, 200, 503, 429, 400, 400, 200}; !slices.Equal(statuses, want) {
		t.Errorf("calls answered %v, want %v", statuses, want)
	}
	sent, err := motoserver.Mailbox{}.Sent(ctx, f.moto)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range sent {
		if slices.Contains(s.To, to) {
			ids = append(ids, s.ID)
		}
	}
	if !slices.Equal(ids, []string{first, second}) {
		t.Errorf("moto holds %v for the recipient, want only the two sends that passed %v", ids, []string{first, second})
	}
}

// TestSendPublishesSendAndDelivery: a send in the configuration set reaches
// moto's mailbox, and its Send and Delivery events reach the topic with the
// message id, the sender, the recipient, the headers and the tags.
func TestSendPublishesSendAndDelivery(t *testing.T) {
	f := newFixture(t)
	id := f.send(t, input(configSet, buyer))

	calls := f.front.Calls()
	if len(calls) != 1 {
		t.Fatalf("%d calls, want 1", len(calls))
	}
	want := fakeses.Call{
		Time: fixedNow, Status: http.StatusOK, MessageID: id, ConfigurationSet: configSet,
		Tags:   map[string]string{"session_id": sessionID, "mail_kind": "verdict"},
		Events: []sesevent.EventType{sesevent.Send, sesevent.Delivery},
	}
	got := calls[0]
	got.RequestID = "" // moto's
	if !reflect.DeepEqual(got, want) {
		t.Errorf("call\n got %+v\nwant %+v", got, want)
	}

	// Read through the front: moto's own API passes through it too.
	sent, err := motoserver.Mailbox{}.Sent(context.Background(), f.url)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(sent, func(s motoserver.Sent) bool { return s.ID == id })
	if i < 0 || !slices.Equal(sent[i].To, []string{buyer}) || sent[i].Subject != "Your verdict — GREEN" {
		t.Fatalf("moto's mailbox has no message %s to the buyer", id)
	}

	events := f.events(t, 2)
	if got := eventTypes(events); !slices.Equal(got, want.Events) {
		t.Fatalf("events %v, want %v", got, want.Events)
	}
	for _, e := range events {
		m := e.Mail
		if m.MessageID != id || m.Source != sender || !slices.Equal(m.Destination, []string{buyer}) ||
			!m.Timestamp.Equal(fixedNow) || m.SendingAccountID != account ||
			m.SourceARN != "arn:aws:ses:"+region+":"+account+":identity/oracle@example.com" {
			t.Errorf("%s mail = %+v", e.EventType, m)
		}
		for name, value := range map[string]string{
			"session_id": sessionID, "mail_kind": "verdict", sesevent.TagConfigurationSet: configSet, "ses:from-domain": "example.com",
		} {
			if got := e.Tag(name); got != value {
				t.Errorf("%s Tag(%s) = %q, want %q", e.EventType, name, got, value)
			}
		}
		ch := m.CommonHeaders
		if ch == nil || ch.Subject != "Your verdict — GREEN" || !slices.Equal(ch.From, []string{sender}) ||
			!slices.Equal(ch.To, []string{buyer}) || ch.MessageID != id || ch.Date != "Thu, 16 Apr 2026 12:00:00 +0000" {
			t.Errorf("%s commonHeaders = %+v", e.EventType, ch)
		}
		if i := slices.IndexFunc(m.Headers, func(h sesevent.Header) bool { return h.Name == "Content-Type" }); i < 0 || m.Headers[i].Value != "text/plain; charset=UTF-8" {
			t.Errorf("%s headers = %+v, want Content-Type unfolded", e.EventType, m.Headers)
		}
		if !slices.Equal(e.Recipients(), []string{buyer}) || e.PermanentBounce() {
			t.Errorf("%s recipients %v, permanent bounce %v", e.EventType, e.Recipients(), e.PermanentBounce())
		}
	}
	if d := events[1].Delivery; !d.Timestamp.Equal(fixedNow) || d.ProcessingTimeMillis != 0 || d.SMTPResponse == "" {
		t.Errorf("delivery = %+v", d)
	}
}

// TestSimulatorAddresses: the mailbox simulator's addresses give the events
// SES gives them, each send's events once.
func TestSimulatorAddresses(t *testing.T) {
	const (
		bounce     = "bounce@simulator.amazonses.com"
		complaint  = "complaint@simulator.amazonses.com"
		suppressed = "suppressionlist@simulator.amazonses.com"
		success    = "success@simulator.amazonses.com"
	)
	tests := []struct {
		name  string
		to    []string
		want  []sesevent.EventType
		check func(t *testing.T, events []sesevent.Event)
	}{
		{
			name: "success", to: []string{success}, want: []sesevent.EventType{sesevent.Send, sesevent.Delivery},
			check: func(t *testing.T, es []sesevent.Event) {
				if !slices.Equal(es[1].Recipients(), []string{success}) {
					t.Errorf("delivered to %v", es[1].Recipients())
				}
			},
		},
		{
			name: "bounce", to: []string{bounce}, want: []sesevent.EventType{sesevent.Send, sesevent.Bounce},
			check: func(t *testing.T, es []sesevent.Event) {
				b := es[1]
				if !b.PermanentBounce() || b.Bounce.BounceSubType != sesevent.BounceGeneral || !slices.Equal(b.Recipients(), []string{bounce}) ||
					b.Bounce.BouncedRecipients[0].Status != "5.1.1" || b.Bounce.FeedbackID == "" || !b.Bounce.Timestamp.Equal(fixedNow) {
					t.Errorf("bounce = %+v", b.Bounce)
				}
			},
		},
		{
			name: "complaint", to: []string{complaint}, want: []sesevent.EventType{sesevent.Send, sesevent.Delivery, sesevent.Complaint},
			check: func(t *testing.T, es []sesevent.Event) {
				c := es[2]
				if !slices.Equal(c.Recipients(), []string{complaint}) || c.Complaint.ComplaintFeedbackType != "abuse" ||
					c.Complaint.FeedbackID == "" || c.PermanentBounce() {
					t.Errorf("complaint = %+v", c.Complaint)
				}
			},
		},
		{
			name: "suppression list", to: []string{suppressed}, want: []sesevent.EventType{sesevent.Send, sesevent.Bounce},
			check: func(t *testing.T, es []sesevent.Event) {
				b := es[1]
				if !b.PermanentBounce() || b.Bounce.BounceSubType != sesevent.BounceOnAccountSuppressionList || !slices.Equal(b.Recipients(), []string{suppressed}) {
					t.Errorf("bounce = %+v", b.Bounce)
				}
			},
		},
		{
			name: "a bounce among deliveries", to: []string{buyer, "Bounce@Simulator.AmazonSES.com"},
			want: []sesevent.EventType{sesevent.Send, sesevent.Delivery, sesevent.Bounce},
			check: func(t *testing.T, es []sesevent.Event) {
				if got := es[0].Recipients(); !slices.Equal(got, []string{buyer, "Bounce@Simulator.AmazonSES.com"}) {
					t.Errorf("send names %v", got)
				}
				if got := es[1].Recipients(); !slices.Equal(got, []string{buyer}) {
					t.Errorf("delivery names %v", got)
				}
				if got := es[2].Recipients(); !slices.Equal(got, []string{"Bounce@Simulator.AmazonSES.com"}) {
					t.Errorf("bounce names %v", got)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			id := f.send(t, input(configSet, tt.to...))
			if got := f.front.Calls()[0].Events; !slices.Equal(got, tt.want) {
				t.Errorf("the front plans %v, want %v", got, tt.want)
			}
			events := f.events(t, len(tt.want))
			if got := eventTypes(events); !slices.Equal(got, tt.want) {
				t.Fatalf("events %v, want %v", got, tt.want)
			}
			for _, e := range events {
				if e.Mail.MessageID != id || e.Tag("session_id") != sessionID {
					t.Errorf("%s: message id %q, session %q", e.EventType, e.Mail.MessageID, e.Tag("session_id"))
				}
			}
			tt.check(t, events)
		})
	}
}

// TestNoEventsOutsideTheConfigurationSet: a send without the configuration
// set, or with another, is delivered but publishes nothing.
func TestNoEventsOutsideTheConfigurationSet(t *testing.T) {
	f := newFixture(t)
	f.send(t, input("", buyer))
	f.send(t, input("another-set", "bounce@simulator.amazonses.com"))
	id := f.send(t, input(configSet, buyer))
	calls := f.front.Calls()
	if len(calls) != 3 || len(calls[0].Events) != 0 || len(calls[1].Events) != 0 || len(calls[2].Events) != 2 {
		t.Fatalf("calls %+v: want events for the third only", calls)
	}
	if calls[1].ConfigurationSet != "another-set" {
		t.Errorf("the second call's configuration set is %q", calls[1].ConfigurationSet)
	}
	for _, e := range f.events(t, 2) {
		if e.Mail.MessageID != id {
			t.Errorf("a %s event of message %s, want only %s's", e.EventType, e.Mail.MessageID, id)
		}
	}
}

// TestFailAlwaysThenReset: fail_always fails every send that finds no
// queued failure, until a reset.
func TestFailAlwaysThenReset(t *testing.T) {
	f := newFixture(t)
	f.control(t, `{"fail_always":{"status":503,"code":"ServiceUnavailable"},"fail":[{"status":400,"code":"MessageRejected"}]}`)
	for i, want := range []string{"MessageRejected", "ServiceUnavailable", "ServiceUnavailable", "ServiceUnavailable"} {
		_, err := f.ses.SendEmail(context.Background(), input(configSet, buyer))
		var api smithy.APIError
		if !errors.As(err, &api) || api.ErrorCode() != want {
			t.Fatalf("send %d: %v, want %s", i, err, want)
		}
	}
	if status, body := f.do(t, http.MethodGet, "/_control", ""); status != http.StatusOK || body != `{"queued":[],"fail_always":{"status":503,"code":"ServiceUnavailable"}}` {
		t.Errorf("GET /_control: %d %s", status, body)
	}
	f.control(t, `{"reset":true}`)
	if status, body := f.do(t, http.MethodGet, "/_control", ""); status != http.StatusOK || body != `{"queued":[],"fail_always":null}` {
		t.Errorf("GET /_control after reset: %d %s", status, body)
	}
	id := f.send(t, input(configSet, buyer))
	for _, e := range f.events(t, 2) {
		if e.Mail.MessageID != id {
			t.Errorf("an event of %s: the failed sends must publish nothing", e.Mail.MessageID)
		}
	}
	var got []int
	for _, c := range f.front.Calls() {
		got = append(got, c.Status)
	}
	if want := []int{400, 503, 503, 503, 200}; !slices.Equal(got, want) {
		t.Errorf("calls answered %v, want %v", got, want)
	}
}

// TestOtherCallsPassThrough: SES calls other than SendEmail, other
// services' calls and moto's own API reach moto unchanged.
func TestOtherCallsPassThrough(t *testing.T) {
	f := newFixture(t) // verified the sender through the front
	ctx := context.Background()
	id, err := f.ses.GetEmailIdentity(ctx, &sesv2.GetEmailIdentityInput{EmailIdentity: aws.String("oracle@example.com")})
	if err != nil {
		t.Fatalf("GetEmailIdentity through the front: %v", err)
	}
	// moto reports every identity unverified for sending; that it knows
	// the one created through the front is what passing through means.
	if id.IdentityType != sestypes.IdentityTypeEmailAddress {
		t.Errorf("identity type %q, want an email address", id.IdentityType)
	}
	// One moto serves every test package, so its topics run to many pages:
	// ask for this test's topic, not for a list.
	attrs, err := sns.NewFromConfig(f.cfg, func(o *sns.Options) { o.BaseEndpoint = aws.String(f.url) }).
		GetTopicAttributes(ctx, &sns.GetTopicAttributesInput{TopicArn: aws.String(f.topicARN)})
	if err != nil || attrs.Attributes["TopicArn"] != f.topicARN {
		t.Errorf("SNS through the front does not know %s: %v", f.topicARN, err)
	}
	if _, err := (motoserver.Mailbox{}).Sent(ctx, f.url); err != nil {
		t.Errorf("moto's API through the front: %v", err)
	}
	if n := len(f.front.Calls()); n != 0 {
		t.Errorf("%d calls recorded; only SendEmail is", n)
	}
}

// TestCallsEndpoint: GET /_calls lists what Calls returns, with the tags
// and no address; DELETE /_calls forgets.
func TestCallsEndpoint(t *testing.T) {
	f := newFixture(t)
	f.control(t, `{"fail":[{"status":429,"code":"TooManyRequestsException","retry_after_s":5}]}`)
	if _, err := f.ses.SendEmail(context.Background(), input(configSet, buyer)); err == nil {
		t.Fatal("the queued failure did not fail the send")
	}
	f.send(t, input(configSet, buyer))

	status, body := f.do(t, http.MethodGet, "/_calls", "")
	if status != http.StatusOK {
		t.Fatalf("GET /_calls: %d %s", status, body)
	}
	if strings.Contains(body, "@") {
		t.Errorf("GET /_calls holds an address: %s", body)
	}
	var got []fakeses.Call
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatalf("GET /_calls: %v: %s", err, body)
	}
	if !reflect.DeepEqual(got, f.front.Calls()) || len(got) != 2 {
		t.Errorf("GET /_calls\n got %+v\nwant %+v", got, f.front.Calls())
	}
	if !strings.Contains(body, `"session_id":"`+sessionID+`"`) || !strings.Contains(body, `"code":"TooManyRequestsException"`) {
		t.Errorf("GET /_calls lacks the tags or the code: %s", body)
	}
	if status, _ := f.do(t, http.MethodDelete, "/_calls", ""); status != http.StatusNoContent {
		t.Errorf("DELETE /_calls: %d", status)
	}
	if n := len(f.front.Calls()); n != 0 {
		t.Errorf("%d calls after DELETE", n)
	}
	f.events(t, 2) // the failed send published nothing
}

// TestPublishFailureDoesNotFailTheSend: when the topic cannot be published
// to, the send still succeeds and the failure is logged.
func TestPublishFailureDoesNotFailTheSend(t *testing.T) {
	f := newFixture(t)
	missing := "arn:aws:sns:" + region + ":" + account + ":fakeses-missing-" + randomHex(t)
	front := fakeses.New(fakeses.Options{Moto: f.moto, AWS: f.cfg, ConfigurationSet: configSet, EventsTopicARN: missing, Logger: f.logger()})
	srv := httptest.NewServer(front)
	defer srv.Close()
	ses := sesv2.NewFromConfig(f.cfg, func(o *sesv2.Options) { o.BaseEndpoint = aws.String(srv.URL); o.RetryMaxAttempts = 1 })
	if _, err := ses.SendEmail(context.Background(), input(configSet, buyer)); err != nil {
		t.Fatalf("SendEmail: %v", err)
	}
	srv.Close() // waits for the handler, which publishes after answering
	if !strings.Contains(f.logs.String(), "fakeses: publish event") {
		t.Errorf("no publishing failure logged:\n%s", f.logs)
	}
}
