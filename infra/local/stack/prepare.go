package stack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"

	fakegraph "42sisters.ai/oracle/infra/fakes/fakegraph"
	"42sisters.ai/oracle/infra/local/runtimeapi"
	"42sisters.ai/oracle/infra/local/schedule"
	"42sisters.ai/oracle/infra/motoserver"
	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/infra/sam"
	"42sisters.ai/oracle/shared/awsenv"
)

// Secrets of the local stack, fixed so that every run and every tool agrees.
const (
	// LocalWebhookSecret signs the fake Stripe's test-mode webhooks (and
	// the events `invoke` re-signs) when STRIPE_WEBHOOK_SECRET is not set.
	LocalWebhookSecret = "whsec_local_oracle_development_only"
	// FakeStripeKey is the Stripe key the functions get with the fake Stripe.
	FakeStripeKey = "sk_test_local_fake"
	// LocalHashPepper is the audit hash pepper when ORACLE_HASH_PEPPER is not set.
	LocalHashPepper = "local-oracle-pepper-not-secret"
	// LocalChatCookieKey signs Sisters Chat's session cookies locally.
	LocalChatCookieKey = "local-oracle-chat-cookie-key-not-secret"
	// FakeGeminiKey is the API key the functions get with the fake Gemini.
	FakeGeminiKey = "local-fake-gemini-key"
	// LocalPayTo is the wallet agents pay on the local stack (on Base
	// Sepolia, through the fake facilitator): no one holds its key.
	LocalPayTo = "0x0000000000000000000000000000000000004402"
)

// Options configure the local stack; the zero value of each field means its
// default.
type Options struct {
	// Root is the repository root (template.yaml, functions/); required.
	Root string
	// BuildDir receives each function's bootstrap; default Root/.build.
	BuildDir string
	// Port is the front door's port; default 3000.
	Port int
	// StripePort is the fake Stripe's port; default 3001.
	StripePort int
	// MotoPort is where moto server is reused or started; default 5000.
	MotoPort int
	// MotoEndpoint names a running moto server to use instead.
	MotoEndpoint string
	// Prefix makes the provisioned names unique; default "oracle-local-".
	Prefix string
	// StripeSecretKey is a real test-mode key (sk_test_...) from
	// STRIPE_SECRET_KEY; empty means the fake Stripe.
	StripeSecretKey string
	// StripeWebhookSecret is STRIPE_WEBHOOK_SECRET; default LocalWebhookSecret.
	StripeWebhookSecret string
	// GeminiPort is the fake Gemini's port; default 3002.
	GeminiPort int
	// GeminiAPIKey is a real Gemini key from GEMINI_API_KEY; empty means the
	// fake Gemini.
	GeminiAPIKey string
	// HashPepper is ORACLE_HASH_PEPPER; default LocalHashPepper.
	HashPepper string
	// SESPort is the fake SES front's port (failures on demand, SES's
	// delivery events); default 3003.
	SESPort int
	// MailTransport is MAIL_TRANSPORT: "ses" (default) or "graph", which
	// sends through the fake Microsoft Graph on GraphPort (default 3004).
	MailTransport string
	GraphPort     int
	// FacilitatorPort is the fake x402 facilitator's port; default 3005.
	// The agent rail is on, paying LocalPayTo on Base Sepolia through it.
	FacilitatorPort int
	// Instances is the number of processes per function; default 2. A
	// function whose SQS event source caps its concurrency gets at least
	// that many, and one with a reserved concurrency at most that many.
	Instances int
	// MeterAWS puts a meter between the functions and moto that counts
	// their requests by service and operation (Stack.Meter), for what a
	// verdict costs.
	MeterAWS bool
	// smokeKey is the smoke test's wallet key (0x and 64 hex digits),
	// stored as the X402SmokeKeyArn secret.
	smokeKey string
	// MaximumConcurrency overrides, by logical id, the maximum concurrency
	// of a function's SQS event sources (its batches in flight at once),
	// e.g. 1 for a test that needs a function's jobs invoked one after
	// another.
	MaximumConcurrency map[string]int
	// Env overrides environment variables of functions, by logical id
	// (e.g. {"GeneratorFunction": {"GEMINI_CIRCUIT_OPEN_FOR": "1s"}}), over
	// everything else the function gets from the template and the stack,
	// so tests can shorten a function's windows. An id that names no
	// function fails Start.
	Env map[string]map[string]string
	// ForceBase64 has the front door base64-encode every request body.
	ForceBase64 bool
	// Log receives the stack's and the functions' logs; default os.Stderr.
	Log io.Writer
	// BeforeDelivery, when set, sees every SQS batch just before the
	// consuming function is invoked with it, so tests can check what holds
	// at that moment (the verdict is served before its email is sent).
	BeforeDelivery func(queue string, batch events.SQSEvent)
	// LoseDelivery, when set, is asked about every SQS batch after
	// BeforeDelivery; a batch it answers true for is deleted from its queue
	// unseen by the function, as a job purged or deleted by hand is lost,
	// so tests can check what finds and resends lost jobs.
	LoseDelivery func(queue string, batch events.SQSEvent) bool
	// ScheduleEvery fires the schedules of a function, by logical id, at a
	// fixed interval instead of at their rate or cron expression (e.g.
	// {"HealthFunction": 30 * time.Second}), the first one interval after
	// Start. An id that names no function with a schedule fails Start.
	ScheduleEvery map[string]time.Duration
	// ScheduleOff fires no schedule by itself, for tests that run scheduled
	// functions with Stack.Fire.
	ScheduleOff bool
	// ScheduleAtStart fires each enabled rate schedule once before Start
	// returns, so a fresh stack is watched from its first moment:
	// /api/health answers at once instead of one period later. Ignored
	// with ScheduleOff.
	ScheduleAtStart bool
	// ScheduleClock is the clock schedules fire by; default the machine's.
	ScheduleClock schedule.Clock
	// AfterSchedule, when set, sees every invocation of a function by one
	// of its schedules (Fire's too) once the function has answered.
	AfterSchedule func(Firing)
	// AsyncRetryDelays are the waits before the retries of a failed
	// asynchronous invocation (the support address's mail, as SES invokes
	// the inbox function); default Lambda's, DefaultAsyncRetryDelays.
	AsyncRetryDelays []time.Duration
}

// Region is the AWS region of the local stack.
const Region = provision.TestRegion

func (o *Options) defaults() error {
	if o.Root == "" {
		return errors.New("the repository root is not set")
	}
	if o.AsyncRetryDelays == nil {
		o.AsyncRetryDelays = DefaultAsyncRetryDelays
	}
	if o.BuildDir == "" {
		o.BuildDir = filepath.Join(o.Root, ".build")
	}
	if o.Port == 0 {
		o.Port = 3000
	}
	if o.StripePort == 0 {
		o.StripePort = 3001
	}
	if o.MotoPort == 0 {
		o.MotoPort = 5000
	}
	if o.GeminiPort == 0 {
		o.GeminiPort = 3002
	}
	if o.SESPort == 0 {
		o.SESPort = 3003
	}
	if o.GraphPort == 0 {
		o.GraphPort = 3004
	}
	if o.FacilitatorPort == 0 {
		o.FacilitatorPort = 3005
	}
	switch o.MailTransport {
	case "":
		o.MailTransport = "ses"
	case "ses", "graph":
	default:
		return fmt.Errorf("MAIL_TRANSPORT must be ses or graph, got %q", o.MailTransport)
	}
	if o.Prefix == "" {
		o.Prefix = "oracle-local-"
	}
	if o.StripeWebhookSecret == "" {
		o.StripeWebhookSecret = LocalWebhookSecret
	}
	if o.HashPepper == "" {
		o.HashPepper = LocalHashPepper
	}
	if o.Log == nil {
		o.Log = os.Stderr
	}
	if o.ScheduleClock == nil {
		o.ScheduleClock = schedule.System
	}
	switch key := o.StripeSecretKey; {
	case key == "":
	case strings.HasPrefix(key, "sk_live_"):
		return errors.New("STRIPE_SECRET_KEY is a live-mode key (sk_live_...): the local stack runs in test mode only, use an sk_test_ key")
	case !strings.HasPrefix(key, "sk_test_"):
		return errors.New("STRIPE_SECRET_KEY must be a test-mode secret key (sk_test_...)")
	}
	return nil
}

// fakeStripe reports whether the fake Stripe stands in for the real one.
func (o *Options) fakeStripe() bool { return o.StripeSecretKey == "" }

// graph reports whether email leaves through the fake Microsoft Graph.
func (o *Options) graph() bool { return o.MailTransport == "graph" }

// fakeGemini reports whether the fake Gemini stands in for the real one.
func (o *Options) fakeGemini() bool { return o.GeminiAPIKey == "" }

// baseURL is where a browser reaches the front door.
func (o *Options) baseURL() string { return fmt.Sprintf("http://localhost:%d", o.Port) }

// backend is moto with the template provisioned in it.
type backend struct {
	moto      *motoserver.Server // nil unless started here
	endpoint  string
	aws       aws.Config
	template  *sam.Template
	resources *provision.Stack
	// metered is the meter in front of moto that the functions reach it
	// through, empty when AWS is not metered.
	metered string
}

// functionsEndpoint is where the functions reach moto.
func (b *backend) functionsEndpoint() string {
	if b.metered != "" {
		return b.metered
	}
	return b.endpoint
}

// close stops moto if it was started here.
func (b *backend) close() {
	if b.moto != nil {
		b.moto.Stop()
	}
}

// prepare finds or starts moto and provisions the template into it
// (idempotently, so a running moto keeps its data).
func prepare(ctx context.Context, o *Options) (*backend, error) {
	tmpl, err := sam.Load(filepath.Join(o.Root, "template.yaml"))
	if err != nil {
		return nil, err
	}
	b := &backend{template: tmpl}
	switch {
	case o.MotoEndpoint != "":
		if !motoserver.Alive(ctx, o.MotoEndpoint) {
			return nil, fmt.Errorf("moto server at %s does not answer", o.MotoEndpoint)
		}
		b.endpoint = o.MotoEndpoint
	default:
		b.endpoint = fmt.Sprintf("http://127.0.0.1:%d", o.MotoPort)
		if !motoserver.Alive(ctx, b.endpoint) {
			if b.moto, err = motoserver.Start(ctx, o.MotoPort); err != nil {
				return nil, err
			}
			fmt.Fprintf(o.Log, "[stack] started moto server at %s (a process for DynamoDB, one for S3, one for the rest)\n", b.endpoint)
		}
	}
	b.aws = awsenv.ForEndpoint(b.endpoint, Region)
	stripeKey := o.StripeSecretKey
	if o.fakeStripe() {
		stripeKey = FakeStripeKey
	}
	geminiKey := o.GeminiAPIKey
	if o.fakeGemini() {
		geminiKey = FakeGeminiKey
	}
	fmt.Fprintf(o.Log, "[stack] provisioning the template's resources in moto at %s\n", b.endpoint)
	b.resources, err = provision.Provision(ctx, provision.Options{
		Template: tmpl,
		AWS:      b.aws,
		Prefix:   o.Prefix,
		// Spans go to the local receiver (OTEL_EXPORTER_OTLP_ENDPOINT), not X-Ray.
		Params: map[string]string{"BaseUrl": o.baseURL(), "AllowedOrigins": o.baseURL(), "MailTransport": o.MailTransport, "Traces": "off"},
		Secrets: map[string]string{
			"StripeSecretKeyArn":         stripeKey,
			"StripeTestWebhookSecretArn": o.StripeWebhookSecret,
			// No live-mode events locally.
			"StripeWebhookSecretArn": "",
			"HashPepperArn":          o.HashPepper,
			"ChatCookieKeyArn":       LocalChatCookieKey,
			"GeminiApiKeyArn":        geminiKey,
			// The main key is a test key locally: it reads test sessions.
			"StripeTestSecretKeyArn": "",
			"GraphCredentialsArn":    graphCredentials(o),
			"X402SmokeKeyArn":        o.smokeKey,
		},
	})
	if err != nil {
		b.close()
		return nil, fmt.Errorf("provision %s: %w", b.endpoint, err)
	}
	if err := verifySenders(ctx, b); err != nil {
		b.close()
		return nil, err
	}
	return b, nil
}

// graphCredentials is the fake Graph app's secret, as an operator stores
// the Entra app's: empty unless email goes through Graph.
func graphCredentials(o *Options) string {
	if !o.graph() {
		return ""
	}
	b, _ := json.Marshal(map[string]string{"tenant_id": fakegraph.DefaultTenant, "client_id": fakegraph.DefaultClientID, "client_secret": fakegraph.DefaultClientSecret})
	return string(b)
}

// verifySenders verifies, in moto's SES, every address a function sends
// from (MAIL_FROM), as an operator verifies the identity in SES once.
func verifySenders(ctx context.Context, b *backend) error {
	ses := sesv2.NewFromConfig(b.aws)
	for _, fn := range b.template.Functions() {
		env, err := b.resources.Env(fn)
		if err != nil {
			return err
		}
		if from := env["MAIL_FROM"]; from != "" {
			if err := motoserver.VerifySender(ctx, ses, from); err != nil {
				return fmt.Errorf("verify the sender of %s: %w", fn.LogicalID, err)
			}
		}
	}
	return nil
}

// building is held while a stack builds: stacks started at once in one
// process (parallel tests) may share a build directory, and the second then
// finds every bootstrap up to date instead of racing to write it.
var building sync.Mutex

// firstBuild is what the functions' build waits for in a first make run,
// after the local command's build has compiled the AWS SDK: 94 s of CPU
// time, measured with Go's build cache empty (docs/performance.md, "A
// first make run").
const firstBuild = "about a minute"

// build compiles the functions' bootstraps in one go build, for this
// machine, with cgo off as Lambda's are, into BuildDir/functions, and
// returns each one's path by logical id. One go build compiles each package
// the functions share (the AWS SDK, gRPC, the Gen AI SDK) once: a go build
// per function, all at once, compiled each of them once per function, and a
// first make run on 2 cores was not ready after 6 minutes. Unlike make
// build it keeps the defaults otherwise (no -trimpath): the packages
// compiled are then those go vet and make test's warm-up build compiled
// already.
func build(ctx context.Context, o *Options, fns []sam.Function) (map[string]string, error) {
	building.Lock()
	defer building.Unlock()
	dir := filepath.Join(o.BuildDir, "functions")
	bins := map[string]string{}
	// go build -o DIR/ names each main package's binary after its
	// directory: two functions from different directories of one name
	// would overwrite each other's.
	from := map[string]string{}
	args := []string{"build", "-o", dir + string(filepath.Separator)}
	for _, fn := range fns {
		src := filepath.Clean(filepath.Join(o.Root, fn.CodeURI))
		bin := filepath.Join(dir, filepath.Base(src))
		switch other, seen := from[bin]; {
		case !seen:
			from[bin] = src
			args = append(args, "./"+filepath.ToSlash(filepath.Clean(fn.CodeURI)))
		case other != src:
			return nil, fmt.Errorf("build %s: %s and %s would both build to %s", fn.LogicalID, other, src, bin)
		}
		bins[fn.LogicalID] = bin
	}
	fmt.Fprintf(o.Log, "[stack] building %d function(s) in one go build into %s (%s on a first make run, compiling what the local command did not need, gRPC and the Gen AI SDK among it, and linking each; seconds after)\n", len(fns), dir, firstBuild)
	began := time.Now()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = o.Root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("build the functions (go %s): %w\n%s", strings.Join(args, " "), err, out)
	}
	fmt.Fprintf(o.Log, "[stack] built %d function(s) in %s\n", len(fns), time.Since(began).Round(100*time.Millisecond))
	return bins, nil
}

// environment is a function's resolved environment: the template's
// variables, the stack's values (env) for those the function declares, and
// the options' overrides, in that order. A variable the function does not
// declare is not set, as in AWS and as sam local invoke's --env-vars
// applies only declared variables: so a function that needs a local
// endpoint fails here when the template forgets to declare it.
func environment(o *Options, b *backend, fn sam.Function, env map[string]string) (map[string]string, error) {
	resolved, err := b.resources.Env(fn)
	if err != nil {
		return nil, err
	}
	for k, v := range env {
		if _, declared := fn.Env[k]; declared {
			resolved[k] = v
		}
	}
	for k, v := range o.Env[fn.LogicalID] {
		resolved[k] = v
	}
	return resolved, nil
}

// function starts one function's processes with its environment.
func function(o *Options, b *backend, fn sam.Function, bin string, env map[string]string, c concurrency) (*runtimeapi.Function, error) {
	return runtimeapi.Start(runtimeapi.Config{
		Name:        fn.LogicalID,
		Binary:      bin,
		Env:         env,
		Timeout:     time.Duration(fn.Timeout) * time.Second,
		MemoryMB:    fn.MemorySize,
		Instances:   c.instances(o),
		Region:      Region,
		AWSEndpoint: b.functionsEndpoint(),
		Log:         o.Log,
	})
}
