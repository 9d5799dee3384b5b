package provision_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/infra/sam"
	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/config"
	"42sisters.ai/oracle/shared/store"
)

func TestProvisionFollowsTheTemplate(t *testing.T) {
	ctx := context.Background()
	f := provision.ForTest(t, map[string]string{"StripeSecretKeyArn": "sk_test_x", "HashPepperArn": "pepper-pepper-pepper", "StripeTestWebhookSecretArn": "whsec_x", "StripeWebhookSecretArn": ""})

	// Queues carry the template's redrive policy and visibility timeout.
	q := sqs.NewFromConfig(f.AWS)
	a, err := q.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(f.Ref("GenerateQueue")), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll}})
	if err != nil {
		t.Fatal(err)
	}
	var rp struct {
		DeadLetterTargetArn string `json:"deadLetterTargetArn"`
		MaxReceiveCount     any    `json:"maxReceiveCount"`
	}
	if err := json.Unmarshal([]byte(a.Attributes["RedrivePolicy"]), &rp); err != nil || rp.DeadLetterTargetArn != f.Attr("DeadLetterQueue.Arn") {
		t.Fatalf("redrive %q: %v", a.Attributes["RedrivePolicy"], err)
	}
	if a.Attributes["VisibilityTimeout"] != "900" {
		t.Fatalf("visibility timeout %s", a.Attributes["VisibilityTimeout"])
	}

	// Tables have their keys and TTL.
	db := dynamodb.NewFromConfig(f.AWS)
	for table, key := range map[string]string{"OrdersTable": "session_id", "LedgerTable": "pk"} {
		d, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(f.Ref(table))})
		if err != nil || aws.ToString(d.Table.KeySchema[0].AttributeName) != key {
			t.Fatalf("%s: %v", table, err)
		}
		ttl, err := db.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(f.Ref(table))})
		if err != nil || aws.ToString(ttl.TimeToLiveDescription.AttributeName) != "expires_at" {
			t.Fatalf("%s TTL: %v", table, err)
		}
	}
	// The status index projects what its readers (the health job) read.
	d, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(f.Ref("OrdersTable"))})
	if err != nil {
		t.Fatal(err)
	}
	var projected []string
	for _, g := range d.Table.GlobalSecondaryIndexes {
		if aws.ToString(g.IndexName) == "by_status" && g.Projection != nil {
			projected = g.Projection.NonKeyAttributes
		}
	}
	if !slices.Equal(projected, store.IndexedAttributes()) {
		t.Fatalf("by_status projects %q, want %q", projected, store.IndexedAttributes())
	}
	// No index ties an order, which holds the query, to the customer's
	// address (PRODUCT_TIERS INV-5): Stripe keeps the address.
	for _, a := range d.Table.AttributeDefinitions {
		if strings.Contains(strings.ToLower(aws.ToString(a.AttributeName)), "email") {
			t.Errorf("the Orders table is indexed by %s", aws.ToString(a.AttributeName))
		}
	}

	// The audit bucket has Object Lock and versioning.
	c := awsenv.S3(f.AWS)
	lock, err := c.GetObjectLockConfiguration(ctx, &s3.GetObjectLockConfigurationInput{Bucket: aws.String(f.Ref("AuditBucket"))})
	if err != nil || lock.ObjectLockConfiguration.Rule == nil || string(lock.ObjectLockConfiguration.Rule.DefaultRetention.Mode) != "COMPLIANCE" {
		t.Fatalf("object lock: %+v %v", lock, err)
	}

	// Every function's environment resolves, resources by their provisioned
	// names and secrets by ARN only.
	tmpl, err := sam.Load(provision.TemplatePath())
	if err != nil {
		t.Fatal(err)
	}
	fns := tmpl.Functions()
	if len(fns) < 2 {
		t.Fatalf("%d functions", len(fns))
	}
	withTable := 0
	for _, fn := range fns {
		env, err := f.Env(fn)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range env {
			if strings.Contains(v, "sk_test_x") || strings.Contains(v, "whsec_x") || strings.Contains(v, "pepper-pepper") {
				t.Fatalf("%s: secret %s passed in plaintext", fn.LogicalID, k)
			}
		}
		if table, ok := env["ORDERS_TABLE"]; ok {
			withTable++
			if table != f.Ref("OrdersTable") {
				t.Fatalf("%s: ORDERS_TABLE=%q, want %q", fn.LogicalID, table, f.Ref("OrdersTable"))
			}
		}
	}
	if withTable == 0 {
		t.Fatal("no function gets ORDERS_TABLE")
	}
}

func TestProvisionIsIdempotent(t *testing.T) {
	f := provision.ForTest(t, map[string]string{"HashPepperArn": "first-value-0123456789"})
	// A second run must also work once the stack has been used.
	if _, err := awsenv.S3(f.AWS).PutObject(context.Background(), &s3.PutObjectInput{
		Bucket: aws.String(f.Ref("AuditBucket")), Key: aws.String("records/x.json"), Body: strings.NewReader("{}"),
		ChecksumAlgorithm: s3types.ChecksumAlgorithmSha256,
	}); err != nil {
		t.Fatal(err)
	}
	tmpl, _ := sam.Load(provision.TemplatePath())
	again, err := provision.Provision(context.Background(), provision.Options{
		Template: tmpl, AWS: f.AWS, Prefix: strings.TrimSuffix(f.Ref("OrdersTable"), "OrdersTable"),
		Params:  map[string]string{"BaseUrl": "http://localhost:3000", "AllowedOrigins": "http://localhost:3000"},
		Secrets: map[string]string{"HashPepperArn": "second-value-0123456789"},
	})
	if err != nil {
		t.Fatalf("second provisioning failed: %v", err)
	}
	if again.Ref("GenerateQueue") != f.Ref("GenerateQueue") || again.Values.Params["HashPepperArn"] != f.Values.Params["HashPepperArn"] {
		t.Fatal("second provisioning changed names")
	}
}

// SES's events reach the feedback function's queue through the template's
// subscription, and provisioning again (a second `make run` on one moto)
// does not subscribe the queue twice, which would deliver each event twice.
func TestMailEventsReachTheirQueueOnce(t *testing.T) {
	ctx := context.Background()
	f := provision.ForTest(t, nil)
	tmpl, _ := sam.Load(provision.TemplatePath())
	if _, err := provision.Provision(ctx, provision.Options{
		Template: tmpl, AWS: f.AWS, Prefix: strings.TrimSuffix(f.Ref("OrdersTable"), "OrdersTable"),
		Params: map[string]string{"BaseUrl": "http://localhost:3000", "AllowedOrigins": "http://localhost:3000"},
	}); err != nil {
		t.Fatal(err)
	}
	topics := sns.NewFromConfig(f.AWS)
	subs, err := topics.ListSubscriptionsByTopic(ctx, &sns.ListSubscriptionsByTopicInput{TopicArn: aws.String(f.Ref("MailEventsTopic"))})
	if err != nil || len(subs.Subscriptions) != 1 || aws.ToString(subs.Subscriptions[0].Endpoint) != f.Attr("MailEventsQueue.Arn") {
		t.Fatalf("subscriptions %+v %v, want the mail events queue once", subs, err)
	}
	if _, err := topics.Publish(ctx, &sns.PublishInput{TopicArn: aws.String(f.Ref("MailEventsTopic")), Message: aws.String(`{"eventType":"Delivery"}`)}); err != nil {
		t.Fatal(err)
	}
	q := sqs.NewFromConfig(f.AWS)
	var bodies []string
	testkit.Eventually(10*time.Second, 50*time.Millisecond, func() bool {
		bodies = append(bodies, testkit.Drain(t, q, f.Ref("MailEventsQueue"))...)
		return len(bodies) > 0
	})
	if len(bodies) != 1 || !strings.Contains(bodies[0], `"Notification"`) || !strings.Contains(bodies[0], `Delivery`) {
		t.Fatalf("the queue received %q, want the one event in SNS's envelope", bodies)
	}
}

// A function's schedules resolve against the parameters given to Provision,
// and an unnamed one is named after the function and the event.
func TestSchedulesResolveWithTheParameters(t *testing.T) {
	tmpl, err := sam.Parse([]byte(`
Parameters:
  HealthPeriodMinutes: {Type: Number, Default: 5}
Resources:
  HealthFunction:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: functions/health/
      Events:
        Every:
          Type: Schedule
          Properties:
            Schedule: !Sub "rate(${HealthPeriodMinutes} minutes)"
        Named:
          Type: Schedule
          Properties:
            Schedule: cron(0 7 * * ? *)
            Name: !Sub "${AWS::Region}-smoke"
            Enabled: false
`))
	if err != nil {
		t.Fatal(err)
	}
	// No resource to create: provisioning calls no AWS API.
	for _, tc := range []struct {
		params map[string]string
		every  string
	}{
		{nil, "rate(5 minutes)"},
		{map[string]string{"HealthPeriodMinutes": "15"}, "rate(15 minutes)"},
	} {
		st, err := provision.Provision(context.Background(), provision.Options{Template: tmpl, AWS: aws.Config{Region: provision.TestRegion}, Prefix: "p-", Params: tc.params})
		if err != nil {
			t.Fatal(err)
		}
		got, err := st.Schedules(tmpl.Functions()[0])
		if err != nil {
			t.Fatal(err)
		}
		want := []sam.Schedule{
			{Event: "Every", Type: "Schedule", Expression: tc.every, Enabled: true, Name: "p-HealthFunctionEvery"},
			{Event: "Named", Type: "Schedule", Expression: "cron(0 7 * * ? *)", Name: provision.TestRegion + "-smoke"},
		}
		if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
			t.Errorf("params %v: Schedules = %+v, want %+v", tc.params, got, want)
		}
	}
}

// The local stack keeps its credentials as the deploy guide has the
// operator keep them: standard-tier SSM SecureStrings, each parameter set
// to the ARN a function reads with decryption (config.AWSSecrets).
func TestSecretsAreSecureStrings(t *testing.T) {
	ctx := context.Background()
	f := provision.ForTest(t, map[string]string{"HashPepperArn": "pepper-pepper-pepper", "StripeWebhookSecretArn": ""})
	arn := f.Values.Params["HashPepperArn"]
	if !strings.HasPrefix(arn, "arn:aws:ssm:") || !strings.Contains(arn, ":parameter/") {
		t.Fatalf("HashPepperArn = %q, want an SSM parameter's ARN", arn)
	}
	if f.Values.Params["StripeWebhookSecretArn"] != "" {
		t.Errorf("an empty secret was stored: %q", f.Values.Params["StripeWebhookSecretArn"])
	}
	out, err := ssm.NewFromConfig(f.AWS).GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(arn)})
	if err != nil {
		t.Fatal(err)
	}
	if p := out.Parameter; p.Type != ssmtypes.ParameterTypeSecureString || aws.ToString(p.Value) == "pepper-pepper-pepper" {
		t.Errorf("stored as %s, value readable without decryption: %v", p.Type, aws.ToString(p.Value) == "pepper-pepper-pepper")
	}
	if got, err := config.NewAWSSecrets(f.AWS).Secret(ctx, arn); err != nil || got != "pepper-pepper-pepper" {
		t.Errorf("a function reads %q (%v), want the pepper", got, err)
	}
}
