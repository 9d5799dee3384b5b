package motoserver

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"42sisters.ai/oracle/infra/tools"
	"42sisters.ai/oracle/shared/awsenv"
)

// Start's moto is a process for DynamoDB, one for S3 and one for the rest
// behind one endpoint: through it a client reaches every service as one
// server (an SNS topic delivers to an SQS queue, as SES's events reach the
// feedback queue), each service's state lives in its own process alone,
// and the state dump, moto's reset and serve.py's CPU and collector
// reports cover them all.
func TestStartRunsAProcessPerServiceGroup(t *testing.T) {
	tools.Find(t, "moto_server")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	m, err := Start(ctx, port)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Stop()
	if len(m.procs) != len(parts) {
		t.Fatalf("%d processes, want one for each of %d parts", len(m.procs), len(parts))
	}
	cfg := awsenv.ForEndpoint(m.Endpoint, "us-east-1")
	db, s3c, q, topics := dynamodb.NewFromConfig(cfg), awsenv.S3(cfg), sqs.NewFromConfig(cfg), sns.NewFromConfig(cfg)

	if _, err := db.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String("group-orders"),
		AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: ddbtypes.ScalarAttributeTypeS}},
		KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: ddbtypes.KeyTypeHash}},
		BillingMode:          ddbtypes.BillingModePayPerRequest,
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("group-audit")}); err != nil {
		t.Fatal(err)
	}
	queue, err := q.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("group-feedback")})
	if err != nil {
		t.Fatal(err)
	}
	topic, err := topics.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String("group-events")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := topics.Subscribe(ctx, &sns.SubscribeInput{TopicArn: topic.TopicArn, Protocol: aws.String("sqs"),
		Endpoint: aws.String("arn:aws:sqs:us-east-1:123456789012:group-feedback")}); err != nil {
		t.Fatal(err)
	}
	if _, err := topics.Publish(ctx, &sns.PublishInput{TopicArn: topic.TopicArn, Message: aws.String("delivered")}); err != nil {
		t.Fatal(err)
	}
	got, err := q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: queue.QueueUrl, WaitTimeSeconds: 5})
	if err != nil || len(got.Messages) != 1 || !strings.Contains(aws.ToString(got.Messages[0].Body), "delivered") {
		t.Fatalf("the topic's message in its queue: %v %+v", err, got)
	}

	// Each service's state is in its own process only.
	tables := func(endpoint string) []string {
		out, err := dynamodb.NewFromConfig(awsenv.ForEndpoint(endpoint, "us-east-1")).ListTables(ctx, &dynamodb.ListTablesInput{})
		if err != nil {
			t.Fatal(err)
		}
		return out.TableNames
	}
	buckets := func(endpoint string) int {
		out, err := awsenv.S3(awsenv.ForEndpoint(endpoint, "us-east-1")).ListBuckets(ctx, &s3.ListBucketsInput{})
		if err != nil {
			t.Fatal(err)
		}
		return len(out.Buckets)
	}
	for i, p := range m.procs {
		wantTables, wantBuckets := 0, 0
		switch parts[i].name {
		case "dynamodb":
			wantTables = 1
		case "s3":
			wantBuckets = 1
		}
		if n := len(tables(p.Endpoint)); n != wantTables {
			t.Errorf("moto's %s process has %d tables, want %d", parts[i].name, n, wantTables)
		}
		if n := buckets(p.Endpoint); n != wantBuckets {
			t.Errorf("moto's %s process has %d buckets, want %d", parts[i].name, n, wantBuckets)
		}
	}

	// The state dump has every service's state, from its own process.
	var dump map[string]json.RawMessage
	getJSON(t, m.Endpoint+"/moto-api/data.json", &dump)
	for _, want := range []string{`"group-orders"`, `"group-audit"`, `"group-feedback"`, `"group-events"`} {
		found := false
		for _, state := range dump {
			found = found || strings.Contains(string(state), want)
		}
		if !found {
			t.Errorf("the state dump lacks %s", want)
		}
	}
	// serve.py's CPU report sums the processes and names each.
	var cpu struct {
		ProcessCPU float64            `json:"process_cpu_s"`
		Processes  map[string]float64 `json:"processes"`
		Requests   map[string]struct {
			Count int `json:"count"`
		} `json:"requests"`
	}
	getJSON(t, m.Endpoint+cpuPath, &cpu)
	names := make([]string, 0, len(cpu.Processes))
	for name := range cpu.Processes {
		names = append(names, name)
	}
	slices.Sort(names)
	if strings.Join(names, " ") != "dynamodb rest s3" || cpu.Requests["dynamodb.CreateTable"].Count != 1 || cpu.Requests["sns.Publish"].Count != 1 {
		t.Errorf("the CPU report: %+v", cpu)
	}
	// Each process's collector reports under its part's name.
	var collectors struct {
		Processes map[string]collectorReport `json:"processes"`
	}
	getJSON(t, m.Endpoint+gcPath, &collectors)
	if len(collectors.Processes) != len(parts) {
		t.Errorf("the collectors' report: %+v", collectors)
	}
	for name, r := range collectors.Processes {
		if r.Threshold != 20_000 {
			t.Errorf("%s's process collects at Python's threshold, in its requests: %+v", name, r)
		}
	}
	// moto's reset empties every process.
	resp, err := http.Post(m.Endpoint+"/moto-api/reset", "application/json", nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("reset: %v %v", err, resp)
	}
	resp.Body.Close()
	if n := len(tables(m.Endpoint)); n != 0 {
		t.Errorf("%d tables after moto's reset", n)
	}
	if n := buckets(m.Endpoint); n != 0 {
		t.Errorf("%d buckets after moto's reset", n)
	}
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); resp.StatusCode != http.StatusOK || err != nil {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
}
