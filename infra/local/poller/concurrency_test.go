package poller_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"42sisters.ai/oracle/infra/local/poller"
	"42sisters.ai/oracle/infra/motoserver"
	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/awsenv"
)

// TestBatchesRunConcurrentlyUpToTheMaximum: with messages waiting, the
// mapping runs as many batches at once as its maximum concurrency, and
// never one more. Each invocation waits until the maximum is in flight
// (so a poller that ran fewer at once would fail here, not pass slowly),
// then lets the others through.
func TestBatchesRunConcurrentlyUpToTheMaximum(t *testing.T) {
	const maximum, messages = 3, 12
	c := sqs.NewFromConfig(awsenv.ForEndpoint(motoserver.ForTest(t), region))
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	// A visibility timeout far longer than the test: no message comes back
	// while its batch waits for the others.
	q, err := c.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String("poller-scale-" + hex.EncodeToString(b)),
		Attributes: map[string]string{"VisibilityTimeout": "300"}})
	if err != nil {
		t.Fatal(err)
	}
	url := aws.ToString(q.QueueUrl)
	for i := range messages {
		if _, err := c.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String(fmt.Sprint("job-", i))}); err != nil {
			t.Fatal(err)
		}
	}

	var (
		mu                    sync.Mutex
		inFlight, peak, calls int
		full                  = make(chan struct{})
	)
	fn := &invokerFunc{fn: func([]byte) ([]byte, error) {
		mu.Lock()
		inFlight++
		calls++
		peak = max(peak, inFlight)
		if inFlight == maximum && calls == maximum {
			close(full)
		}
		mu.Unlock()
		defer func() { mu.Lock(); inFlight--; mu.Unlock() }()
		select {
		case <-full:
			return nil, nil
		case <-time.After(30 * time.Second):
			return nil, fmt.Errorf("only %d batches in flight, want %d", inFlight, maximum)
		}
	}}
	run(t, poller.Config{
		SQS: c, QueueURL: url, Region: region, BatchSize: 1, ReportBatchItemFailures: true,
		Concurrency: maximum, Function: fn, Name: "scale", Log: log.New(io.Discard, "", 0),
	})
	if !testkit.Eventually(60*time.Second, 20*time.Millisecond, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return calls >= messages
	}) {
		t.Fatalf("%d of %d messages delivered", fn.calls.Load(), messages)
	}
	select {
	case <-full:
	default:
		t.Fatalf("never %d batches in flight at once", maximum)
	}
	mu.Lock()
	defer mu.Unlock()
	if peak != maximum {
		t.Errorf("peak of %d batches in flight, want %d", peak, maximum)
	}
}
