// Package poller feeds SQS messages to a function with the semantics of a
// Lambda SQS event source mapping: long-polled batches, events shaped as
// Lambda shapes them, messages deleted only when the batch (or, with
// ReportBatchItemFailures, the message) succeeded, and everything else left
// to reappear after the visibility timeout and, past maxReceiveCount, to
// move to the dead-letter queue. Like the mapping, it runs several batches
// at once, up to its maximum concurrency.
package poller

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// waitSeconds is the long-poll wait, SQS's maximum, as Lambda uses.
const waitSeconds = 20

// retryPause spaces out receives after SQS failed.
const retryPause = time.Second

// Invoker runs a function synchronously.
type Invoker interface {
	Invoke(ctx context.Context, payload []byte) ([]byte, error)
}

// Config is one event source mapping.
type Config struct {
	SQS      *sqs.Client
	QueueURL string
	QueueARN string
	Region   string
	// BatchSize is the most messages per invocation; SQS returns at most 10
	// per receive, so larger sizes are served 10 at a time.
	BatchSize int
	// ReportBatchItemFailures: the function reports failed messages in
	// batchItemFailures and only those are kept.
	ReportBatchItemFailures bool
	// Concurrency is the most batches in flight at once, as a mapping's
	// ScalingConfig.MaximumConcurrency (or the function's reserved
	// concurrency) caps Lambda's pollers; 0 means 1. Each of that many
	// pollers receives, invokes and deletes in turn, so a queue with
	// messages keeps every one of them busy, as Lambda scales its pollers
	// up while messages wait.
	Concurrency int
	Function    Invoker
	// Name labels log lines, e.g. "GenerateQueue -> GeneratorFunction".
	Name string
	// Log receives failures; nil means the standard logger.
	Log *log.Logger
}

// Run polls until ctx is cancelled, with c.Concurrency batches at most in
// flight.
func Run(ctx context.Context, c Config) error {
	if c.SQS == nil || c.QueueURL == "" || c.Function == nil {
		return fmt.Errorf("poller %s: needs an SQS client, a queue URL and a function", c.Name)
	}
	if c.BatchSize <= 0 {
		c.BatchSize = 10
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 1
	}
	if c.Log == nil {
		c.Log = log.Default()
	}
	var wg sync.WaitGroup
	for range c.Concurrency {
		wg.Go(func() { c.poll(ctx) })
	}
	wg.Wait()
	return nil
}

// poll is one of the mapping's pollers: one batch at a time.
func (c Config) poll(ctx context.Context) {
	for ctx.Err() == nil {
		out, err := c.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:                    aws.String(c.QueueURL),
			MaxNumberOfMessages:         int32(min(c.BatchSize, 10)),
			WaitTimeSeconds:             waitSeconds,
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
			MessageAttributeNames:       []string{"All"},
		})
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			c.Log.Printf("poller %s: receive: %v", c.Name, err)
			select {
			case <-time.After(retryPause):
			case <-ctx.Done():
			}
			continue
		}
		if len(out.Messages) > 0 {
			c.handle(ctx, out.Messages)
		}
	}
}

// handle invokes the function with one batch and deletes what succeeded.
func (c Config) handle(ctx context.Context, msgs []types.Message) {
	payload, err := json.Marshal(c.event(msgs))
	if err != nil {
		c.Log.Printf("poller %s: encode event: %v", c.Name, err)
		return
	}
	out, err := c.Function.Invoke(ctx, payload)
	if ctx.Err() != nil {
		// Stopping: the batch returns after the visibility timeout.
		return
	}
	if err != nil {
		c.Log.Printf("poller %s: batch of %d failed (%v); the messages return after the visibility timeout", c.Name, len(msgs), err)
		return
	}
	done := msgs
	if c.ReportBatchItemFailures {
		var failed map[string]bool
		if failed, err = itemFailures(out, msgs); err != nil {
			c.Log.Printf("poller %s: batch of %d failed: %v; the messages return after the visibility timeout", c.Name, len(msgs), err)
			return
		}
		done = nil
		for _, m := range msgs {
			if !failed[aws.ToString(m.MessageId)] {
				done = append(done, m)
			}
		}
		if len(failed) > 0 {
			c.Log.Printf("poller %s: %d of %d messages failed; they return after the visibility timeout", c.Name, len(failed), len(msgs))
		}
	}
	c.delete(ctx, done)
}

// itemFailures reads a batchItemFailures response as Lambda does: an empty
// or null response or list is full success; a response that does not parse
// or names a message not in the batch fails the whole batch.
func itemFailures(out []byte, msgs []types.Message) (map[string]bool, error) {
	if len(out) == 0 {
		return nil, nil
	}
	var resp events.SQSEventResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		return nil, fmt.Errorf("response is not a batchItemFailures document: %w", err)
	}
	inBatch := make(map[string]bool, len(msgs))
	for _, m := range msgs {
		inBatch[aws.ToString(m.MessageId)] = true
	}
	failed := map[string]bool{}
	for _, f := range resp.BatchItemFailures {
		if !inBatch[f.ItemIdentifier] {
			return nil, fmt.Errorf("batchItemFailures names %q, which is not in the batch", f.ItemIdentifier)
		}
		failed[f.ItemIdentifier] = true
	}
	return failed, nil
}

func (c Config) delete(ctx context.Context, msgs []types.Message) {
	if len(msgs) == 0 {
		return
	}
	entries := make([]types.DeleteMessageBatchRequestEntry, len(msgs))
	for i, m := range msgs {
		entries[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle}
	}
	out, err := c.SQS.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(c.QueueURL), Entries: entries})
	if err != nil {
		c.Log.Printf("poller %s: delete %d messages: %v", c.Name, len(msgs), err)
		return
	}
	for _, f := range out.Failed {
		c.Log.Printf("poller %s: delete message %s: %s", c.Name, aws.ToString(f.Id), aws.ToString(f.Message))
	}
}

// event shapes messages as Lambda's SQS event.
func (c Config) event(msgs []types.Message) events.SQSEvent {
	ev := events.SQSEvent{Records: make([]events.SQSMessage, len(msgs))}
	for i, m := range msgs {
		attrs := map[string]string{}
		for k, v := range m.Attributes {
			attrs[k] = v
		}
		mattrs := map[string]events.SQSMessageAttribute{}
		for k, v := range m.MessageAttributes {
			mattrs[k] = events.SQSMessageAttribute{
				StringValue:      v.StringValue,
				BinaryValue:      v.BinaryValue,
				StringListValues: append([]string{}, v.StringListValues...),
				BinaryListValues: append([][]byte{}, v.BinaryListValues...),
				DataType:         aws.ToString(v.DataType),
			}
		}
		ev.Records[i] = events.SQSMessage{
			MessageId:              aws.ToString(m.MessageId),
			ReceiptHandle:          aws.ToString(m.ReceiptHandle),
			Body:                   aws.ToString(m.Body),
			Md5OfBody:              aws.ToString(m.MD5OfBody),
			Md5OfMessageAttributes: aws.ToString(m.MD5OfMessageAttributes),
			Attributes:             attrs,
			MessageAttributes:      mattrs,
			EventSource:            "aws:sqs",
			EventSourceARN:         c.QueueARN,
			AWSRegion:              c.Region,
		}
	}
	return ev
}
