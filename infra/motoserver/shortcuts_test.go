package motoserver_test

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"42sisters.ai/oracle/infra/motoserver"
	"42sisters.ai/oracle/shared/awsenv"
)

// serve.py keeps each update expression's parsed tree and each traverser's
// map of node kinds: the same expression applied to two items with
// different values gives each its own (a tree shared between requests
// would carry the first request's values into the second), an expression
// that reads a missing path or does not parse is refused each time, and a
// condition is still checked.
func TestUpdateExpressionsKeptAcrossRequests(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	const expr = "SET #s = :s, attempts = if_not_exists(attempts, :zero) + :one, note = :note REMOVE lease"
	update := func(id, status, note string) error {
		_, err := f.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                 aws.String(f.orders),
			Key:                       map[string]types.AttributeValue{"session_id": str(id)},
			UpdateExpression:          aws.String(expr),
			ConditionExpression:       aws.String("attribute_not_exists(#s) OR #s <> :s"),
			ExpressionAttributeNames:  map[string]string{"#s": "status"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":s": str(status), ":zero": &types.AttributeValueMemberN{Value: "0"}, ":one": &types.AttributeValueMemberN{Value: "1"}, ":note": str(note)},
		})
		return err
	}
	ids := []string{"cs_test_kept_a_" + unique(), "cs_test_kept_b_" + unique()}
	for round := range 2 {
		for i, id := range ids {
			if err := update(id, fmt.Sprintf("S%d", round), fmt.Sprintf("note %d of %s", round, id)); err != nil {
				t.Fatalf("round %d, item %d: %v", round, i, err)
			}
		}
	}
	for _, id := range ids {
		if got := f.stored(t, f.orders, "session_id", id, "note"); got != "note 1 of "+id {
			t.Errorf("%s: note %q, want its own second one", id, got)
		}
		if got := f.stored(t, f.orders, "session_id", id, "status"); got != "S1" {
			t.Errorf("%s: status %q, want S1", id, got)
		}
	}
	// The same status again fails the condition, each time.
	for range 2 {
		if err := update(ids[0], "S1", "again"); !lost(err) {
			t.Fatalf("a failed condition: %v", err)
		}
	}
	for _, bad := range []string{"SET x = :missing", "SET = :s", "SET n = n + :one"} {
		for range 2 {
			_, err := f.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
				TableName:                 aws.String(f.orders),
				Key:                       map[string]types.AttributeValue{"session_id": str(ids[0])},
				UpdateExpression:          aws.String(bad),
				ExpressionAttributeValues: map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}, ":s": str("x")},
			})
			var api smithy.APIError
			if !errors.As(err, &api) || api.ErrorCode() != "ValidationException" {
				t.Errorf("%q: %v, want a ValidationException each time", bad, err)
			}
		}
	}
}

// serve.py reads SQS's clock as time.time() and a queue's retention from
// the queue: a burst of messages is received once each while in flight, a
// delayed message is not received before its delay, and a message
// received maxReceiveCount times moves to the dead-letter queue.
func TestQueuesKeepTheirSemantics(t *testing.T) {
	ctx := context.Background()
	q := sqs.NewFromConfig(awsenv.ForEndpoint(motoserver.ForTest(t), "us-east-1"))
	name := "semantics-" + unique()
	create := func(name string, attrs map[string]string) string {
		out, err := q.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToString(out.QueueUrl)
	}
	receive := func(url string) []sqstypes.Message {
		out, err := q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10})
		if err != nil {
			t.Fatal(err)
		}
		return out.Messages
	}

	jobs := create(name, map[string]string{"VisibilityTimeout": "300"})
	const n = 120
	for i := range n {
		if _, err := q.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(jobs), MessageBody: aws.String(fmt.Sprint(i))}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := q.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(jobs), MessageBody: aws.String("delayed"), DelaySeconds: 900}); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for {
		batch := receive(jobs)
		if len(batch) == 0 {
			break
		}
		for _, m := range batch {
			seen[aws.ToString(m.Body)]++
		}
	}
	if len(seen) != n {
		t.Errorf("%d distinct messages received, want %d (the delayed one not yet): %v", len(seen), n, seen["delayed"])
	}
	for body, times := range seen {
		if times != 1 {
			t.Errorf("message %s received %d times while in flight", body, times)
		}
	}

	dead := create(name+"-dlq", nil)
	dlqARN := "arn:aws:sqs:us-east-1:123456789012:" + name + "-dlq"
	redriven := create(name+"-redrive", map[string]string{"VisibilityTimeout": "0",
		"RedrivePolicy": `{"deadLetterTargetArn":"` + dlqARN + `","maxReceiveCount":"2"}`})
	if _, err := q.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(redriven), MessageBody: aws.String("poison")}); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if got := receive(redriven); len(got) != 1 {
			t.Fatalf("receive %d: %d messages, want the poison one again (visibility 0)", i+1, len(got))
		}
	}
	if got := receive(redriven); len(got) != 0 {
		t.Fatalf("a third receive got %d messages, want it moved to the dead-letter queue", len(got))
	}
	if got := receive(dead); len(got) != 1 || aws.ToString(got[0].Body) != "poison" {
		t.Fatalf("the dead-letter queue: %+v", got)
	}
}

func unique() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// serve.py signs SNS's deliveries with one certificate a subscription:
// two notifications delivered to a queue name the same SigningCertURL, and
// each one's signature verifies against the certificate served there.
func TestNotificationsSignedWithOneCertificate(t *testing.T) {
	ctx := context.Background()
	endpoint := motoserver.ForTest(t)
	cfg := awsenv.ForEndpoint(endpoint, "us-east-1")
	q, topics := sqs.NewFromConfig(cfg), sns.NewFromConfig(cfg)
	name := "signed-" + unique()
	queue, err := q.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	topic, err := topics.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := topics.Subscribe(ctx, &sns.SubscribeInput{TopicArn: topic.TopicArn, Protocol: aws.String("sqs"),
		Endpoint: aws.String("arn:aws:sqs:us-east-1:123456789012:" + name)}); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if _, err := topics.Publish(ctx, &sns.PublishInput{TopicArn: topic.TopicArn, Message: aws.String(fmt.Sprintf("event %d", i))}); err != nil {
			t.Fatal(err)
		}
	}
	out, err := q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: queue.QueueUrl, MaxNumberOfMessages: 10})
	if err != nil || len(out.Messages) != 2 {
		t.Fatalf("the two notifications: %v %d", err, len(out.Messages))
	}
	var urls []string
	for _, m := range out.Messages {
		var n struct{ Type, MessageId, TopicArn, Message, Timestamp, Signature, SigningCertURL string }
		if err := json.Unmarshal([]byte(aws.ToString(m.Body)), &n); err != nil {
			t.Fatal(err)
		}
		urls = append(urls, n.SigningCertURL)
		cert := signingCert(t, endpoint, n.SigningCertURL)
		signed := fmt.Sprintf("Message\n%s\nMessageId\n%s\nTimestamp\n%s\nTopicArn\n%s\nType\n%s\n", n.Message, n.MessageId, n.Timestamp, n.TopicArn, n.Type)
		sig, err := base64.StdEncoding.DecodeString(n.Signature)
		if err != nil {
			t.Fatal(err)
		}
		digest := sha256.Sum256([]byte(signed))
		if err := rsa.VerifyPKCS1v15(cert.PublicKey.(*rsa.PublicKey), crypto.SHA256, digest[:], sig); err != nil {
			t.Errorf("%q: the signature does not verify against %s: %v", n.Message, n.SigningCertURL, err)
		}
	}
	if urls[0] != urls[1] {
		t.Errorf("two certificates for one subscription: %q", urls)
	}
}

// signingCert fetches a SigningCertURL's certificate from moto (its path,
// asked of moto's SNS).
func signingCert(t *testing.T, endpoint, certURL string) *x509.Certificate {
	t.Helper()
	u, err := url.Parse(certURL)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodGet, endpoint+u.Path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=test/20260101/us-east-1/sns/aws4_request, SignedHeaders=host, Signature=0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v %s", u.Path, resp.StatusCode, err, b)
	}
	block, _ := pem.Decode(b)
	if block == nil {
		t.Fatalf("GET %s: no PEM: %s", u.Path, b)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

// Messages sent while others are received and deleted, by many clients at
// once, are each received once: none dropped by a delete that rebuilt the
// queue meanwhile, none handed to two receivers while in flight.
func TestQueueSendsRacedWithReceivesAndDeletes(t *testing.T) {
	ctx := context.Background()
	q := sqs.NewFromConfig(awsenv.ForEndpoint(motoserver.ForTest(t), "us-east-1"))
	out, err := q.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("raced-" + unique()), Attributes: map[string]string{"VisibilityTimeout": "600"}})
	if err != nil {
		t.Fatal(err)
	}
	url := out.QueueUrl
	const senders, receivers, each = 8, 8, 40
	var mu sync.Mutex
	// Each message by its id (a receiver handed one another has is the
	// bug), each body seen (a body never seen is a message lost). The SDK
	// sends a message again when a send's answer is lost, as SQS's own
	// at-least-once sends do: two messages of one body, each its own id.
	got, bodies := map[string]int{}, map[string]bool{}
	var sending, receiving sync.WaitGroup
	sent := make(chan struct{})
	for s := range senders {
		sending.Go(func() {
			for i := range each {
				if _, err := q.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: url, MessageBody: aws.String(fmt.Sprintf("%d-%d", s, i))}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	go func() { sending.Wait(); close(sent) }()
	for range receivers {
		receiving.Go(func() {
			for {
				done := false
				select {
				case <-sent:
					done = true
				default:
				}
				msgs, err := q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: 10})
				if err != nil {
					t.Error(err)
					return
				}
				if len(msgs.Messages) == 0 && done {
					return
				}
				var entries []sqstypes.DeleteMessageBatchRequestEntry
				mu.Lock()
				for i, m := range msgs.Messages {
					got[aws.ToString(m.MessageId)]++
					bodies[aws.ToString(m.Body)] = true
					entries = append(entries, sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), ReceiptHandle: m.ReceiptHandle})
				}
				mu.Unlock()
				if len(entries) > 0 {
					if _, err := q.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: url, Entries: entries}); err != nil {
						t.Error(err)
					}
				}
			}
		})
	}
	receiving.Wait()
	lostN, twice := 0, 0
	for s := range senders {
		for i := range each {
			if !bodies[fmt.Sprintf("%d-%d", s, i)] {
				lostN++
			}
		}
	}
	for _, n := range got {
		if n > 1 {
			twice++
		}
	}
	if lostN > 0 || twice > 0 {
		t.Errorf("of %d messages, %d never received and %d received more than once", senders*each, lostN, twice)
	}
}
