package stack_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"42sisters.ai/oracle/infra/local/stack"
	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/queue"
	"42sisters.ai/oracle/shared/store"
)

// A garbage message on the mail queue fails on every delivery, reaches the
// dead-letter queue after maxReceiveCount and raises exactly one
// JOB_DEAD_LETTERED alert there; two jobs of one session that reach the
// dead-letter queue at once raise one each (the deployed alerter has no
// dedupe window to swallow the second). Every dead message leaves its
// record and no queue keeps anything.
func TestDeadLetteredMessageAlertsOnce(t *testing.T) {
	t.Parallel()
	o := options(t)
	// The mail queue's 180 s visibility timeout would make the five failed
	// deliveries take a quarter of an hour: each delivery is made visible
	// again after a second instead, so the deliveries, their failures and
	// the move to the dead-letter queue stay real and quick. (Setting the
	// queue's timeout would not reach the long poll already waiting.)
	var mailQueue atomic.Pointer[string]
	reset := sqs.NewFromConfig(awsenv.ForEndpoint(o.MotoEndpoint, stack.Region))
	o.BeforeDelivery = func(queueID string, batch events.SQSEvent) {
		url := mailQueue.Load()
		if queueID != "MailQueue" || url == nil {
			return
		}
		for _, m := range batch.Records {
			if _, err := reset.ChangeMessageVisibility(context.Background(), &sqs.ChangeMessageVisibilityInput{
				QueueUrl: url, ReceiptHandle: aws.String(m.ReceiptHandle), VisibilityTimeout: 1,
			}); err != nil {
				t.Errorf("shorten the visibility of %s: %v", m.MessageId, err)
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	s, err := stack.Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	mailQueue.Store(aws.String(s.Resources.Ref("MailQueue")))
	q := sqs.NewFromConfig(s.AWS)
	sent, err := q.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(s.Resources.Ref("MailQueue")), MessageBody: aws.String("this is not a job")})
	if err != nil {
		t.Fatal(err)
	}
	const session = "cs_test_deadletterStack0001"
	jobs := []queue.Job{
		{SessionID: session, Reason: queue.ReasonPaid, Attempt: 4},
		{SessionID: session, Kind: oracle.MailVerdict, Attempt: 1},
	}
	want := []string{store.DeadLetterKey(queueName(s, "DeadLetterQueue"), aws.ToString(sent.MessageId))}
	for _, job := range jobs {
		body, _ := json.Marshal(job)
		out, err := q.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(s.Resources.Ref("DeadLetterQueue")), MessageBody: aws.String(string(body))})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, store.DeadLetterKey(queueName(s, "DeadLetterQueue"), aws.ToString(out.MessageId)))
	}
	slices.Sort(want)

	var got []string
	if !testkit.Eventually(90*time.Second, 200*time.Millisecond, func() bool {
		got = deadLetterRecords(ctx, t, s)
		return slices.Equal(got, want) && empty(ctx, t, q, s, "MailQueue", "DeadLetterQueue") &&
			countAlerts(s, string(alert.JobDeadLettered)) >= 3
	}) {
		t.Fatalf("records %q, want %q; alerts %q", got, want, s.Alerts())
	}
	// The alerts of all three have arrived; a second one for the garbage
	// would have been published before its message was acknowledged.
	dead := slices.DeleteFunc(s.Alerts(), func(a string) bool { return !strings.Contains(a, " | "+string(alert.JobDeadLettered)+" | ") })
	if len(dead) != 3 {
		t.Fatalf("JOB_DEAD_LETTERED alerts %q, want one per dead message", dead)
	}
	garbage := slices.IndexFunc(dead, func(a string) bool {
		return strings.Contains(a, "unreadable message (17 bytes) reached "+queueName(s, "DeadLetterQueue")+" as message "+aws.ToString(sent.MessageId))
	})
	if garbage < 0 || !strings.HasPrefix(dead[garbage], "[ORACLE-ALERT] CRITICAL ") {
		t.Errorf("no CRITICAL alert for the garbage message in %q", dead)
	}
	for _, a := range dead {
		if strings.Contains(a, session) || strings.Contains(a, "this is not a job") {
			t.Errorf("an alert shows a whole session id or the body: %q", a)
		}
	}
}

// queueName is the provisioned name of the template's queue queueID.
func queueName(s *stack.Stack, queueID string) string {
	arn := s.Resources.Attr(queueID + ".Arn")
	return arn[strings.LastIndex(arn, ":")+1:]
}

// empty reports whether the queues hold no message, visible or in flight.
func empty(ctx context.Context, t *testing.T, q *sqs.Client, s *stack.Stack, queueIDs ...string) bool {
	t.Helper()
	for _, queueID := range queueIDs {
		attrs, err := q.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
			QueueUrl: aws.String(s.Resources.Ref(queueID)),
			AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages,
				sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible},
		})
		if err != nil {
			t.Fatal(err)
		}
		if attrs.Attributes["ApproximateNumberOfMessages"] != "0" || attrs.Attributes["ApproximateNumberOfMessagesNotVisible"] != "0" {
			return false
		}
	}
	return true
}

// deadLetterRecords lists the keys of the dead letters the Ledger keeps,
// sorted: a message that reached a dead-letter queue and left it again
// (the deadletter function drains them) is still found here.
func deadLetterRecords(ctx context.Context, t *testing.T, s *stack.Stack) []string {
	t.Helper()
	out, err := dynamodb.NewFromConfig(s.AWS).Scan(ctx, &dynamodb.ScanInput{
		TableName:                 aws.String(s.Resources.Ref("LedgerTable")),
		FilterExpression:          aws.String("begins_with(pk, :p)"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":p": &ddbtypes.AttributeValueMemberS{Value: "deadletter#"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, item := range out.Items {
		if pk, ok := item["pk"].(*ddbtypes.AttributeValueMemberS); ok {
			keys = append(keys, pk.Value)
		}
	}
	slices.Sort(keys)
	return keys
}
