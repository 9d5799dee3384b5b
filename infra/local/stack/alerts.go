package stack

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"42sisters.ai/oracle/infra/provision"
)

// alertsTopic is the template's alerts topic.
const alertsTopic = "AlertsTopic"

// alertTap is an SQS queue subscribed to the alerts topic, standing in for
// the operator's inbox: every alert is printed and kept.
type alertTap struct {
	sqs *sqs.Client
	url string
	out io.Writer

	mu     sync.Mutex
	alerts []string
}

func tapAlerts(ctx context.Context, cfg aws.Config, res *provision.Stack, prefix string, out io.Writer) (*alertTap, error) {
	t := &alertTap{sqs: sqs.NewFromConfig(cfg), out: out}
	q, err := t.sqs.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(prefix + "alerts-tap")})
	if err != nil {
		return nil, fmt.Errorf("create the alerts tap queue: %w", err)
	}
	t.url = aws.ToString(q.QueueUrl)
	// Alerts of an earlier run on the same moto are not this run's.
	if _, err := t.sqs.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: q.QueueUrl}); err != nil {
		return nil, fmt.Errorf("purge the alerts tap queue: %w", err)
	}
	attrs, err := t.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: q.QueueUrl, AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
	if err != nil {
		return nil, fmt.Errorf("alerts tap queue ARN: %w", err)
	}
	if _, err := sns.NewFromConfig(cfg).Subscribe(ctx, &sns.SubscribeInput{
		TopicArn:   aws.String(res.Ref(alertsTopic)),
		Protocol:   aws.String("sqs"),
		Endpoint:   aws.String(attrs.Attributes[string(types.QueueAttributeNameQueueArn)]),
		Attributes: map[string]string{"RawMessageDelivery": "true"},
	}); err != nil {
		return nil, fmt.Errorf("subscribe the alerts tap to %s: %w", res.Ref(alertsTopic), err)
	}
	return t, nil
}

// run prints and keeps alerts until ctx is cancelled.
func (t *alertTap) run(ctx context.Context) {
	for ctx.Err() == nil {
		out, err := t.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(t.url), MaxNumberOfMessages: 10, WaitTimeSeconds: 20})
		if err != nil {
			if ctx.Err() == nil {
				fmt.Fprintf(t.out, "[alerts] receive: %v\n", err)
				select {
				case <-time.After(time.Second):
				case <-ctx.Done():
				}
			}
			continue
		}
		for _, m := range out.Messages {
			msg := aws.ToString(m.Body)
			fmt.Fprintf(t.out, "ALERT: %s\n", msg)
			t.mu.Lock()
			t.alerts = append(t.alerts, msg)
			t.mu.Unlock()
			if _, err := t.sqs.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(t.url), ReceiptHandle: m.ReceiptHandle}); err != nil && ctx.Err() == nil {
				fmt.Fprintf(t.out, "[alerts] delete: %v\n", err)
			}
		}
	}
}

func (t *alertTap) list() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.alerts...)
}
