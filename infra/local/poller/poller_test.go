package poller_test

import (
	"context"
	"crypto/md5"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"os"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"42sisters.ai/oracle/infra/local/internal/echotest"
	"42sisters.ai/oracle/infra/local/poller"
	"42sisters.ai/oracle/infra/local/runtimeapi"
	"42sisters.ai/oracle/infra/motoserver"
	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/awsenv"
)

var echoBin string

func TestMain(m *testing.M) { os.Exit(echotest.Main(m, &echoBin)) }

const region = "us-east-1"

// queues is a queue whose messages move to its dead-letter queue on their
// second receive, with a one-second visibility timeout.
type queues struct {
	client        *sqs.Client
	url, arn, dlq string
}

func newQueues(t *testing.T) queues {
	t.Helper()
	c := sqs.NewFromConfig(awsenv.ForEndpoint(motoserver.ForTest(t), region))
	ctx := context.Background()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := "poller-" + hex.EncodeToString(b)
	dlq, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name + "-dlq")})
	if err != nil {
		t.Fatal(err)
	}
	redrive := fmt.Sprintf(`{"deadLetterTargetArn":"arn:aws:sqs:%s:123456789012:%s-dlq","maxReceiveCount":"1"}`, region, name)
	q, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: map[string]string{
		"VisibilityTimeout": "1",
		"RedrivePolicy":     redrive,
	}})
	if err != nil {
		t.Fatal(err)
	}
	return queues{client: c, url: aws.ToString(q.QueueUrl), arn: "arn:aws:sqs:" + region + ":123456789012:" + name, dlq: aws.ToString(dlq.QueueUrl)}
}

func (q queues) send(t *testing.T, bodies ...string) {
	t.Helper()
	var entries []types.SendMessageBatchRequestEntry
	for i, b := range bodies {
		entries = append(entries, types.SendMessageBatchRequestEntry{
			Id:          aws.String(strconv.Itoa(i)),
			MessageBody: aws.String(b),
			MessageAttributes: map[string]types.MessageAttributeValue{
				"kind": {DataType: aws.String("String"), StringValue: aws.String("greeting")},
				"blob": {DataType: aws.String("Binary"), BinaryValue: []byte{1, 2, 3}},
			},
		})
	}
	out, err := q.client.SendMessageBatch(context.Background(), &sqs.SendMessageBatchInput{QueueUrl: aws.String(q.url), Entries: entries})
	if err != nil || len(out.Failed) > 0 {
		t.Fatalf("send: %v %v", err, out)
	}
}

// count is the number of messages in a queue, visible or not.
func (q queues) count(t *testing.T, url string) int {
	t.Helper()
	out, err := q.client.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(url),
		AttributeNames: []types.QueueAttributeName{
			types.QueueAttributeNameApproximateNumberOfMessages,
			types.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
			types.QueueAttributeNameApproximateNumberOfMessagesDelayed,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, v := range out.Attributes {
		i, _ := strconv.Atoi(v)
		n += i
	}
	return n
}

// deadLetters receives the bodies of the dead-letter queue, sorted.
func (q queues) deadLetters(t *testing.T) []string {
	t.Helper()
	bodies := testkit.Drain(t, q.client, q.dlq)
	sort.Strings(bodies)
	return bodies
}

// run starts a poller and returns a function that stops it and fails the
// test if it does not stop promptly.
func run(t *testing.T, c poller.Config) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- poller.Run(ctx, c) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Error("poller did not stop on cancel")
		}
	}
	t.Cleanup(stop)
	return stop
}

// invokerFunc adapts a function to poller.Invoker and counts invocations.
type invokerFunc struct {
	fn    func(payload []byte) ([]byte, error)
	calls atomic.Int32
}

func (f *invokerFunc) Invoke(_ context.Context, payload []byte) ([]byte, error) {
	f.calls.Add(1)
	return f.fn(payload)
}

func TestBatchOutcomes(t *testing.T) {
	echo, err := runtimeapi.Start(runtimeapi.Config{Name: "Echo", Binary: echoBin, Timeout: 10 * time.Second, Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(echo.Close)
	viaEcho := func(p []byte) ([]byte, error) { return echo.Invoke(context.Background(), p) }
	answer := func(s string) func([]byte) ([]byte, error) {
		return func([]byte) ([]byte, error) { return []byte(s), nil }
	}
	tests := []struct {
		name        string
		reportItems bool
		fn          func([]byte) ([]byte, error)
		bodies      []string
		deadLetters []string // the messages kept, which reach the DLQ on redelivery
	}{
		{"success deletes every message", true, viaEcho, []string{"ok-1", "ok-2"}, []string{}},
		{"a batch item failure keeps only that message", true, viaEcho, []string{"ok", "please fail"}, []string{"please fail"}},
		{"a function error keeps the whole batch", true, viaEcho, []string{"error", "ok"}, []string{"error", "ok"}},
		{"without ReportBatchItemFailures a reported failure is ignored", false, viaEcho, []string{"ok", "please fail"}, []string{}},
		{"a null response is success", true, answer("null"), []string{"a", "b"}, []string{}},
		{"an unparsable response fails the batch", true, answer(`"nope"`), []string{"a", "b"}, []string{"a", "b"}},
		{"an unknown itemIdentifier fails the batch", true, answer(`{"batchItemFailures":[{"itemIdentifier":"nope"}]}`), []string{"a", "b"}, []string{"a", "b"}},
		{"a misnamed itemIdentifier fails the batch", true, answer(`{"batchItemFailures":[{"id":"x"}]}`), []string{"a", "b"}, []string{"a", "b"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			q := newQueues(t)
			q.send(t, tc.bodies...)
			fn := &invokerFunc{fn: tc.fn}
			stop := run(t, poller.Config{
				SQS: q.client, QueueURL: q.url, QueueARN: q.arn, Region: region,
				BatchSize: 10, ReportBatchItemFailures: tc.reportItems, Function: fn,
				Name: tc.name, Log: log.New(io.Discard, "", 0),
			})
			if !testkit.Eventually(20*time.Second, 50*time.Millisecond, func() bool {
				return q.count(t, q.url) == 0 && q.count(t, q.dlq) == len(tc.deadLetters)
			}) {
				t.Fatalf("queue holds %d, DLQ %d; want 0 and %d", q.count(t, q.url), q.count(t, q.dlq), len(tc.deadLetters))
			}
			stop()
			if got := q.deadLetters(t); !slices.Equal(got, tc.deadLetters) {
				t.Errorf("dead letters = %q, want %q", got, tc.deadLetters)
			}
			if n := fn.calls.Load(); n != 1 {
				t.Errorf("function invoked %d times, want once (a kept message's redelivery goes to the DLQ)", n)
			}
		})
	}
}

func TestEventShape(t *testing.T) {
	q := newQueues(t)
	payloads := make(chan []byte, 1)
	fn := &invokerFunc{fn: func(p []byte) ([]byte, error) {
		select {
		case payloads <- p:
		default:
		}
		return nil, nil
	}}
	q.send(t, `{"session_id":"cs_test_1"}`)
	run(t, poller.Config{SQS: q.client, QueueURL: q.url, QueueARN: q.arn, Region: region, Function: fn, Log: log.New(io.Discard, "", 0)})
	var p []byte
	select {
	case p = <-payloads:
	case <-time.After(20 * time.Second):
		t.Fatal("the function was not invoked")
	}
	var ev events.SQSEvent
	if err := json.Unmarshal(p, &ev); err != nil {
		t.Fatal(err)
	}
	if len(ev.Records) != 1 {
		t.Fatalf("records = %d", len(ev.Records))
	}
	r := ev.Records[0]
	sum := md5.Sum([]byte(r.Body))
	checks := []struct {
		name      string
		got, want any
	}{
		{"body", r.Body, `{"session_id":"cs_test_1"}`},
		{"md5OfBody", r.Md5OfBody, hex.EncodeToString(sum[:])},
		{"eventSource", r.EventSource, "aws:sqs"},
		{"eventSourceARN", r.EventSourceARN, q.arn},
		{"awsRegion", r.AWSRegion, region},
		{"ApproximateReceiveCount", r.Attributes["ApproximateReceiveCount"], "1"},
		{"kind", aws.ToString(r.MessageAttributes["kind"].StringValue), "greeting"},
		{"kind type", r.MessageAttributes["kind"].DataType, "String"},
		{"blob", r.MessageAttributes["blob"].BinaryValue, []byte{1, 2, 3}},
		{"blob type", r.MessageAttributes["blob"].DataType, "Binary"},
		{"stringListValues", r.MessageAttributes["kind"].StringListValues, []string{}},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %#v, want %#v", c.name, c.got, c.want)
		}
	}
	for _, k := range []string{"SentTimestamp", "ApproximateFirstReceiveTimestamp", "SenderId"} {
		if r.Attributes[k] == "" {
			t.Errorf("attribute %s missing", k)
		}
	}
	if r.MessageId == "" || r.ReceiptHandle == "" || r.Md5OfMessageAttributes == "" {
		t.Errorf("ids missing: %+v", r)
	}
}

func TestRunNeedsQueueAndFunction(t *testing.T) {
	if err := poller.Run(context.Background(), poller.Config{}); err == nil {
		t.Fatal("Run accepted an empty config")
	}
}
