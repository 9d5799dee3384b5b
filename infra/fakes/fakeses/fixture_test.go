package fakeses_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"
	"github.com/aws/aws-sdk-go-v2/service/sesv2/types"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"42sisters.ai/oracle/infra/fakes/fakeses"
	"42sisters.ai/oracle/infra/motoserver"
	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/sesevent"
)

const (
	region    = "us-east-1"
	account   = "123456789012" // moto's
	configSet = "oracle-mail"
	sender    = "Oracle <oracle@example.com>"
	buyer     = "buyer@example.com"
	sessionID = "cs_test_a1B2c3D4e5F6g7H8"
)

var fixedNow = time.Date(2026, 4, 16, 12, 0, 0, 0, time.UTC)

// fixture is a front before moto, publishing to a topic of its own that a
// queue of its own is subscribed to, as SNS delivers to SQS without raw
// delivery.
type fixture struct {
	front    *fakeses.Server
	url      string // the front's
	moto     string
	cfg      aws.Config // moto's
	ses      *sesv2.Client
	sqs      *sqs.Client
	queueURL string
	topicARN string
	logs     *testkit.Buffer
}

// newFixture starts a front. The SES client reaches moto through it and
// never retries, so each call meets exactly one queued failure. At the end
// the test fails if the front logged an address.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	f := &fixture{moto: motoserver.ForTest(t), logs: &testkit.Buffer{}}
	f.cfg = awsenv.ForEndpoint(f.moto, region)
	name := "fakeses-" + randomHex(t)
	topic, err := sns.NewFromConfig(f.cfg).CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String(name)})
	if err != nil {
		t.Fatalf("create topic: %v", err)
	}
	f.topicARN = aws.ToString(topic.TopicArn)
	f.sqs = sqs.NewFromConfig(f.cfg)
	q, err := f.sqs.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name)})
	if err != nil {
		t.Fatalf("create queue: %v", err)
	}
	f.queueURL = aws.ToString(q.QueueUrl)
	if _, err := sns.NewFromConfig(f.cfg).Subscribe(ctx, &sns.SubscribeInput{
		TopicArn: topic.TopicArn, Protocol: aws.String("sqs"),
		Endpoint: aws.String(fmt.Sprintf("arn:aws:sqs:%s:%s:%s", region, account, name)),
	}); err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	t.Cleanup(func() {
		if strings.Contains(f.logs.String(), "@") {
			t.Errorf("the front logged an address:\n%s", f.logs)
		}
	})
	f.start(t, fakeses.Options{Moto: f.moto, AWS: f.cfg, ConfigurationSet: configSet, EventsTopicARN: f.topicARN})
	if err := motoserver.VerifySender(ctx, f.ses, sender); err != nil {
		t.Fatalf("verify the sender through the front: %v", err)
	}
	return f
}

// start serves a front configured by o (its clock and logger set here).
func (f *fixture) start(t *testing.T, o fakeses.Options) {
	t.Helper()
	o.Now = testkit.NewClock(fixedNow).Now
	o.Logger = f.logger()
	f.front = fakeses.New(o)
	srv := httptest.NewServer(f.front)
	t.Cleanup(srv.Close)
	f.url = srv.URL
	f.ses = sesv2.NewFromConfig(f.cfg, func(o *sesv2.Options) {
		o.BaseEndpoint = aws.String(srv.URL)
		o.RetryMaxAttempts = 1
	})
}

// logger writes to the fixture's log buffer, which the test checks for
// addresses at its end.
func (f *fixture) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(f.logs, nil))
}

func randomHex(t *testing.T) string {
	t.Helper()
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// rawMessage is a MIME message as the mailer builds one.
func rawMessage(to ...string) []byte {
	return []byte("From: " + sender + "\r\n" +
		"To: " + strings.Join(to, ", ") + "\r\n" +
		"Subject: =?UTF-8?q?Your_verdict_=E2=80=94_GREEN?=\r\n" +
		"Date: Thu, 16 Apr 2026 12:00:00 +0000\r\n" +
		"MIME-Version: 1.0\r\n" +
		"Content-Type: text/plain;\r\n charset=UTF-8\r\n" +
		"Content-Transfer-Encoding: quoted-printable\r\n" +
		"\r\n" +
		"The verdict is GREEN.\r\n")
}

// input is a SendEmail request to the recipients, with the configuration
// set configSet ("" for none) and the service's two tags.
func input(configSet string, to ...string) *sesv2.SendEmailInput {
	in := &sesv2.SendEmailInput{
		FromEmailAddress: aws.String(sender),
		Destination:      &types.Destination{ToAddresses: to},
		Content:          &types.EmailContent{Raw: &types.RawMessage{Data: rawMessage(to...)}},
		EmailTags: []types.MessageTag{
			{Name: aws.String("session_id"), Value: aws.String(sessionID)},
			{Name: aws.String("mail_kind"), Value: aws.String("verdict")},
		},
	}
	if configSet != "" {
		in.ConfigurationSetName = aws.String(configSet)
	}
	return in
}

// send sends a message that must be accepted and returns its id.
func (f *fixture) send(t *testing.T, in *sesv2.SendEmailInput) string {
	t.Helper()
	out, err := f.ses.SendEmail(context.Background(), in)
	if err != nil {
		t.Fatalf("SendEmail: %v", err)
	}
	if aws.ToString(out.MessageId) == "" {
		t.Fatal("SendEmail answered no message id")
	}
	return aws.ToString(out.MessageId)
}

// events waits for n events on the queue and returns them, parsed, in the
// order received, then checks that no more come. SNS delivers to SQS
// asynchronously on AWS, and the front publishes after answering, so it
// long-polls within a bound.
func (f *fixture) events(t *testing.T, n int) []sesevent.Event {
	t.Helper()
	var out []sesevent.Event
	receive := func(wait int32) int {
		r, err := f.sqs.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(f.queueURL), MaxNumberOfMessages: 10, WaitTimeSeconds: wait, VisibilityTimeout: 300,
		})
		if err != nil {
			t.Fatalf("receive events: %v", err)
		}
		for _, m := range r.Messages {
			e, err := sesevent.Parse(aws.ToString(m.Body))
			if err != nil {
				t.Fatalf("parse event %s: %v", aws.ToString(m.Body), err)
			}
			out = append(out, e)
		}
		return len(r.Messages)
	}
	for deadline := time.Now().Add(20 * time.Second); len(out) < n && time.Now().Before(deadline); {
		receive(1)
	}
	if len(out) != n {
		t.Fatalf("received %d events, want %d: %v", len(out), n, eventTypes(out))
	}
	// Nothing else may be waiting; Call.Events, which the tests check
	// too, is the exact list the front publishes.
	if receive(0) != 0 {
		t.Fatalf("received more than %d events: %v", n, eventTypes(out))
	}
	return out
}

func eventTypes(es []sesevent.Event) []sesevent.EventType {
	var out []sesevent.EventType
	for _, e := range es {
		out = append(out, e.EventType)
	}
	return out
}

// do sends a request to the front and returns the status and body.
func (f *fixture) do(t *testing.T, method, path, body string) (int, string) {
	t.Helper()
	return do(t, f.url, method, path, body)
}

func do(t *testing.T, base, method, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, base+path, bytes.NewBufferString(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read: %v", method, path, err)
	}
	return resp.StatusCode, string(b)
}

// control posts a control that must be accepted.
func (f *fixture) control(t *testing.T, body string) {
	t.Helper()
	if status, answer := f.do(t, http.MethodPost, "/_control", body); status != http.StatusOK {
		t.Fatalf("control %s: %d %s", body, status, answer)
	}
}
