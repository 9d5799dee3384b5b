package stack_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"42sisters.ai/oracle/infra/local/stack"
	"42sisters.ai/oracle/infra/local/traces"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/mail"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/putonce"
)

// The pipeline's floor: the store, queue and mail round trips that one
// paid order waits for between the payment and the mailer's record of the
// send. They are counted from each measured order's spans
// (traces.CriticalPath: the AWS calls each function waited for before its
// hand-off, calls in flight together one wait, and one receive for each
// queue between two functions), and each kind's round trip is measured
// here between the orders. The hops that are no store, queue or mail call
// (Stripe's webhook request, the model, the Stripe session read, each
// Lambda invocation) are not in the floor: they are what the budget's
// factor leaves room for.

// roundTrips measures a round trip of each kind of call an order's path
// can hold against the stack's own moto and SES front, as the functions
// make it (the same tables, bucket and kind of queue, conditional writes
// where they write conditionally, through the meter when the functions'
// calls pass it): each round makes one of each kind. Rounds are taken
// between the orders, on the idle stack, so that the floor and the orders
// are measured over the same stretch of the run.
type roundTrips struct {
	calls []roundTrip
	took  map[string][]time.Duration
	n     int
	close func()
}

// roundTrip is one kind of call, made as the functions make it.
type roundTrip struct {
	kind string
	call func(i int) error
}

// newRoundTrips prepares the round trips; session is an order the stack
// holds, read and updated as the functions read and update orders. Its
// first round only warms the connections.
func newRoundTrips(tb testing.TB, s *stack.Stack, session string) *roundTrips {
	tb.Helper()
	ctx := context.Background()
	// The functions' calls take the functions' way; the receive is the
	// event source's, which reaches SQS itself.
	fns := s.FunctionsAWS()
	db := dynamodb.NewFromConfig(fns)
	q := sqs.NewFromConfig(fns)
	poll := sqs.NewFromConfig(s.AWS)
	bucket := awsenv.S3(fns)
	sesCfg := s.AWS.Copy()
	sesCfg.BaseEndpoint = aws.String(s.SESURL)
	ses := &mail.SES{Client: mail.NewClient(sesCfg), Now: time.Now}
	from := s.Deployment().Parameters["MailSender"]
	ledger, orders := s.Resources.Ref("LedgerTable"), s.Resources.Ref("OrdersTable")
	run := fmt.Sprintf("bench-roundtrip-%d", time.Now().UnixNano())
	created, err := q.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(run)})
	if err != nil {
		tb.Fatal(err)
	}
	queueURL := created.QueueUrl
	key := func(i int) map[string]ddbtypes.AttributeValue {
		return map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: fmt.Sprintf("%s#%d", run, i)}}
	}
	order := map[string]ddbtypes.AttributeValue{"session_id": &ddbtypes.AttributeValueMemberS{Value: session}}
	expires := &ddbtypes.AttributeValueMemberN{Value: fmt.Sprint(time.Now().Add(time.Hour).Unix())}
	record := []byte(`{"event":"bench_round_trip","detail":"` + strings.Repeat("x", 1200) + `"}`)
	job := aws.String(`{"session_id":"cs_test_bench_round_trip_0000000000000000000000000000000000000","reason":"paid"}`)
	text := strings.Repeat("The verdict, its reasons and what to do next. ", 60)
	// Each kind by its span's name, as traces.CriticalPath names the
	// path's calls; a message sent before it is received.
	calls := []roundTrip{
		{"DynamoDB.GetItem", func(i int) error {
			in := &dynamodb.GetItemInput{TableName: aws.String(ledger), Key: key(i), ConsistentRead: aws.Bool(true)}
			if i%2 == 0 {
				in.TableName, in.Key = aws.String(orders), order
			}
			_, err := db.GetItem(ctx, in)
			return err
		}},
		{"DynamoDB.PutItem", func(i int) error {
			item := key(i)
			item["expires_at"] = expires
			_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(ledger), Item: item, ConditionExpression: aws.String("attribute_not_exists(pk)")})
			return err
		}},
		// An order's update as StartGeneration, StoreVerdict and ClaimMail
		// make theirs (attributes set under a two-clause condition, the
		// item returned), and a Ledger item's as KeepOriginal makes its.
		{"DynamoDB.UpdateItem", func(i int) error {
			now := &ddbtypes.AttributeValueMemberS{Value: time.Now().UTC().Format(time.RFC3339Nano)}
			in := &dynamodb.UpdateItemInput{TableName: aws.String(ledger), Key: key(i),
				UpdateExpression: aws.String("SET verdict = if_not_exists(verdict, :v), verdict_hash = if_not_exists(verdict_hash, :h), " +
					"created_at = if_not_exists(created_at, :now), expires_at = :exp"),
				ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":v": &ddbtypes.AttributeValueMemberS{Value: "AMBER"},
					":h": &ddbtypes.AttributeValueMemberS{Value: strings.Repeat("ab", 32)}, ":now": now, ":exp": expires}}
			if i%2 == 0 {
				in = &dynamodb.UpdateItemInput{TableName: aws.String(orders), Key: order,
					UpdateExpression:         aws.String("SET bench_lease = :lease, bench_attempt = :n, bench_at = :now, bench_until = :exp, updated_at = :now, bench_write = :lease"),
					ConditionExpression:      aws.String("attribute_exists(session_id) AND #s = :ready"),
					ExpressionAttributeNames: map[string]string{"#s": "status"},
					ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":lease": &ddbtypes.AttributeValueMemberS{Value: fmt.Sprintf("%s-%d", run, i)},
						":n": &ddbtypes.AttributeValueMemberN{Value: fmt.Sprint(i)}, ":now": now, ":exp": expires,
						":ready": &ddbtypes.AttributeValueMemberS{Value: string(oracle.StatusReady)}},
					ReturnValues: ddbtypes.ReturnValueAllNew}
			}
			_, err := db.UpdateItem(ctx, in)
			return err
		}},
		{"S3.PutObject", func(i int) error {
			_, err := putonce.Put(ctx, bucket, fmt.Sprintf("%s/%d.json", run, i), record, &s3.PutObjectInput{
				Bucket: aws.String(s.Resources.Ref("AuditBucket")), ContentType: aws.String("application/json")})
			return err
		}},
		{"SQS.SendMessage", func(int) error {
			_, err := q.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: queueURL, MessageBody: job})
			return err
		}},
		{traces.ReceiveKind, func(int) error {
			out, err := poll.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: queueURL, MaxNumberOfMessages: 10, WaitTimeSeconds: 20})
			if err == nil && len(out.Messages) == 0 {
				err = fmt.Errorf("no message to receive")
			}
			return err
		}},
		{"SESv2.SendEmail", func(i int) error {
			_, err := ses.Send(ctx, mail.Outgoing{From: from, To: "success@simulator.amazonses.com",
				Subject: fmt.Sprintf("Round trip %d", i), Text: text, HTML: "<p>" + text + "</p>"})
			return err
		}},
	}
	r := &roundTrips{calls: calls, took: map[string][]time.Duration{},
		close: func() { _, _ = q.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: queueURL}) }}
	r.round(tb)
	r.took = map[string][]time.Duration{}
	return r
}

// round makes one round trip of each kind.
func (r *roundTrips) round(tb testing.TB) {
	tb.Helper()
	r.n++
	for _, c := range r.calls {
		start := time.Now()
		if err := c.call(r.n); err != nil {
			tb.Fatalf("round trip %s: %v", c.kind, err)
		}
		r.took[c.kind] = append(r.took[c.kind], time.Since(start))
	}
}

// medians are each kind's median round trip.
func (r *roundTrips) medians() map[string]time.Duration {
	out := map[string]time.Duration{}
	for kind, took := range r.took {
		took = slices.Sorted(slices.Values(took))
		out[kind] = took[len(took)/2]
	}
	return out
}

// floor is the path's longest wait with each call weighed by its kind's
// median round trip, and the path's round trips; an error names a kind of
// call on the path that no round trip measures.
func (r *roundTrips) floor(p traces.Path) (time.Duration, error) {
	medians := r.medians()
	var unknown []string
	least, _ := p.Longest(func(kind string) float64 {
		d, ok := medians[kind]
		if !ok && !slices.Contains(unknown, kind) {
			unknown = append(unknown, kind)
		}
		return float64(d)
	})
	if len(unknown) > 0 {
		return 0, fmt.Errorf("the path makes %s, whose round trip the floor does not measure (roundTrips in floor_test.go)", strings.Join(unknown, ", "))
	}
	return time.Duration(least), nil
}
