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
	"path/filepath"
	"reflect"
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
	"42sisters.ai/oracle/infra/sam"
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
  GeminiModel:
    Type: String
    Default: gemini-2.5-flash
  GeminiFallbackModel:
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
	tmpl    *sam.Template
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
	// A stack not deployed yet: its models are the template's defaults.
	f.sam = samconfig.Config{StackName: unique("oracle-"), Parameters: map[string]string{"GeminiApiKeyArn": aws.ToString(sm.ARN)}}
	if f.tmpl, err = sam.Load("../../template.yaml"); err != nil {
		t.Fatal(err)
	}
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
	err := deployCheck(context.Background(), f.cfg, f.sam, f.tmpl, deployOptions{ManagedStack: f.managed, GeminiBase: f.base,
		Verdicts: minVerdicts, Chat: minChatReplies, MaxRate: maxRate, Now: func() time.Time { return now }}, &out)
	return out.String(), err
}

func (f *deploymentFixture) leak(t *testing.T) {
	t.Helper()
	if _, err := f.gemini.SetScenario(fakegemini.Scenario{LeakTerms: []string{"CSDM"}, Calls: 1000}); err != nil {
		t.Fatal(err)
	}
}

// primary is the template's model, which the fixture's stack deploys.
const primary = "gemini-2.5-flash"

// recorded reads the current prompt's record on the primary model.
func (f *deploymentFixture) recorded(t *testing.T) (Check, bool) {
	t.Helper()
	return f.recordedOn(t, f.sam.StackName, primary)
}

// recordedOn reads the current prompt's record on a stack's model.
func (f *deploymentFixture) recordedOn(t *testing.T, stack, model string) (Check, bool) {
	t.Helper()
	c, found, err := gate{S3: f.s3, Bucket: f.bucket}.read(context.Background(), f.key(stack, model))
	if err != nil {
		t.Fatal(err)
	}
	return c, found
}

// key is where the current prompt's check on a stack's model is kept.
func (f *deploymentFixture) key(stack, model string) string {
	fp, err := prompt.Fingerprint()
	if err != nil {
		panic(err)
	}
	return checkKey(stack, model, prompt.Version, fp)
}

// put records c, as an earlier deploy would have.
func (f *deploymentFixture) put(t *testing.T, key string, c Check) {
	t.Helper()
	body, _ := json.Marshal(c)
	if _, err := putonce.Put(context.Background(), f.s3, key, body, &s3.PutObjectInput{Bucket: aws.String(f.bucket)}); err != nil {
		t.Fatal(err)
	}
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
		if c.Status != 200 || c.Model != primary {
			t.Fatalf("a call to %s was answered %d: want the deployment's model, asked with the deployment's key", c.Model, c.Status)
		}
	}
	c, found := f.recorded(t)
	if !found || !c.Passed || c.Verdicts != minVerdicts || c.ChatReplies != minChatReplies || c.Model != primary || c.Stack != f.sam.StackName ||
		c.Version != prompt.Version || c.ChatVersion != prompt.ChatVersion || !c.CheckedAt.Equal(day) {
		t.Fatalf("recorded %+v (found %v)", c, found)
	}
	f.gemini.ClearCalls()
	if out, err := f.deploy(t, 0, day.Add(time.Hour)); err != nil || !strings.Contains(out, "is recorded in s3://"+f.bucket+"/"+f.key(f.sam.StackName, primary)) {
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
	passed := c
	passed.Passed, passed.Refusal, passed.Rate = true, "", 0
	body, _ := json.Marshal(passed)
	written, err := putonce.Put(context.Background(), f.s3, f.key(f.sam.StackName, primary), body, &s3.PutObjectInput{Bucket: aws.String(f.bucket)})
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

// VC-6: a prompt whose rate, of the verdicts or of the chat replies, is
// within its limit but above the previous prompt's on the same stack's
// same model is refused; one whose rate fell passes. The previous prompt
// is the newest that passed there: not a failed one, not another model's
// or another stack's.
func TestDeployComparesWithThePreviousPrompt(t *testing.T) {
	for _, tc := range []struct {
		name     string
		scenario fakegemini.Scenario
		ok       bool
		refusal  string
	}{
		{"the verdicts' rate rose", fakegemini.Scenario{LeakTerms: []string{"CSDM"}, Calls: 1000}, false, "the verdicts' rate rose from 50.0% (prompt 2026-01-01.1) to 100.0%"},
		{"the chat replies' rate rose", fakegemini.Scenario{LeakTerms: []string{"CSDM"}, Pass: "merge", Calls: 1000}, false, "the chat replies' rate rose from 0.0% (prompt 2026-01-01.1) to 100.0%"},
		{"the rate fell", fakegemini.Scenario{}, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newDeployment(t)
			stack := f.sam.StackName
			older := Check{Stack: stack, Model: primary, Version: "2026-01-01.1", Fingerprint: "0123456789abcdef01234567", Verdicts: 50, ChatVersion: "c", ChatReplies: 20,
				Rate: 0.5, MaxRate: 1, Passed: true, CheckedAt: day.Add(-30 * 24 * time.Hour)}
			olderKey := checkKey(stack, primary, older.Version, older.Fingerprint)
			f.put(t, olderKey, older)
			// Newer, but none of them the prompt this one replaces here.
			failed := older
			failed.Version, failed.Fingerprint, failed.Rate, failed.Passed, failed.CheckedAt = "2026-02-01.1", "aaaaaaaaaaaaaaaaaaaaaaaa", 0.99, false, day.Add(-2*24*time.Hour)
			f.put(t, checkKey(stack, primary, failed.Version, failed.Fingerprint), failed)
			otherModel := older
			otherModel.Model, otherModel.Version, otherModel.Fingerprint, otherModel.Rate, otherModel.CheckedAt = "gemini-2.5-pro", "2026-03-01.1", "bbbbbbbbbbbbbbbbbbbbbbbb", 1, day.Add(-24*time.Hour)
			f.put(t, checkKey(stack, otherModel.Model, otherModel.Version, otherModel.Fingerprint), otherModel)
			otherStack := older
			otherStack.Stack, otherStack.Version, otherStack.Fingerprint, otherStack.Rate, otherStack.CheckedAt = "oracle-staging", "2026-03-02.1", "cccccccccccccccccccccccc", 1, day.Add(-time.Hour)
			f.put(t, checkKey(otherStack.Stack, primary, otherStack.Version, otherStack.Fingerprint), otherStack)
			if _, err := f.gemini.SetScenario(tc.scenario); err != nil {
				t.Fatal(err)
			}
			if _, err := f.deploy(t, 1, day); (err == nil) != tc.ok || (err != nil && !errors.Is(err, errRefused)) {
				t.Fatalf("deploy: %v, want ok %v", err, tc.ok)
			}
			c, _ := f.recorded(t)
			if c.Passed != tc.ok || c.Refusal != tc.refusal || c.Previous != olderKey {
				t.Fatalf("recorded %+v; want passed %v, refusal %q, compared with %s", c, tc.ok, tc.refusal, olderKey)
			}
		})
	}
}

// A pass recorded under a looser limit does not pass a stricter deploy,
// and the model is not asked again.
func TestAPassUnderALooserLimitIsNotAdmittedUnderAStricterOne(t *testing.T) {
	f := newDeployment(t)
	f.leak(t)
	if out, err := f.deploy(t, 1, day); err != nil {
		t.Fatalf("under a limit of 100%%: %v\n%s", err, out)
	}
	f.gemini.ClearCalls()
	if _, err := f.deploy(t, 0, day); !errors.Is(err, errRefused) || !strings.Contains(err.Error(), "above today's 0.0%") {
		t.Fatalf("under a limit of 0: %v", err)
	}
	if n := len(f.gemini.Calls()); n != 0 {
		t.Fatalf("the model was asked %d times again", n)
	}
}

// Each stack has its own checks: another stack's pass of the same prompt,
// in the same account's bucket, does not admit this one's.
func TestAnotherStacksCheckDoesNotAdmitThisOne(t *testing.T) {
	f := newDeployment(t)
	if out, err := f.deploy(t, 0, day); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	f.gemini.ClearCalls()
	staging := f.sam.StackName
	f.sam.StackName = unique("oracle-prod-")
	if out, err := f.deploy(t, 0, day); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if n := len(f.gemini.Calls()); n < minVerdicts {
		t.Fatalf("the second stack's deploy asked the model %d times: it took the first stack's check", n)
	}
	for _, stack := range []string{staging, f.sam.StackName} {
		if _, found := f.recordedOn(t, stack, primary); !found {
			t.Errorf("no check recorded for %s", stack)
		}
	}
}

// A deployment with a fallback model writes verdicts with it too: the
// prompt is checked on both (the chat's exchanges on the primary alone,
// which the chat calls), and refused when it fails on the fallback.
func TestDeployChecksTheFallbackModelToo(t *testing.T) {
	const fallback = "gemini-2.5-flash-lite"
	f := newDeployment(t)
	f.sam.Parameters["GeminiFallbackModel"] = fallback
	if out, err := f.deploy(t, 0, day); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	verdicts := map[string]int{}
	for _, c := range f.gemini.Calls() {
		if c.Pass == "" {
			verdicts[c.Model]++
		} else if c.Model != primary {
			t.Errorf("a chat call to %s", c.Model)
		}
	}
	if verdicts[primary] != minVerdicts || verdicts[fallback] != minVerdicts {
		t.Fatalf("verdicts asked by model: %v, want %d of each", verdicts, minVerdicts)
	}
	if c, found := f.recordedOn(t, f.sam.StackName, fallback); !found || !c.Passed || c.ChatReplies != 0 || c.Model != fallback {
		t.Fatalf("the fallback's record: %+v (found %v)", c, found)
	}

	// The primary's check recorded and passed; the fallback's verdicts leak.
	h := newDeployment(t)
	h.sam.Parameters["GeminiFallbackModel"] = fallback
	fp, _ := prompt.Fingerprint()
	h.put(t, h.key(h.sam.StackName, primary), Check{Stack: h.sam.StackName, Model: primary, Version: prompt.Version, Fingerprint: fp,
		Verdicts: minVerdicts, ChatVersion: prompt.ChatVersion, ChatReplies: minChatReplies, Passed: true, CheckedAt: day})
	h.leak(t)
	if _, err := h.deploy(t, 0, day); !errors.Is(err, errRefused) || !strings.Contains(err.Error(), fallback) {
		t.Fatalf("a prompt that leaks on the fallback: %v", err)
	}
}

func TestDeployFindsTheDeployment(t *testing.T) {
	f := newDeployment(t)
	ctx := context.Background()
	cfn := cloudformation.NewFromConfig(f.cfg)
	keyARN := "arn:aws:secretsmanager:ca-central-1:123456789012:secret:oracle/gemini-AbCdEf"
	deployed := unique("oracle-")
	createStack(t, f.cfg, deployed, map[string]string{"Value": "x", "GeminiApiKeyArn": keyARN, "GeminiModel": "gemini-2.5-pro", "GeminiFallbackModel": "gemini-2.5-flash"})
	ownKey := f.sam.Parameters["GeminiApiKeyArn"]
	for _, tc := range []struct {
		name   string
		sam    samconfig.Config
		bucket string
		want   target
		err    string
	}{
		{name: "a first deploy: SAM's managed bucket, the key from the overrides, the template's model", sam: f.sam,
			want: target{Bucket: f.bucket, Stack: f.sam.StackName, KeyARN: ownKey, Models: []string{primary}}},
		{name: "the bucket given", sam: f.sam, bucket: "given",
			want: target{Bucket: "given", Stack: f.sam.StackName, KeyARN: ownKey, Models: []string{primary}}},
		{name: "samconfig's bucket and models", sam: samconfig.Config{StackName: "s", S3Bucket: "mine",
			Parameters: map[string]string{"GeminiApiKeyArn": keyARN, "GeminiModel": "gemini-2.5-pro", "GeminiFallbackModel": "gemini-2.5-flash"}},
			want: target{Bucket: "mine", Stack: "s", KeyARN: keyARN, Models: []string{"gemini-2.5-pro", "gemini-2.5-flash"}}},
		{name: "a fallback that is the primary is one model", sam: samconfig.Config{StackName: "s", S3Bucket: "mine",
			Parameters: map[string]string{"GeminiApiKeyArn": keyARN, "GeminiModel": "gemini-2.5-pro", "GeminiFallbackModel": "gemini-2.5-pro"}},
			want: target{Bucket: "mine", Stack: "s", KeyARN: keyARN, Models: []string{"gemini-2.5-pro"}}},
		{name: "what the overrides leave out, as the stack has it", sam: samconfig.Config{StackName: deployed, Parameters: map[string]string{}},
			want: target{Bucket: f.bucket, Stack: deployed, KeyARN: keyARN, Models: []string{"gemini-2.5-pro", "gemini-2.5-flash"}}},
		{name: "the overrides over the stack", sam: samconfig.Config{StackName: deployed, Parameters: map[string]string{"GeminiFallbackModel": ""}},
			want: target{Bucket: f.bucket, Stack: deployed, KeyARN: keyARN, Models: []string{"gemini-2.5-pro"}}},
		{name: "no key anywhere", sam: samconfig.Config{StackName: unique("never-deployed-"), Parameters: map[string]string{}}, err: "no GeminiApiKeyArn"},
		{name: "no stack named", sam: samconfig.Config{Parameters: map[string]string{"GeminiApiKeyArn": keyARN}}, err: "names no stack"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := resolveTarget(ctx, cfn, tc.sam, f.tmpl, region, tc.bucket, f.managed)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %+v, %v; want an error saying %q", got, err, tc.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
	if _, err := resolveTarget(ctx, cfn, f.sam, f.tmpl, region, "", unique("no-managed-")); err == nil || !strings.Contains(err.Error(), "the first deploy is guided") {
		t.Fatalf("no managed stack yet: %v", err)
	}
	// A stack that cannot be read is not a stack not deployed yet: the
	// template's model would be checked in place of the stack's.
	unreachable := awsenv.ForEndpoint("http://127.0.0.1:1", region)
	unreachable.RetryMaxAttempts = 1
	sc := samconfig.Config{StackName: deployed, S3Bucket: "mine", Parameters: map[string]string{"GeminiApiKeyArn": keyARN}}
	if got, err := resolveTarget(ctx, cloudformation.NewFromConfig(unreachable), sc, f.tmpl, region, "", f.managed); err == nil {
		t.Fatalf("an unreadable stack read as %+v", got)
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
	if deploy == nil || !strings.HasPrefix(deploy[1], "$(GO) run ./infra/promptcheck -deploy ") || strings.ContainsAny(deploy[1], "|;&") {
		t.Fatalf("make deploy's first command is %q, want the prompt gate, its failure stopping the deploy", deploy)
	}
	if _, err := os.Stat(filepath.Join("..", "..", "shared", "prompt", "contamination.json")); err == nil {
		t.Fatal("the repository ships shared/prompt/contamination.json")
	}
}
