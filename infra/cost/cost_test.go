package main

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"42sisters.ai/oracle/infra/sam"
	"42sisters.ai/oracle/shared/chatreply"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Max(1, math.Abs(b)) }

// TestRunLines prices measured runs by hand: each case names the total it
// must come to.
func TestRunLines(t *testing.T) {
	routed := map[string]bool{"WebhookFunction": true}
	queued := map[string]bool{"GeneratorFunction": true}
	for _, tc := range []struct {
		name string
		run  measuredRun
		want float64
	}{
		{"nothing used costs nothing", measuredRun{Orders: 1}, 0},
		{"a function: requests, GB-seconds at its memory, a trace, an API request if routed",
			measuredRun{Orders: 1, Functions: map[string]functionStats{"WebhookFunction": {Invocations: 2, BilledMS: 1000, MemoryMB: 512}}},
			2*lambdaPerRequest + 0.5*lambdaPerGBSecondArm + 2*xrayPerTrace + 2*httpAPIPerRequest},
		{"a queue-triggered function: its batches' receive and delete",
			measuredRun{Orders: 1, Functions: map[string]functionStats{"GeneratorFunction": {Invocations: 3, BilledMS: 0, MemoryMB: 256}}},
			3*lambdaPerRequest + 3*xrayPerTrace + 6*sqsPerRequest},
		{"DynamoDB units, SQS chunks, S3 by class, SNS, secrets, KMS, emails, logs",
			measuredRun{Orders: 1, Emails: 3, LogBytes: 2e9, AWS: usage{WriteUnits: 10, Operations: map[string]requests{
				"dynamodb.GetItem":              {Count: 4, ReadUnits: 5},
				"dynamodb.UpdateItem":           {Count: 10},
				"sqs.SendMessage":               {Count: 2, SQSChunks: 3},
				"s3.GetObject":                  {Count: 7},
				"s3.HeadObject":                 {Count: 1},
				"sns.Publish":                   {Count: 2},
				"secretsmanager.GetSecretValue": {Count: 4},
				"kms.Decrypt":                   {Count: 5},
			}}},
			5*dynamoPerReadUnit + 10*dynamoPerWriteUnit + 3*sqsPerRequest + 8*s3PerGet + 2*snsPerPublish +
				4*secretsPerCall + 5*kmsPerRequest + 3*sesPerMessage + 2*logsPerGB},
		{"S3 puts, and what they put stored for the retention",
			measuredRun{Orders: 1, AWS: usage{Operations: map[string]requests{"s3.PutObject": {Count: 2, RequestBytes: 3e9}}}},
			2*s3PerPut + 3*(60.0/daysPerMonth)*s3PerGBMonth},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lines, unpriced := runLines(tc.run, routed, queued, 60)
			if got := total(lines); !near(got, tc.want) {
				t.Errorf("total $%.12f, want $%.12f", got, tc.want)
			}
			if len(unpriced) != 0 {
				t.Errorf("unpriced %v", unpriced)
			}
		})
	}
}

func TestUnknownOperationsAreListedNotPriced(t *testing.T) {
	lines, unpriced := runLines(measuredRun{Orders: 1, AWS: usage{Operations: map[string]requests{"ssm.GetParameter": {Count: 3}}}}, nil, nil, 1)
	if total(lines) != 0 || len(unpriced) != 1 || unpriced[0] != "ssm.GetParameter (3)" {
		t.Errorf("total %v, unpriced %v; want 0 and the operation with its count", total(lines), unpriced)
	}
}

func TestPerVerdict(t *testing.T) {
	lines := []line{{Quantity: 4, Price: 0.5}, {Quantity: 2, Price: 1}}
	for _, tc := range []struct {
		orders int
		want   float64
	}{{1, 4}, {4, 1}, {0, 0}} {
		if got := perVerdict(measuredRun{Orders: tc.orders}, lines); got != tc.want {
			t.Errorf("%d orders: %v, want %v", tc.orders, got, tc.want)
		}
	}
}

func TestFirings(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		expr string
		want int
	}{
		{"rate(5 minutes)", 30*24*12 - 1}, // the first one period after the start, the last before the end
		{"rate(1 day)", 29},
		{"cron(0 7 * * ? *)", 30},
		{"cron(30 0 * * ? *)", 30},
	} {
		if got, err := firings(tc.expr, start, 30); err != nil || got != tc.want {
			t.Errorf("%s: %d (%v), want %d", tc.expr, got, err, tc.want)
		}
	}
	if _, err := firings("every day", start, 30); err == nil {
		t.Error("an expression that does not parse was counted")
	}
}

const idleTemplate = `
Parameters:
  Transport: {Type: String, Default: ses}
  HashPepperArn: {Type: String}
  GraphCredentialsArn: {Type: String, Default: ""}
  SecretsKmsKeyArn: {Type: String, Default: ""}
Conditions:
  Graph: !Equals [!Ref Transport, graph]
Resources:
  Queue: {Type: AWS::SQS::Queue}
  A1: {Type: AWS::CloudWatch::Alarm}
  A2: {Type: AWS::CloudWatch::Alarm}
  Board: {Type: AWS::CloudWatch::Dashboard}
  Key: {Type: AWS::KMS::Key}
  Filter: {Type: AWS::Logs::MetricFilter}
  HealthFunction:
    Type: AWS::Serverless::Function
    Properties:
      MemorySize: 1024
      Events:
        Every: {Type: Schedule, Properties: {Schedule: rate(1 day)}}
        Off: {Type: Schedule, Properties: {Schedule: rate(1 minute), State: !If [Graph, ENABLED, DISABLED]}}
        Jobs: {Type: SQS, Properties: {Queue: !GetAtt Queue.Arn}}
`

// TestIdleLines prices a small template's idle month by hand.
func TestIdleLines(t *testing.T) {
	tmpl, err := sam.Parse([]byte(idleTemplate))
	if err != nil {
		t.Fatal(err)
	}
	lines, err := idleLines(tmpl, map[string]string{}, 0.001)
	if err != nil {
		t.Fatal(err)
	}
	health := lambdaPerRequest + 1*1*lambdaPerGBSecondArm + healthRunReads*dynamoPerReadUnit + s3PerPut
	want := 2*alarmPerMonth + dashboardPerMonth + kmsKeyPerMonth + 1*secretPerMonth + metricPerMonth +
		29*health + // rate(1 day) in 30 days; the disabled schedule not at all
		sqsIdlePollers*secondsPerMonth/sqsIdlePollSeconds*sqsPerRequest
	if got := total(lines); !near(got, want) {
		t.Errorf("idle month $%.6f, want $%.6f:\n%v", got, want, lines)
	}
	for _, l := range lines {
		if strings.Contains(l.What, "Secrets") && (strings.Contains(l.What, "Graph") || !strings.Contains(l.What, "HashPepperArn")) {
			t.Errorf("secrets counted: %s; want the pepper only (no Graph with SES, no KMS key)", l.What)
		}
	}
}

// A chat exchange is priced from the tokens its three calls used at the
// bounds, each reading the whole history and the message; its ceiling is
// four calls, each as long as the longest prompt and writing its bound.
func TestChatExchangeIsPriced(t *testing.T) {
	c, err := measureChat(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	floor := 3 * (chatreply.MaxHistoryChars + chatreply.MaxMessageChars) / 4
	if c.Calls != 3 || c.Usage.PromptTokens < floor || c.Usage.OutputTokens == 0 {
		t.Fatalf("measured %+v, want 3 calls of at least %d input tokens together", c, floor)
	}
	if c.MostOutput != 2800 || c.MostInput < c.Usage.PromptTokens || c.most() <= c.measured() {
		t.Fatalf("ceiling %+v", c)
	}
	want := float64(c.Usage.PromptTokens)*0.30/1e6 + float64(c.Usage.OutputTokens)*2.50/1e6
	if !near(c.measured(), want) {
		t.Fatalf("measured $%.9f, want $%.9f", c.measured(), want)
	}
	var out strings.Builder
	printChat(&out, c)
	for _, s := range []string{"Sisters Chat", GeminiPricesDate, "per exchange: $", "per 1,000 exchanges"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("the chat's lines lack %q:\n%s", s, out.String())
		}
	}
}
