package stack_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"42sisters.ai/oracle/infra/local/stack"
	"42sisters.ai/oracle/infra/local/traces"
	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/oracle"
)

// ordersPerRound is how many orders one benchmark iteration pays for, so
// that even a single iteration gives a p95 worth reading.
const ordersPerRound = 20

// warmOrders are paid before the measure: two for each of the stack's two
// execution environments of every function.
const warmOrders = 4

// BenchmarkPaidToEmail measures the pipeline budgets of
// docs/performance.md: from the customer's payment to the verdict email
// accepted by SES, with the fake model answering at once, through the whole
// local stack (fake Stripe's webhook, the webhook, SQS, the generator, SQS,
// the mailer, SES on moto). The end is the mailer's own record of the send
// (mail_verdict_sent_at), so polling adds nothing to what is measured.
// Orders are paid one after another, after a few that warm the
// pipeline: this is the latency of an idle, warm pipeline, not its
// throughput. Each order runs alone, so each is counted: its critical
// path's round trips from its spans (traces.CriticalPath), and every
// DynamoDB and S3 request it made in all from the meter. Between the
// orders, the same run measures each kind's round trip against the same
// moto and SES front (floor_test.go); the floor is the counted path
// weighed by them, and p95/floor the figure the budget reads.
func BenchmarkPaidToEmail(b *testing.B) {
	ctx := context.Background()
	o := options(b)
	// The meter counts what the functions ask of AWS; no schedule runs
	// beside the orders to add its own.
	o.MeterAWS, o.ScheduleOff = true, true
	s, err := stack.Start(ctx, o)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	q := sqs.NewFromConfig(s.AWS)
	meter := s.Meter()
	var session string
	// order pays for one order and returns its time to the email; the
	// order's tail (the mailer's records, SES's events through the
	// feedback function, the work each function leaves for after its
	// answer) settles before it returns, so that each order, and each
	// round of the floor, meets an idle pipeline, and the meter and the
	// spans hold the whole order and nothing else.
	mailed := func() int64 { return s.Stats()["MailerFunction"].Ended }
	order := func(j int) measured {
		stamp := time.Now().UnixNano()
		meter.Reset()
		// The checkout (its function and its Stripe call) comes before
		// the payment: the window starts at the pay form's POST, whose
		// answer Stripe sends after the webhook's. From the checkout's
		// POST is reported beside it.
		m := measured{opened: time.Now()}
		payURL := checkout(b, s, "quick", fmt.Sprintf("Should I open a night market stall (%d)?", stamp))
		before := mailed()
		m.paid = time.Now()
		session = payAt(b, payURL, fmt.Sprintf("bench-%d@example.com", stamp))
		// The end is the mailer's own timestamp. While the order runs,
		// its end is awaited from the stack, which knows when the
		// mailer's invocation is over, not from moto: moto is one Python
		// process, and a read every few milliseconds would take its time
		// from the order's own requests. AWS serves no such poll.
		if !testkit.Eventually(30*time.Second, 2*time.Millisecond, func() bool { return mailed() > before }) {
			b.Fatalf("order %d: the mailer was not invoked within 30 s", j)
		}
		if !testkit.Eventually(30*time.Second, 20*time.Millisecond, func() bool {
			v, ok := orderItem(b, s, session)["mail_verdict_sent_at"].(*ddbtypes.AttributeValueMemberS)
			if ok {
				m.sent, err = time.Parse(time.RFC3339Nano, v.Value)
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
		// every queue empty and no function at work (an extension's
		// export after the answer included), nothing of the order runs
		// any more.
		if !testkit.Eventually(30*time.Second, 20*time.Millisecond, func() bool { return idle(b, q, s) && !s.Busy() }) {
			b.Fatalf("order %d: its queues never emptied", j)
		}
		return m
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
	var (
		took, withCheckout []time.Duration
		// counted is the order with the most round trips on its path, and
		// most the most requests an order made.
		counted orderFigures
		most    orderFigures
		fewest  = -1
		// where is where the orders' time went.
		where breakdown
	)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		took, withCheckout = took[:0], withCheckout[:0]
		for j := 0; j < ordersPerRound; j++ {
			m := order(j)
			took, withCheckout = append(took, m.sent.Sub(m.paid)), append(withCheckout, m.sent.Sub(m.opened))
			spans := pathSpans(b, s, session)
			c := countOrder(b, spans, meter.Counts())
			parts, err := orderParts(spans, m.paid, m.sent)
			if err != nil {
				b.Fatalf("order %d: %v", j, err)
			}
			where.add(parts)
			if c.trips > counted.trips {
				counted = c
			}
			if c.requests > most.requests {
				most = c
			}
			if fewest < 0 || c.trips < fewest {
				fewest = c.trips
			}
			trips.round(b)
		}
	}
	b.StopTimer()
	slices.Sort(took)
	slices.Sort(withCheckout)
	b.ReportMetric(ms(took[len(took)/2]), "p50-ms")
	p95 := percentile95(took)
	b.ReportMetric(ms(p95), "p95-ms")
	b.ReportMetric(ms(took[len(took)-1]), "max-ms")
	least, err := trips.floor(counted.path)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(ms(least), "floor-ms")
	b.ReportMetric(float64(p95)/float64(least), "p95/floor")
	b.ReportMetric(float64(counted.trips), "round-trips")
	b.ReportMetric(float64(most.requests), "requests/order")
	var line []string
	for kind, d := range trips.medians() {
		line = append(line, fmt.Sprintf("%s %.1f ms", kind, ms(d)))
	}
	slices.Sort(line)
	b.Logf("floor %.1f ms over %d round trips (%d to %d an order): %s", ms(least), counted.trips, fewest, counted.trips, strings.Join(line, ", "))
	b.Logf("from the checkout's POST instead of the payment: p50 %.1f ms, p95 %.1f ms (%.2f× the floor)",
		ms(withCheckout[len(withCheckout)/2]), ms(percentile95(withCheckout)), float64(percentile95(withCheckout))/float64(least))
	b.Logf("where an order's time went (median/p95 of %d, ms): %s", len(took), where.report(least))
	b.Logf("the path: %s", counted.chains)
	b.Logf("an order's requests, each with its span: %d DynamoDB and S3; all it made through the meter: %s", most.requests, most.all)
	b.Logf("its calls by function: %s", most.functions)
}

// orderFigures is what one order made: its path and the round trips on it,
// and its requests.
type orderFigures struct {
	path   traces.Path
	trips  int
	chains string
	// requests are its DynamoDB and S3 requests as the meter counted them,
	// all every request the meter saw by service and operation, functions
	// each function's AWS calls as the order's traces list them (each
	// trace's by start).
	requests       int
	all, functions string
}

// countOrder reads the order's path from its spans (order) and its requests from
// counts, the meter's since its payment. Each request the meter saw must
// have its span in the order's traces, and each span through the meter
// its request: a call made outside the order's trace could be on its path
// and not counted, and a request the SDK sent again (one span) is not the
// idle pipeline this measures.
func countOrder(tb testing.TB, order []traces.Span, counts map[string]int64) orderFigures {
	tb.Helper()
	path, err := traces.CriticalPath(order)
	if err != nil {
		tb.Fatalf("the order's path: %v", err)
	}
	n, chains := path.Longest(func(string) float64 { return 1 })
	c := orderFigures{path: path, trips: int(n)}
	var legs []string
	for _, chain := range chains {
		legs = append(legs, strings.Join(chain, " "))
	}
	c.chains = strings.Join(legs, " | ")
	// The spans by the meter's names: "DynamoDB.GetItem" is
	// "dynamodb.GetItem". SES's go to the SES front, not through the meter.
	spans, byFunction := map[string]int64{}, map[string][]string{}
	for _, sp := range order {
		if svc, ok := sp.Attributes["rpc.service"].(string); ok && sp.Attributes["rpc.system"] == "aws-api" {
			byFunction[sp.Service] = append(byFunction[sp.Service], sp.Name)
			if svc != "SESv2" {
				spans[strings.ToLower(svc)+"."+sp.Attributes["rpc.method"].(string)]++
			}
		}
	}
	var functions []string
	for _, fn := range slices.Sorted(maps.Keys(byFunction)) {
		functions = append(functions, fn+": "+strings.Join(byFunction[fn], " "))
	}
	c.functions = strings.Join(functions, " | ")
	ops := maps.Clone(counts)
	for op := range spans {
		ops[op] += 0
	}
	var all, differ []string
	for _, op := range slices.Sorted(maps.Keys(ops)) {
		if counts[op] != spans[op] {
			differ = append(differ, fmt.Sprintf("%s %d requests, %d spans", op, counts[op], spans[op]))
		}
		if strings.HasPrefix(op, "dynamodb.") || strings.HasPrefix(op, "s3.") {
			c.requests += int(counts[op])
		}
		if counts[op] > 0 {
			all = append(all, fmt.Sprintf("%d %s", counts[op], op))
		}
	}
	if len(differ) > 0 {
		tb.Fatalf("the order's requests and its spans disagree (%s): its path would be miscounted", strings.Join(differ, "; "))
	}
	c.all = strings.Join(all, ", ")
	return c
}

// pathSpans are the order's spans, from the stack's trace store.
func pathSpans(tb testing.TB, s *stack.Stack, session string) []traces.Span {
	tb.Helper()
	resp, err := http.Get(s.APIURL + "/_local/trace/" + session + "?format=json")
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct{ Spans []traces.Span }
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != http.StatusOK {
		tb.Fatalf("the order's spans: %d (%v)", resp.StatusCode, err)
	}
	return body.Spans
}

// measured is one order's times: its checkout's POST, its payment's and
// the mailer's stamp of the send.
type measured struct{ opened, paid, sent time.Time }

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

// percentile95 is the 95th percentile of sorted durations, the nearest
// rank.
func percentile95(sorted []time.Duration) time.Duration {
	return sorted[(len(sorted)*95+99)/100-1]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
