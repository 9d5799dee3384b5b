package stack_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"42sisters.ai/oracle/infra/local/stack"
	"42sisters.ai/oracle/infra/testkit"
)

// ordersPerRound is how many orders one benchmark iteration pays for, so
// that even a single iteration gives a p95 worth reading.
const ordersPerRound = 20

// BenchmarkPaidToEmail measures the pipeline budget of docs/performance.md:
// from the customer's payment to the verdict email accepted by SES, with
// the fake model answering at once, through the whole local stack (fake
// Stripe's webhook, the webhook, SQS, the generator, SQS, the mailer, SES
// on moto). The end is the mailer's own record of the send
// (mail_verdict_sent_at), so polling adds nothing to what is measured.
// Orders are paid one after another: this is the latency of an idle
// pipeline, not its throughput.
func BenchmarkPaidToEmail(b *testing.B) {
	ctx := context.Background()
	o := options(b)
	s, err := stack.Start(ctx, o)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var took []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		took = took[:0]
		for j := 0; j < ordersPerRound; j++ {
			stamp := time.Now().UnixNano()
			paid := time.Now()
			session := pay(b, s, "quick", fmt.Sprintf("Should I open a night market stall (%d)?", stamp), fmt.Sprintf("bench-%d@example.com", stamp))
			var sent time.Time
			if !testkit.Eventually(30*time.Second, 5*time.Millisecond, func() bool {
				v, ok := orderItem(b, s, session)["mail_verdict_sent_at"].(*ddbtypes.AttributeValueMemberS)
				if ok {
					sent, err = time.Parse(time.RFC3339Nano, v.Value)
				}
				return ok
			}) || err != nil {
				b.Fatalf("order %d: no verdict email within 30 s (%v)", j, err)
			}
			took = append(took, sent.Sub(paid))
		}
	}
	b.StopTimer()
	slices.Sort(took)
	b.ReportMetric(ms(took[len(took)/2]), "p50-ms")
	b.ReportMetric(ms(took[(len(took)*95+99)/100-1]), "p95-ms")
	b.ReportMetric(ms(took[len(took)-1]), "max-ms")
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
