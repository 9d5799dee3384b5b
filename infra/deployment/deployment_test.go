package deployment_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"

	"42sisters.ai/oracle/infra/deployment"
	"42sisters.ai/oracle/infra/motoserver"
	"42sisters.ai/oracle/shared/awsenv"
)

const region = "ca-central-1"

// A stack as small as can have an output and parameters: what Describe
// reads of a deployed one.
const template = `
Parameters:
  StripeTestWebhookSecretArn:
    Type: String
  MailTransport:
    Type: String
    Default: ses
Resources:
  Alerts:
    Type: AWS::SNS::Topic
Outputs:
  AlertsTopicArn:
    Value: !Ref Alerts
`

// TestDescribeReadsADeployedStack creates a stack in moto's CloudFormation
// and reads it back: its outputs and every parameter, defaults included.
func TestDescribeReadsADeployedStack(t *testing.T) {
	cfg := awsenv.ForEndpoint(motoserver.ForTest(t), region)
	cfn := cloudformation.NewFromConfig(cfg)
	ctx := context.Background()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := "oracle-" + hex.EncodeToString(b)
	arn := "arn:aws:secretsmanager:ca-central-1:123456789012:secret:whsec-test"
	if _, err := cfn.CreateStack(ctx, &cloudformation.CreateStackInput{
		StackName:    aws.String(name),
		TemplateBody: aws.String(template),
		Parameters:   []cfntypes.Parameter{{ParameterKey: aws.String("StripeTestWebhookSecretArn"), ParameterValue: aws.String(arn)}},
	}); err != nil {
		t.Fatal(err)
	}
	d, err := deployment.Describe(ctx, cfn, region, name)
	if err != nil {
		t.Fatal(err)
	}
	if d.Name != name || d.Region != region || d.AWSEndpoint != "" {
		t.Errorf("described %+v", d)
	}
	if topic, err := d.Output("AlertsTopicArn"); err != nil || !strings.HasPrefix(topic, "arn:aws:sns:"+region+":") {
		t.Errorf("AlertsTopicArn %q, %v", topic, err)
	}
	if want := map[string]string{"StripeTestWebhookSecretArn": arn, "MailTransport": "ses"}; !reflect.DeepEqual(d.Parameters, want) {
		t.Errorf("parameters %v, want %v", d.Parameters, want)
	}
	if _, err := d.Output("OrdersTableName"); err == nil || !strings.Contains(err.Error(), "deploy the current template") {
		t.Errorf("a missing output: %v", err)
	}
	if _, err := deployment.Describe(ctx, cfn, region, name+"-gone"); err == nil || !strings.Contains(err.Error(), name+"-gone") {
		t.Errorf("an unknown stack: %v", err)
	}
}

// TestLocalDescriptionRoundTrips: what `make run` writes is what the tools
// read, and a missing file says the stack is not running.
func TestLocalDescriptionRoundTrips(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".build", "stack-local.json")
	if _, err := deployment.Read(path); err == nil || !strings.Contains(err.Error(), "make run") {
		t.Errorf("reading a missing description: %v", err)
	}
	d := deployment.Deployment{
		Name: "local", Region: region,
		Outputs:     map[string]string{"ApiUrl": "http://localhost:3000"},
		Parameters:  map[string]string{"MailTransport": "ses"},
		AWSEndpoint: "http://127.0.0.1:5000",
		Env:         map[string]string{"STRIPE_API_BASE": "http://127.0.0.1:3001"},
	}
	if err := d.Write(path); err != nil {
		t.Fatal(err)
	}
	got, err := deployment.Read(path)
	if err != nil || !reflect.DeepEqual(got, d) {
		t.Errorf("read %+v, %v; want %+v", got, err, d)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the description's mode: %v %v", fi.Mode(), err)
	}
	if err := os.WriteFile(path, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := deployment.Read(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("reading a torn description: %v", err)
	}
}
