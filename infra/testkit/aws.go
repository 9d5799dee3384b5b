package testkit

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"42sisters.ai/oracle/shared/audit"
)

// Drain receives every message waiting on the queue at url (hiding each
// for a minute) and returns their bodies.
func Drain(tb testing.TB, c *sqs.Client, url string) []string {
	tb.Helper()
	ctx := context.Background()
	// A short poll may answer empty while a message waits (SQS samples its
	// servers; moto was seen to do it under load), so the drain first reads
	// how many messages the queue holds (moto counts them exactly) and
	// receives, with long polls, until it has them all; then it takes the
	// queue as drained after three empty answers in a row, not one.
	attrs, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(url),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages},
	})
	if err != nil {
		tb.Fatalf("drain %s: %v", url, err)
	}
	held, _ := strconv.Atoi(attrs.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessages)])
	var out []string
	for empty, deadline := 0, time.Now().Add(30*time.Second); ; {
		in := &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, VisibilityTimeout: 60}
		if len(out) < held {
			if time.Now().After(deadline) {
				tb.Fatalf("drain %s: the queue held %d messages, received %d in 30 s", url, held, len(out))
			}
			in.WaitTimeSeconds = 1
		}
		r, err := c.ReceiveMessage(ctx, in)
		if err != nil {
			tb.Fatalf("drain %s: %v", url, err)
		}
		if len(r.Messages) == 0 {
			if len(out) >= held {
				if empty++; empty == 3 {
					return out
				}
			}
			continue
		}
		empty = 0
		for _, m := range r.Messages {
			out = append(out, aws.ToString(m.Body))
		}
	}
}

// AuditRecords reads every record in the audit bucket, every line of each
// object. A record holding an email address fails the test: none may
// (SPEC_ORACLE_AUDIT_TRAIL VC-4).
func AuditRecords(tb testing.TB, c *s3.Client, bucket string) []audit.Record {
	tb.Helper()
	ctx := context.Background()
	l, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	if err != nil {
		tb.Fatalf("list audit records: %v", err)
	}
	var out []audit.Record
	for _, o := range l.Contents {
		g, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: o.Key})
		if err != nil {
			tb.Fatalf("read audit record: %v", err)
		}
		b, err := io.ReadAll(g.Body)
		g.Body.Close()
		if err != nil {
			tb.Fatalf("read audit record: %v", err)
		}
		if strings.Contains(string(b), "@") {
			tb.Fatalf("audit record %s holds an email address: %s", aws.ToString(o.Key), b)
		}
		recs, err := audit.Decode(aws.ToString(o.Key), b)
		if err != nil {
			tb.Fatalf("audit record %s: %v", aws.ToString(o.Key), err)
		}
		out = append(out, recs...)
	}
	return out
}

// AuditObjects reads every object in the audit bucket and returns the ids
// of its records, line by line, by the object's id (audit.IDOf: its last
// record's), so a test sees which records each step wrote together.
func AuditObjects(tb testing.TB, c *s3.Client, bucket string) map[string][]string {
	tb.Helper()
	ctx := context.Background()
	out := map[string][]string{}
	p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			tb.Fatalf("list audit records: %v", err)
		}
		for _, o := range page.Contents {
			g, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: o.Key})
			if err != nil {
				tb.Fatalf("read audit record: %v", err)
			}
			b, err := io.ReadAll(g.Body)
			g.Body.Close()
			if err != nil {
				tb.Fatalf("read audit record: %v", err)
			}
			recs, err := audit.Decode(aws.ToString(o.Key), b)
			if err != nil {
				tb.Fatalf("audit record %s: %v", aws.ToString(o.Key), err)
			}
			id := audit.IDOf(aws.ToString(o.Key))
			for _, r := range recs {
				out[id] = append(out[id], r.RecordID)
			}
		}
	}
	return out
}

// AlertTap subscribes a new queue to the alerts topic and returns a function
// that drains the alerts published since.
func AlertTap(tb testing.TB, cfg aws.Config, topicARN, region, account string) func() []string {
	tb.Helper()
	ctx := context.Background()
	c := sqs.NewFromConfig(cfg)
	name := topicARN[strings.LastIndex(topicARN, ":")+1:] + "-tap"
	q, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name)})
	if err != nil {
		tb.Fatalf("alert tap: %v", err)
	}
	if _, err := sns.NewFromConfig(cfg).Subscribe(ctx, &sns.SubscribeInput{
		TopicArn: aws.String(topicARN), Protocol: aws.String("sqs"),
		Endpoint:   aws.String(fmt.Sprintf("arn:aws:sqs:%s:%s:%s", region, account, name)),
		Attributes: map[string]string{"RawMessageDelivery": "true"},
	}); err != nil {
		tb.Fatalf("alert tap: %v", err)
	}
	url := aws.ToString(q.QueueUrl)
	return func() []string { return Drain(tb, c, url) }
}

// TableItems reads every item of table, each as the JSON of its attribute
// values: for the privacy sweeps, which look for what no item may hold.
func TableItems(tb testing.TB, cfg aws.Config, table string) []string {
	tb.Helper()
	var out []string
	p := dynamodb.NewScanPaginator(dynamodb.NewFromConfig(cfg), &dynamodb.ScanInput{TableName: aws.String(table)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			tb.Fatalf("scan %s: %v", table, err)
		}
		for _, item := range page.Items {
			var m map[string]any
			if err := attributevalue.UnmarshalMap(item, &m); err != nil {
				tb.Fatalf("scan %s: %v", table, err)
			}
			b, _ := json.Marshal(m)
			out = append(out, string(b))
		}
	}
	return out
}

// CorruptVerdict overwrites an order's stored verdict, as a faulty write
// would, past the store's conditions and its hash.
func CorruptVerdict(tb testing.TB, cfg aws.Config, table, sessionID, verdict string) {
	tb.Helper()
	_, err := dynamodb.NewFromConfig(cfg).UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName:                 aws.String(table),
		Key:                       map[string]ddbtypes.AttributeValue{"session_id": &ddbtypes.AttributeValueMemberS{Value: sessionID}},
		UpdateExpression:          aws.String("SET verdict = :v"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":v": &ddbtypes.AttributeValueMemberS{Value: verdict}},
	})
	if err != nil {
		tb.Fatalf("corrupt the verdict of %s: %v", sessionID, err)
	}
}
