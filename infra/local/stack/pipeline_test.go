package stack_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"42sisters.ai/oracle/infra/local/stack"
	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/oracle"
)

// ordersPerRound is how many orders one benchmark iteration pays for, so
// that even a single iteration gives a p95 worth reading.
const ordersPerRound = 20

// warmOrders are paid before the measure: two for each of the stack's two
// execution environments of every function.
const warmOrders = 4

// BenchmarkPaidToEmail measures the pipeline budget of docs/performance.md:
// from the customer's payment to the verdict email accepted by SES, with
// the fake model answering at once, through the whole local stack (fake
// Stripe's webhook, the webhook, SQS, the generator, SQS, the mailer, SES
// on moto). The end is the mailer's own record of the send
// (mail_verdict_sent_at), so polling adds nothing to what is measured.
// Orders are paid one after another, after a few that warm the
// pipeline: this is the latency of an idle, warm pipeline, not its
// throughput. Between the orders, the same run measures the floor (the
// store, queue and mail round trips one order needs, floor_test.go)
// against the same moto and SES front, and reports p95/floor, the figure
// the budget reads.
func BenchmarkPaidToEmail(b *testing.B) {
	ctx := context.Background()
	o := options(b)
	s, err := stack.Start(ctx, o)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	q := sqs.NewFromConfig(s.AWS)
	var session string
	// order pays for one order and returns its time to the email; the
	// order's tail (the mailer's records, SES's events through the
	// feedback function) settles before it returns, so that each order,
	// and each round of the floor, meets an idle pipeline.
	order := func(j int) time.Duration {
		stamp := time.Now().UnixNano()
		paid := time.Now()
		session = pay(b, s, "quick", fmt.Sprintf("Should I open a night market stall (%d)?", stamp), fmt.Sprintf("bench-%d@example.com", stamp))
		// The end is the mailer's own timestamp, so polling for it
		// gently takes nothing from what is measured, and leaves moto
		// (one Python process) to the pipeline.
		var sent time.Time
		if !testkit.Eventually(30*time.Second, 20*time.Millisecond, func() bool {
			v, ok := orderItem(b, s, session)["mail_verdict_sent_at"].(*ddbtypes.AttributeValueMemberS)
			if ok {
				sent, err = time.Parse(time.RFC3339Nano, v.Value)
			}
			return ok
		}) || err != nil {
			b.Fatalf("order %d: no verdict email within 30 s (%v)", j, err)
		}
		if !testkit.Eventually(30*time.Second, 20*time.Millisecond, func() bool {
			v, ok := orderItem(b, s, session)["mail_verdict_state"].(*ddbtypes.AttributeValueMemberS)
			return ok && v.Value == string(oracle.MailDelivered)
		}) {
			b.Fatalf("order %d: its email never recorded as delivered", j)
		}
		// Each consumer deletes its message once it has returned: with
		// every queue empty, nothing of the order runs any more.
		if !testkit.Eventually(30*time.Second, 20*time.Millisecond, func() bool { return idle(b, q, s) }) {
			b.Fatalf("order %d: its queues never emptied", j)
		}
		return sent.Sub(paid)
	}
	// The first orders meet execution environments that have served
	// nothing yet (their first connections, their first calls): a cold
	// start, whose budget BenchmarkColdStart measures. They warm every
	// function's environments before the measure.
	for j := range warmOrders {
		order(-1 - j)
	}
	// One round of the floor's round trips follows each order, on the
	// idle stack: the floor is measured over the same stretch of the run
	// as the orders, whatever else the machine does meanwhile.
	trips := newRoundTrips(b, s, session)
	defer trips.close()
	var took []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		took = took[:0]
		for j := 0; j < ordersPerRound; j++ {
			took = append(took, order(j))
			trips.round(b)
		}
	}
	b.StopTimer()
	slices.Sort(took)
	b.ReportMetric(ms(took[len(took)/2]), "p50-ms")
	p95 := took[(len(took)*95+99)/100-1]
	b.ReportMetric(ms(p95), "p95-ms")
	b.ReportMetric(ms(took[len(took)-1]), "max-ms")
	least, each := trips.floor()
	b.ReportMetric(ms(least), "floor-ms")
	b.ReportMetric(float64(p95)/float64(least), "p95/floor")
	var line []string
	for _, c := range criticalPath {
		line = append(line, fmt.Sprintf("%d %s × %.1f ms", c.count, c.kind, ms(each[c.kind])))
	}
	b.Logf("floor %.1f ms: %s", ms(least), strings.Join(line, ", "))
}

// idle reports whether the pipeline's queues hold no message, visible or
// in flight.
func idle(tb testing.TB, q *sqs.Client, s *stack.Stack) bool {
	tb.Helper()
	for _, id := range []string{"GenerateQueue", "MailQueue", "MailEventsQueue"} {
		out, err := q.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
			QueueUrl: aws.String(s.Resources.Ref(id)),
			AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages,
				sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible},
		})
		if err != nil {
			tb.Fatal(err)
		}
		if out.Attributes["ApproximateNumberOfMessages"] != "0" || out.Attributes["ApproximateNumberOfMessagesNotVisible"] != "0" {
			return false
		}
	}
	return true
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
