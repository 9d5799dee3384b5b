package tracing_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"go.opentelemetry.io/otel/trace"

	"42sisters.ai/oracle/infra/fakes/fakegemini"
	"42sisters.ai/oracle/infra/fakes/fakestripe"
	"42sisters.ai/oracle/infra/motoserver"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/gemini"
	"42sisters.ai/oracle/shared/mail"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/queue"
	"42sisters.ai/oracle/shared/sqsbatch"
	"42sisters.ai/oracle/shared/stripex"
	"42sisters.ai/oracle/shared/tracing"
)

// hop is one function's cold start: its own provider (service.name) and
// AWS configuration with the SDK's calls traced, as coldstart.Start makes
// them. The hops of one test run one after another, as the functions do
// for one order, so each may be OpenTelemetry's global provider in turn.
func hop(t *testing.T, rx *receiver, name string, base aws.Config) (*tracing.Provider, aws.Config) {
	t.Helper()
	p := tracing.Start(tracing.Settings{Service: name, URL: rx.URL + "/v1/traces", Timeout: 5 * time.Second}, base, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if p == nil {
		t.Fatal("no provider for a configured endpoint")
	}
	cfg := base.Copy()
	cfg.APIOptions = append(cfg.APIOptions, tracing.AWS)
	return p, cfg
}

func invocation(id string) context.Context {
	return lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: id})
}

// receive takes the one message on url as Lambda's SQS event would carry it.
func receive(t *testing.T, c *sqs.Client, url, arn string) events.SQSEvent {
	t.Helper()
	out, err := c.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, MessageAttributeNames: []string{"All"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Messages) != 1 {
		t.Fatalf("%d messages on %s, want 1", len(out.Messages), url)
	}
	m := out.Messages[0]
	rec := events.SQSMessage{MessageId: aws.ToString(m.MessageId), Body: aws.ToString(m.Body), EventSourceARN: arn, MessageAttributes: map[string]events.SQSMessageAttribute{}}
	for k, v := range m.MessageAttributes {
		rec.MessageAttributes[k] = events.SQSMessageAttribute{DataType: aws.ToString(v.DataType), StringValue: v.StringValue}
	}
	return events.SQSEvent{Records: []events.SQSMessage{rec}}
}

// TestOneOrderIsOneTrace follows one paid order through every hop as the
// functions make them (the checkout's Stripe call, the webhook's claim
// continuing the checkout's trace through the session, the generate
// queue, the generator and its model call, the mail queue, the mailer and
// its SES send), against the fake Stripe, the fake Gemini and moto, and
// reads the spans an OTLP receiver got: one trace, each hop the child of
// the one before, every span of the order naming it by its name (never its
// whole id).
func TestOneOrderIsOneTrace(t *testing.T) {
	rx := newReceiver(t)
	base := awsenv.ForEndpoint(motoserver.ForTest(t), "us-east-1")
	sq := sqs.NewFromConfig(base)
	ctx := context.Background()
	suffix := fmt.Sprint(time.Now().UnixNano())
	queueURL := map[string]string{}
	for _, name := range []string{"generate", "mail"} {
		out, err := sq.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("trace-" + name + "-" + suffix)})
		if err != nil {
			t.Fatal(err)
		}
		queueURL[name] = aws.ToString(out.QueueUrl)
	}
	arn := func(name string) string { return "arn:aws:sqs:us-east-1:123456789012:trace-" + name + "-" + suffix }
	fake := httptest.NewServer(fakestripe.New(fakestripe.Options{}))
	t.Cleanup(fake.Close)

	// The checkout: its invocation makes the Stripe session.
	p, _ := hop(t, rx, "checkout", base)
	st := stripex.New("sk_test_trace", stripex.Options{BaseURL: fake.URL})
	var sessionID string
	checkout := tracing.Invocations(p, func(ctx context.Context, _ events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		s, err := st.CreateCheckoutSession(ctx, stripex.CheckoutRequest{Tier: oracle.TierQuick, Query: "Should I open a bakery?", SuccessURL: "http://localhost/ok", CancelURL: "http://localhost/no"})
		if err != nil {
			return events.APIGatewayV2HTTPResponse{}, err
		}
		sessionID = s.ID
		tracing.WithOrder(ctx, s.ID)
		return events.APIGatewayV2HTTPResponse{StatusCode: http.StatusOK}, nil
	})
	if _, err := checkout(invocation("req-checkout"), events.APIGatewayV2HTTPRequest{}); err != nil {
		t.Fatal(err)
	}

	// Stripe's event carries the session as Stripe keeps it.
	req, _ := http.NewRequest(http.MethodGet, fake.URL+"/v1/checkout/sessions/"+sessionID, nil)
	req.Header.Set("Authorization", "Bearer sk_test_trace")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()

	// The webhook: Stripe's request is its own trace; the claim continues
	// the checkout's, as functions/webhook does.
	p, cfg := hop(t, rx, "webhook", base)
	generate := queue.NewSender(queue.NewClient(cfg), queueURL["generate"], nil)
	webhook := tracing.Invocations(p, func(ctx context.Context, _ events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		session, _, err := stripex.SessionModeFromJSON(json.RawMessage(raw))
		if err != nil {
			return events.APIGatewayV2HTTPResponse{}, err
		}
		ctx, span := tracing.Continue(ctx, "checkout.session.completed", tracing.FromParent(session.TraceParent, ""), trace.SpanKindInternal)
		defer span.End()
		ctx = tracing.WithOrder(ctx, session.ID)
		return events.APIGatewayV2HTTPResponse{StatusCode: http.StatusOK}, generate.Send(ctx, queue.Job{SessionID: session.ID, Reason: queue.ReasonPaid})
	})
	if _, err := webhook(invocation("req-webhook"), events.APIGatewayV2HTTPRequest{}); err != nil {
		t.Fatal(err)
	}

	// The generator asks the model and sends the mail job; the mailer
	// sends the email through SES. Each takes a batch of one record.
	model := httptest.NewServer(fakegemini.New(fakegemini.Options{}))
	t.Cleanup(model.Close)
	if err := motoserver.VerifySender(ctx, sesv2.NewFromConfig(base), "oracle@42sisters.ai"); err != nil {
		t.Fatal(err)
	}
	consumer := func(name, next string) {
		p, cfg := hop(t, rx, name, base)
		work := func(ctx context.Context, job queue.Job) error {
			ses := &mail.SES{Client: mail.NewClient(cfg)}
			_, err := ses.Send(ctx, mail.Outgoing{From: "oracle@42sisters.ai", To: "customer@example.com", Subject: "Your verdict", Text: "The verdict."})
			return err
		}
		if next != "" {
			send := queue.NewSender(queue.NewClient(cfg), queueURL[next], nil)
			work = func(ctx context.Context, job queue.Job) error {
				g, err := gemini.New(ctx, gemini.Options{APIKey: "fake-key", BaseURL: model.URL})
				if err != nil {
					return err
				}
				if _, err := g.Generate(ctx, gemini.Request{User: "Should I open a bakery?", Text: true}); err != nil {
					return err
				}
				return send.Send(ctx, queue.Job{SessionID: job.SessionID, Kind: oracle.MailVerdict})
			}
		}
		var failed error
		h := tracing.Invocations(p, func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
			return sqsbatch.Process(ctx, slog.New(slog.NewTextHandler(io.Discard, nil)), sqsbatch.Failures{}, ev, func(ctx context.Context, rec events.SQSMessage) error {
				job, err := queue.Parse(rec.Body)
				if err != nil {
					return err
				}
				ctx = tracing.WithOrder(ctx, job.SessionID)
				failed = work(ctx, job)
				return failed
			}), nil
		})
		from := map[string]string{"generator": "generate", "mailer": "mail"}[name]
		out, err := h(invocation("req-"+name), receive(t, sq, queueURL[from], arn(from)))
		if err != nil || len(out.BatchItemFailures) > 0 || failed != nil {
			t.Fatalf("%s: %v %v %v", name, err, out.BatchItemFailures, failed)
		}
	}
	consumer("generator", "mail")
	consumer("mailer", "")

	spans := rx.all()
	byName := map[string]span{}
	for _, s := range spans {
		byName[s.Service+" "+s.Name] = s
	}
	find := func(key string) span {
		t.Helper()
		s, ok := byName[key]
		if !ok {
			var names []string
			for k := range byName {
				names = append(names, k)
			}
			t.Fatalf("no span %q among %q", key, names)
		}
		return s
	}
	checkoutSpan := find("checkout checkout")
	stripeSpan := find("checkout stripe POST")
	webhookSpan := find("webhook webhook")
	claim := find("webhook checkout.session.completed")
	sendGenerate := find("webhook send trace-generate-" + suffix)
	sqsSend := find("webhook SQS.SendMessage")
	generator := find("generator generator")
	processGenerate := find("generator process trace-generate-" + suffix)
	sendMail := find("generator send trace-mail-" + suffix)
	mailer := find("mailer mailer")
	processMail := find("mailer process trace-mail-" + suffix)
	modelCall := find("generator gemini POST")
	sesSend := find("mailer SESv2.SendEmail")

	if checkoutSpan.Parent != "" {
		t.Errorf("the checkout's span has a parent %s: the order's trace starts there", checkoutSpan.Parent)
	}
	if got := checkoutSpan.Attrs["faas.invocation_id"]; got != "req-checkout" {
		t.Errorf("faas.invocation_id = %v, want Lambda's request id", got)
	}
	if webhookSpan.TraceID == checkoutSpan.TraceID {
		t.Error("Stripe's request to the webhook is in the order's trace; it is its own, linked")
	}
	if len(claim.Links) != 1 || claim.Links[0] != webhookSpan.TraceID+"/"+webhookSpan.SpanID {
		t.Errorf("the claim's links %q, want the webhook's invocation", claim.Links)
	}
	for _, c := range []struct {
		child, parent span
		what          string
	}{
		{stripeSpan, checkoutSpan, "Stripe's call under the checkout"},
		{claim, checkoutSpan, "the webhook's claim under the checkout, through the session"},
		{sendGenerate, claim, "the generate job's send under the claim"},
		{sqsSend, sendGenerate, "SQS's SendMessage under the send"},
		{generator, sendGenerate, "the generator's invocation under the send"},
		{processGenerate, generator, "the generate record under the generator's invocation"},
		{sendMail, processGenerate, "the mail job's send under the record"},
		{mailer, sendMail, "the mailer's invocation under the send"},
		{processMail, mailer, "the mail record under the mailer's invocation"},
		{modelCall, processGenerate, "the model's call under the generate record"},
		{sesSend, processMail, "SES's SendEmail under the mail record"},
	} {
		if c.child.TraceID != checkoutSpan.TraceID || c.child.Parent != c.parent.SpanID {
			t.Errorf("%s: span %q (trace %s) has parent %s, want %q's %s in trace %s",
				c.what, c.child.Name, c.child.TraceID, c.child.Parent, c.parent.Name, c.parent.SpanID, checkoutSpan.TraceID)
		}
	}
	// Stripe's span aside: the order's id is that call's answer.
	for _, s := range []span{checkoutSpan, webhookSpan, claim, sendGenerate, sqsSend, generator, processGenerate, sendMail, mailer, processMail, modelCall, sesSend} {
		if s.Attrs["oracle.order"] != oracle.ShortID(sessionID) {
			t.Errorf("%s %q: oracle.order = %v, want the order's name %s", s.Service, s.Name, s.Attrs["oracle.order"], oracle.ShortID(sessionID))
		}
	}
	// The whole id opens the result page: no span holds it.
	for _, s := range spans {
		if strings.Contains(s.Name, sessionID) || strings.Contains(fmt.Sprint(s.Attrs), sessionID) {
			t.Errorf("%s %q holds the whole session id: %v", s.Service, s.Name, s.Attrs)
		}
	}
	for _, s := range spans {
		if s.TraceID == checkoutSpan.TraceID && !strings.Contains("checkout webhook generator mailer", s.Service) {
			t.Errorf("span %q of service %q", s.Name, s.Service)
		}
	}
}
