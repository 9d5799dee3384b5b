package main

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"42sisters.ai/oracle/infra/provision"
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
  MailTransport: {Type: String, Default: ses}
  Board: {Type: String, Default: "yes"}
  HashPepperArn: {Type: String}
  GeminiApiKeyArn: {Type: String}
  GraphCredentialsArn: {Type: String, Default: ""}
  SecretsKmsKeyArn: {Type: String, Default: ""}
Conditions:
  Graph: !Equals [!Ref MailTransport, graph]
  HasBoard: !Equals [!Ref Board, "yes"]
Resources:
  Queue: {Type: AWS::SQS::Queue}
  A1: {Type: AWS::CloudWatch::Alarm}
  A2:
    Type: AWS::CloudWatch::Alarm
    Properties:
      Metrics:
        - {Id: a, MetricStat: {Metric: {MetricName: X}, Period: 60, Stat: Sum}, ReturnData: false}
        - {Id: b, MetricStat: {Metric: {MetricName: Y}, Period: 60, Stat: Sum}, ReturnData: false}
        - {Id: c, Expression: a + b}
  Board: {Type: AWS::CloudWatch::Dashboard, Condition: HasBoard}
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

// TestIdleLines prices a small template's idle month by hand: each
// credential by the kind of its ARN (SSM when not given, as the deploy
// guide makes them), a resource only when its condition holds.
func TestIdleLines(t *testing.T) {
	tmpl, err := sam.Parse([]byte(idleTemplate))
	if err != nil {
		t.Fatal(err)
	}
	health := lambdaPerRequest + 1*1*lambdaPerGBSecondArm + healthRunReads*dynamoPerReadUnit + s3PerPut
	// rate(1 day) in 30 days; the disabled schedule not at all
	// three alarm metrics (A2 reads two); the health job's metric all month
	// and 12 metric names an hour a day
	rest := 3*alarmPerMonth + (1+12.0/24)*metricPerMonth + kmsKeyPerMonth + metricPerMonth + 29*health + sqsIdlePollers*secondsPerMonth/sqsIdlePollSeconds*sqsPerRequest
	const sm, ssm = "arn:aws:secretsmanager:us-east-1:123456789012:secret:oracle/x-AbCdEf", "arn:aws:ssm:us-east-1:123456789012:parameter/oracle/x"
	for _, tc := range []struct {
		name    string
		params  map[string]string
		want    float64
		secrets string // the Secrets Manager line's names
	}{
		{"no ARNs given: both credentials SSM, free", map[string]string{}, rest + dashboardPerMonth, "()"},
		{"one in Secrets Manager", map[string]string{"GeminiApiKeyArn": sm, "HashPepperArn": ssm}, rest + dashboardPerMonth + secretPerMonth, "(GeminiApiKeyArn)"},
		{"both in Secrets Manager, no Graph with SES", map[string]string{"GeminiApiKeyArn": sm, "HashPepperArn": sm, "GraphCredentialsArn": sm}, rest + dashboardPerMonth + 2*secretPerMonth, "(GeminiApiKeyArn, HashPepperArn)"},
		{"with Graph, its credentials and its schedule too", map[string]string{"MailTransport": "graph", "GraphCredentialsArn": sm}, rest + dashboardPerMonth + secretPerMonth + (30*24*60-1)*health, "(GraphCredentialsArn)"},
		{"the dashboard's condition false", map[string]string{"Board": "no"}, rest, "()"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lines, err := idleLines(tmpl, tc.params, 0.001, 12)
			if err != nil {
				t.Fatal(err)
			}
			if got := idleTotal(lines); !near(got, tc.want) {
				t.Errorf("idle month $%.6f, want $%.6f:\n%v", got, tc.want, lines)
			}
			for _, l := range lines {
				if l.Key == "secretsmanager" && !strings.HasSuffix(l.What, tc.secrets) {
					t.Errorf("%s; want %s", l.What, tc.secrets)
				}
			}
		})
	}
}

// The baseline is the idle month `make cost` printed at c4c4584 ($16.63),
// with its alarms priced as now, by the metrics they read (36, not 32):
// $17.03.
func TestIdleBaseline(t *testing.T) {
	if got := idleTotal(idleBaseline); math.Abs(got-17.03) > 0.005 {
		t.Errorf("the baseline comes to $%.4f, want $17.03 (the $16.63 printed at %s, and four more alarm metrics)", got, IdleBaselineCommit)
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

// TestIdleLinesOfTheTemplate reads template.yaml as make cost does: its
// credentials are free as the deploy guide makes them (SSM), priced at
// $0.40 each when given as Secrets Manager ARNs, and it makes no KMS key.
func TestIdleLinesOfTheTemplate(t *testing.T) {
	tmpl, err := sam.Load(filepath.Join(filepath.Dir(provision.TemplatePath()), "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	byKey := func(params map[string]string) map[string]idleLine {
		lines, err := idleLines(tmpl, params, 0, 1)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]idleLine{}
		for _, l := range lines {
			m[l.Key] = l
		}
		return m
	}
	now := byKey(map[string]string{})
	if sm, ssm := now["secretsmanager"], now["ssm"]; sm.Quantity != 0 || ssm.Quantity < 6 || ssm.cost() != 0 {
		t.Errorf("documented kinds: %v, %v; want every credential an SSM parameter, free", sm, ssm)
	}
	if k := now["kms"]; k.cost() != 0 {
		t.Errorf("%v, want no KMS key", k)
	}
	arn := "arn:aws:secretsmanager:us-east-1:123456789012:secret:oracle/gemini-AbCdEf"
	if sm := byKey(map[string]string{"GeminiApiKeyArn": arn, "HashPepperArn": arn})["secretsmanager"]; !near(sm.cost(), 2*secretPerMonth) {
		t.Errorf("two Secrets Manager ARNs: %v", sm)
	}
}

// The metric names are counted from shared/obs/names.go's constants.
func TestMetricNamesAreCounted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "names.go")
	if err := os.WriteFile(path, []byte("package obs\n\nconst (\n\tA = \"A\"\n\tB, C = \"B\", \"C\"\n)\n\nvar notAName = 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if n, err := metricNames(path); err != nil || n != 3 {
		t.Errorf("metricNames = %d, %v; want 3", n, err)
	}
	n, err := metricNames(filepath.Join(filepath.Dir(provision.TemplatePath()), "shared", "obs", "names.go"))
	if err != nil || n < 30 {
		t.Errorf("the service's metric names: %d, %v; want its thirty-odd", n, err)
	}
}
