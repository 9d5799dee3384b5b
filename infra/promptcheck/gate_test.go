package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	fakegemini "42sisters.ai/oracle/infra/fakes/fakegemini"
	"42sisters.ai/oracle/infra/motoserver"
	"42sisters.ai/oracle/infra/samconfig"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/prompt"
	"42sisters.ai/oracle/shared/putonce"
)

const region = "ca-central-1"

// A stack as small as can carry an output and a parameter: SAM's managed
// stack (its SourceBucket) or the service's (its GeminiApiKeyArn).
const stackTemplate = `
Parameters:
  Value:
    Type: String
  GeminiApiKeyArn:
    Type: String
    Default: ""
Resources:
  Topic:
    Type: AWS::SNS::Topic
Outputs:
  SourceBucket:
    Value: !Ref Value
`

// deployment is a deployment in moto as `make deploy` finds it: SAM's
// artifact bucket behind its managed stack, the Gemini key in Secrets
// Manager, and the fake Gemini, which accepts that key alone.
type deploymentFixture struct {
	cfg     aws.Config
	s3      *s3.Client
	bucket  string
	managed string // the managed stack's name
	sam     samconfig.Config
	gemini  *fakegemini.Server
	base    string
}

func unique(prefix string) string {
	b := make([]byte, 5)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

func newDeployment(t *testing.T) *deploymentFixture {
	t.Helper()
	ctx := context.Background()
	f := &deploymentFixture{cfg: awsenv.ForEndpoint(motoserver.ForTest(t), region), bucket: unique("sam-artifacts-"), managed: unique("sam-managed-")}
	f.s3 = awsenv.S3(f.cfg)
	if _, err := f.s3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(f.bucket),
		CreateBucketConfiguration: &s3types.CreateBucketConfiguration{LocationConstraint: region}}); err != nil {
		t.Fatal(err)
	}
	createStack(t, f.cfg, f.managed, map[string]string{"Value": f.bucket})
	sm, err := secretsmanager.NewFromConfig(f.cfg).CreateSecret(ctx, &secretsmanager.CreateSecretInput{
		Name: aws.String(unique("oracle/gemini-")), SecretString: aws.String("the-deployments-key")})
	if err != nil {
		t.Fatal(err)
	}
	f.sam = samconfig.Config{StackName: unique("oracle-"), Parameters: map[string]string{"GeminiApiKeyArn": aws.ToString(sm.ARN)}}
	f.gemini = fakegemini.New(fakegemini.Options{})
	f.gemini.AcceptOnly("the-deployments-key")
	srv := httptest.NewServer(f.gemini)
	t.Cleanup(srv.Close)
	f.base = srv.URL
	return f
}

func createStack(t *testing.T, cfg aws.Config, name string, params map[string]string) {
	t.Helper()
	var ps []cfntypes.Parameter
	for k, v := range params {
		ps = append(ps, cfntypes.Parameter{ParameterKey: aws.String(k), ParameterValue: aws.String(v)})
	}
	if _, err := cloudformation.NewFromConfig(cfg).CreateStack(context.Background(), &cloudformation.CreateStackInput{
		StackName: aws.String(name), TemplateBody: aws.String(stackTemplate), Parameters: ps}); err != nil {
		t.Fatal(err)
	}
}

// deploy runs make deploy's gate against the fixture, the clock at now.
func (f *deploymentFixture) deploy(t *testing.T, maxRate float64, now time.Time) (string, error) {
	t.Helper()
	var out bytes.Buffer
	err := deployCheck(context.Background(), f.cfg, f.sam, deployOptions{ManagedStack: f.managed, GeminiBase: f.base,
		Verdicts: minVerdicts, Chat: minChatReplies, MaxRate: maxRate, Now: func() time.Time { return now }}, &out)
	return out.String(), err
}

func (f *deploymentFixture) leak(t *testing.T) {
	t.Helper()
	if _, err := f.gemini.SetScenario(fakegemini.Scenario{LeakTerms: []string{"CSDM"}, Calls: 1000}); err != nil {
		t.Fatal(err)
	}
}

// recorded reads the current prompt's record from the bucket.
func (f *deploymentFixture) recorded(t *testing.T) (Check, bool) {
	t.Helper()
	fp, err := prompt.Fingerprint()
	if err != nil {
		t.Fatal(err)
	}
	c, found, err := gate{S3: f.s3, Bucket: f.bucket}.read(context.Background(), checkKey(prompt.Version, fp))
	if err != nil {
		t.Fatal(err)
	}
	return c, found
}

var day = time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)

// VC-6 and GAP-H: make deploy runs the current prompt's check itself,
// against the deployment's model with the deployment's key (the fake
// accepts no other), records it in the deployment's bucket, and on the
// next deploy reads the record instead of asking the model again.
func TestDeployRunsThePromptsCheckItselfOnce(t *testing.T) {
	f := newDeployment(t)
	out, err := f.deploy(t, 0, day)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	calls := f.gemini.Calls()
	if len(calls) < minVerdicts+minChatReplies {
		t.Fatalf("the model was asked %d times, want at least %d", len(calls), minVerdicts+minChatReplies)
	}
	for _, c := range calls {
		if c.Status != 200 {
			t.Fatalf("a call was answered %d: the deployment's key was not the one sent", c.Status)
		}
	}
	c, found := f.recorded(t)
	if !found || !c.Passed || c.Verdicts != minVerdicts || c.ChatReplies != minChatReplies || c.Model != "gemini-2.5-flash" ||
		c.Version != prompt.Version || c.ChatVersion != prompt.ChatVersion || !c.CheckedAt.Equal(day) {
		t.Fatalf("recorded %+v (found %v)", c, found)
	}
	f.gemini.ClearCalls()
	if out, err := f.deploy(t, 0, day.Add(time.Hour)); err != nil || !strings.Contains(out, "is recorded in s3://"+f.bucket+"/prompt-checks/"+prompt.Version+"/") {
		t.Fatalf("the second deploy: %v\n%s", err, out)
	}
	if n := len(f.gemini.Calls()); n != 0 {
		t.Fatalf("the second deploy asked the model %d times; the record was there", n)
	}
}

// An unreadable reply is not a verdict: the check asks on until it has
// read 50, and records them.
func TestDeployReadsFiftyVerdicts(t *testing.T) {
	f := newDeployment(t)
	if _, err := f.gemini.SetScenario(fakegemini.Scenario{Malformed: true, Calls: 2}); err != nil {
		t.Fatal(err)
	}
	if out, err := f.deploy(t, 0, day); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if c, _ := f.recorded(t); !c.Passed || c.Verdicts != minVerdicts || c.Unreadable != 2 {
		t.Fatalf("recorded %+v", c)
	}
}

// A prompt whose verdicts leak is refused, and its failed check is
// recorded once: the next deploy refuses it without asking, and the record
// cannot be written over (only a new prompt version gets a new check).
func TestDeployRefusesAPromptThatFailedItsCheck(t *testing.T) {
	f := newDeployment(t)
	f.leak(t)
	out, err := f.deploy(t, 0, day)
	if !errors.Is(err, errRefused) || !strings.Contains(err.Error(), "failed its contamination check") {
		t.Fatalf("a leaking prompt: %v\n%s", err, out)
	}
	c, found := f.recorded(t)
	if !found || c.Passed || c.Rate != 1 || !strings.Contains(c.Refusal, "above the limit") {
		t.Fatalf("recorded %+v (found %v)", c, found)
	}
	// The model is clean again: the record still stands.
	if _, err := f.gemini.SetScenario(fakegemini.Scenario{}); err != nil {
		t.Fatal(err)
	}
	f.gemini.ClearCalls()
	if _, err := f.deploy(t, 0, day.Add(time.Hour)); !errors.Is(err, errRefused) {
		t.Fatalf("the failed check did not stand: %v", err)
	}
	if n := len(f.gemini.Calls()); n != 0 {
		t.Fatalf("the model was asked %d times again", n)
	}
	fp, _ := prompt.Fingerprint()
	passed := c
	passed.Passed, passed.Refusal, passed.Rate = true, "", 0
	body, _ := json.Marshal(passed)
	written, err := putonce.Put(context.Background(), f.s3, checkKey(prompt.Version, fp), body, &s3.PutObjectInput{Bucket: aws.String(f.bucket)})
	if err != nil || written {
		t.Fatalf("the record was written over: %v, %v", written, err)
	}
	if c, _ := f.recorded(t); c.Passed {
		t.Fatal("the record now passes")
	}
}

// A check that cannot finish records nothing and refuses: the deploy
// after the model is back runs it.
func TestDeployRefusesWhenTheCheckCannotRun(t *testing.T) {
	f := newDeployment(t)
	f.gemini.AcceptOnly("another-key")
	if _, err := f.deploy(t, 0, day); !errors.Is(err, errRefused) || !strings.Contains(err.Error(), "nothing was recorded") {
		t.Fatalf("a model that refuses the key: %v", err)
	}
	if c, found := f.recorded(t); found {
		t.Fatalf("recorded %+v", c)
	}
	f.gemini.AcceptOnly("the-deployments-key")
	if out, err := f.deploy(t, 0, day); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
}

// VC-6: a prompt whose rate is within its limit but above the previous
// prompt's is refused.
func TestDeployRefusesAPromptThatRaisedTheRate(t *testing.T) {
	f := newDeployment(t)
	older := Check{Version: "2026-01-01.1", Fingerprint: "0123456789abcdef01234567", Verdicts: 50, ChatReplies: 20,
		Rate: 0.02, MaxRate: 1, Passed: true, CheckedAt: day.Add(-30 * 24 * time.Hour)}
	oldest := older
	oldest.Version, oldest.Fingerprint, oldest.Rate, oldest.CheckedAt = "2025-06-01.1", "fedcba9876543210fedcba98", 0.5, day.Add(-300*24*time.Hour)
	for _, c := range []Check{older, oldest} {
		body, _ := json.Marshal(c)
		if _, err := putonce.Put(context.Background(), f.s3, checkKey(c.Version, c.Fingerprint), body, &s3.PutObjectInput{Bucket: aws.String(f.bucket)}); err != nil {
			t.Fatal(err)
		}
	}
	f.leak(t)
	if _, err := f.deploy(t, 1, day); !errors.Is(err, errRefused) {
		t.Fatalf("a rate that rose was admitted: %v", err)
	}
	c, _ := f.recorded(t)
	if c.Passed || !strings.Contains(c.Refusal, "rose from 2.0% (prompt 2026-01-01.1)") || !strings.HasSuffix(c.Previous, older.Fingerprint+".json") {
		t.Fatalf("recorded %+v", c)
	}
}

func TestDeployFindsTheDeployment(t *testing.T) {
	f := newDeployment(t)
	ctx := context.Background()
	cfn := cloudformation.NewFromConfig(f.cfg)
	keyARN := "arn:aws:secretsmanager:ca-central-1:123456789012:secret:oracle/gemini-AbCdEf"
	deployed := unique("oracle-")
	createStack(t, f.cfg, deployed, map[string]string{"Value": "x", "GeminiApiKeyArn": keyARN})
	for _, tc := range []struct {
		name   string
		sam    samconfig.Config
		bucket string
		want   target
		err    string
	}{
		{name: "SAM's managed bucket, the key from the overrides", sam: f.sam,
			want: target{Bucket: f.bucket, KeyARN: f.sam.Parameters["GeminiApiKeyArn"], Model: "gemini-2.5-flash"}},
		{name: "the bucket given", sam: f.sam, bucket: "given",
			want: target{Bucket: "given", KeyARN: f.sam.Parameters["GeminiApiKeyArn"], Model: "gemini-2.5-flash"}},
		{name: "samconfig's bucket and model", sam: samconfig.Config{S3Bucket: "mine", Parameters: map[string]string{"GeminiApiKeyArn": keyARN, "GeminiModel": "gemini-2.5-pro"}},
			want: target{Bucket: "mine", KeyARN: keyARN, Model: "gemini-2.5-pro"}},
		{name: "the key as the stack has it", sam: samconfig.Config{StackName: deployed, Parameters: map[string]string{}},
			want: target{Bucket: f.bucket, KeyARN: keyARN, Model: "gemini-2.5-flash"}},
		{name: "no key anywhere", sam: samconfig.Config{StackName: unique("never-deployed-"), Parameters: map[string]string{}}, err: "not among samconfig.toml's parameter_overrides"},
		{name: "no stack named", sam: samconfig.Config{Parameters: map[string]string{}}, err: "names no stack"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := resolveTarget(ctx, cfn, tc.sam, region, tc.bucket, f.managed)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %+v, %v; want an error saying %q", got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
	if _, err := resolveTarget(ctx, cfn, f.sam, region, "", unique("no-managed-")); err == nil || !strings.Contains(err.Error(), "the first deploy is guided") {
		t.Fatalf("no managed stack yet: %v", err)
	}
}

// make deploy runs the gate before it builds anything, and the repository
// keeps no record of checks a hand could edit.
func TestMakeDeployRunsTheGateFirst(t *testing.T) {
	b, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	deploy := regexp.MustCompile(`(?m)^deploy:\n\t(.*)$`).FindStringSubmatch(string(b))
	if deploy == nil || !strings.Contains(deploy[1], "./infra/promptcheck -deploy") {
		t.Fatalf("make deploy's first command is %q, want the prompt gate", deploy)
	}
	if _, err := os.Stat("../../shared/prompt/contamination.json"); err == nil {
		t.Fatal("the repository ships shared/prompt/contamination.json")
	}
}
