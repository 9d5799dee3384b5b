// Package stack runs the whole service on this machine: moto server with the
// template provisioned, every function's real bootstrap behind the local
// Lambda Runtime API, the HTTP front door, the SQS pollers, the functions'
// schedules, the fake Stripe and a tap on the alerts topic. `go run
// ./infra/local` and the end-to-end tests start it the same way.
package stack

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/decred/dcrd/dcrec/secp256k1/v4"

	"42sisters.ai/oracle/infra/deployment"
	"42sisters.ai/oracle/infra/fakes/fakefacilitator"
	fakegemini "42sisters.ai/oracle/infra/fakes/fakegemini"
	fakegraph "42sisters.ai/oracle/infra/fakes/fakegraph"
	fakeses "42sisters.ai/oracle/infra/fakes/fakeses"
	fakestripe "42sisters.ai/oracle/infra/fakes/fakestripe"
	"42sisters.ai/oracle/infra/local/gateway"
	"42sisters.ai/oracle/infra/local/poller"
	"42sisters.ai/oracle/infra/local/runtimeapi"
	"42sisters.ai/oracle/infra/local/traces"
	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/infra/sam"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/inbox"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/secret"
	"42sisters.ai/oracle/shared/stripex"
	"42sisters.ai/oracle/shared/x402"
)

// Stack is the running local stack.
type Stack struct {
	// APIURL is the front door, e.g. http://localhost:3000.
	APIURL string
	// StripeURL is the fake Stripe, e.g. http://localhost:3001; empty when
	// a real Stripe test key is used.
	StripeURL string
	// GeminiURL is the fake Gemini, e.g. http://localhost:3002; empty when a
	// real Gemini key is used.
	GeminiURL string
	// SESURL is the fake SES front before moto's SES (its /_control fails
	// sends on demand), e.g. http://localhost:3003.
	SESURL string
	// GraphURL is the fake Microsoft Graph, e.g. http://localhost:3004;
	// empty unless email goes through Graph.
	GraphURL string
	// FacilitatorURL is the fake x402 facilitator (its /_control fails
	// settlements on demand, /_calls shows what it received), e.g.
	// http://localhost:3005.
	FacilitatorURL string
	// SmokePayer is the smoke test's wallet on this stack: a fresh key
	// each start, which the fake facilitator funds as a faucet would.
	SmokePayer string
	// Resources are the provisioned tables, queues, bucket and topic.
	Resources *provision.Stack
	// AWS reaches the moto server the functions use.
	AWS aws.Config

	backend   *backend
	functions []*runtimeapi.Function
	servers   []*http.Server
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	alerts    *alertTap
	// env is what the local stack sets on top of the template's, for
	// each function that declares the variable; environments are what
	// each function was started with, by logical id.
	env          map[string]string
	environments map[string]map[string]string
	scheduling

	// byName are the functions by logical id, caps the maximum
	// concurrency enforced on each one's event sources.
	byName map[string]*runtimeapi.Function
	caps   map[string]int
	meter  *Meter
	// async are the asynchronous invocations not yet settled (their
	// attempts, retries and on-failure record).
	async sync.WaitGroup
}

// Start builds and starts everything; ctx bounds the start only. Close stops
// what Start started.
func Start(ctx context.Context, o Options) (s *Stack, err error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	// Claim the ports first, so a clash fails before the slow steps.
	api, err := listen(o.Port)
	if err != nil {
		return nil, err
	}
	var stripeLn, geminiLn, sesLn, graphLn, facilitatorLn net.Listener
	claimed := []net.Listener{api}
	release := func() {
		for _, ln := range claimed {
			ln.Close()
		}
	}
	for _, p := range []struct {
		want bool
		port int
		ln   *net.Listener
	}{{o.fakeStripe(), o.StripePort, &stripeLn}, {o.fakeGemini(), o.GeminiPort, &geminiLn}, {true, o.SESPort, &sesLn}, {o.graph(), o.GraphPort, &graphLn}, {true, o.FacilitatorPort, &facilitatorLn}} {
		if !p.want {
			continue
		}
		if *p.ln, err = listen(p.port); err != nil {
			release()
			return nil, err
		}
		claimed = append(claimed, *p.ln)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	s = &Stack{APIURL: o.baseURL(), cancel: cancel, byName: map[string]*runtimeapi.Function{}, caps: map[string]int{}}
	defer func() {
		if err != nil {
			release()
			s.Close()
			s = nil
		}
	}()
	// The smoke test's wallet, a fresh key each start, which the fake
	// facilitator funds as a faucet would; prepare stores it as a secret.
	smokeKey, err := secp256k1.GeneratePrivateKey()
	if err != nil {
		return s, fmt.Errorf("the smoke wallet: %w", err)
	}
	s.SmokePayer = x402.AddressOf(smokeKey.PubKey())
	o.smokeKey = "0x" + hex.EncodeToString(smokeKey.Serialize())
	// The functions build while moto starts and the template is
	// provisioned: on a first run the build is most of the wait.
	tmpl, err := sam.Load(filepath.Join(o.Root, "template.yaml"))
	if err != nil {
		return s, err
	}
	buildCtx, stopBuild := context.WithCancel(ctx)
	defer stopBuild()
	type result struct {
		bins map[string]string
		err  error
	}
	done := make(chan result, 1)
	go func() {
		bins, err := build(buildCtx, &o, tmpl.Functions())
		done <- result{bins, err}
	}()
	built := sync.OnceValues(func() (map[string]string, error) {
		r := <-done
		return r.bins, r.err
	})
	// A start that fails stops the build and waits for it, so that no go
	// build outlives the stack.
	defer func() {
		if err != nil {
			stopBuild()
			_, _ = built()
		}
	}()
	if s.backend, err = prepare(ctx, &o); err != nil {
		return s, err
	}
	s.Resources, s.AWS = s.backend.resources, s.backend.aws
	if o.MeterAWS {
		if s.backend.metered, err = s.startMeter(s.backend.endpoint); err != nil {
			return s, err
		}
	}
	fns := s.backend.template.Functions()
	if err := checkEnv(o.Env, fns); err != nil {
		return s, err
	}
	plan, err := planSchedules(s.Resources, fns, o.ScheduleEvery)
	if err != nil {
		return s, err
	}
	s.scheduling = scheduling{
		schedules:     plan,
		invokers:      map[string]poller.Invoker{},
		clock:         o.ScheduleClock,
		scheduleLog:   log.New(o.Log, "[schedule] ", 0),
		afterSchedule: o.AfterSchedule,
	}
	bins, err := built()
	if err != nil {
		return s, err
	}
	env := map[string]string{}
	if o.fakeStripe() {
		env["STRIPE_API_BASE"] = "http://" + stripeLn.Addr().String()
		s.StripeURL = fmt.Sprintf("http://localhost:%d", o.StripePort)
		fake := fakestripe.New(fakestripe.Options{
			PublicURL:      s.StripeURL,
			WebhookURL:     fmt.Sprintf("http://127.0.0.1:%d/api/webhook", o.Port),
			WebhookSecret:  o.StripeWebhookSecret,
			LinkSuccessURL: o.baseURL() + "/oracle/result?session_id={CHECKOUT_SESSION_ID}",
			Logger:         slog.New(slog.NewTextHandler(prefixed(o.Log, "[stripe] "), nil)),
		})
		s.serve(stripeLn, fake)
		// The chat's Price, as `make chat-price` makes it in a real
		// account: Checkout in subscription mode needs it.
		chatPrice := stripex.NewBilling(secret.Static(FakeStripeKey), stripex.Options{BaseURL: env["STRIPE_API_BASE"]})
		if _, err := chatPrice.CreateChatPrice(ctx); err != nil {
			return s, fmt.Errorf("create the chat's price in the fake Stripe: %w", err)
		}
	} else {
		fmt.Fprintf(o.Log, "using the real Stripe test mode: run `stripe listen --forward-to localhost:%d/api/webhook` and set STRIPE_WEBHOOK_SECRET to the whsec_ it prints (it forwards events in the account's API version: the webhook reads %s only, and refuses others with WEBHOOK_API_VERSION)\n", o.Port, stripex.APIVersion)
	}
	if o.fakeGemini() {
		env["GEMINI_API_BASE"] = "http://" + geminiLn.Addr().String()
		s.GeminiURL = fmt.Sprintf("http://localhost:%d", o.GeminiPort)
		s.serve(geminiLn, fakegemini.New(fakegemini.Options{Logger: slog.New(slog.NewTextHandler(prefixed(o.Log, "[gemini] "), nil))}))
	} else {
		fmt.Fprintln(o.Log, "using the real Gemini API with GEMINI_API_KEY")
	}
	// SES goes through the front, which fails on demand and publishes the
	// configuration set's events as SES does; the mailer reaches it as the
	// SDK's SES v2 endpoint.
	env["AWS_ENDPOINT_URL_SESV2"] = "http://" + sesLn.Addr().String()
	motoSettings(env)
	s.SESURL = fmt.Sprintf("http://localhost:%d", o.SESPort)
	s.serve(sesLn, fakeses.New(fakeses.Options{
		Moto:             s.backend.endpoint,
		AWS:              s.AWS,
		ConfigurationSet: s.Resources.Ref("MailConfigurationSet"),
		EventsTopicARN:   s.Resources.Ref("MailEventsTopic"),
		// SES reports a delivery once the recipient's server took the
		// message (a connection, TLS and an SMTP exchange with another
		// host): never before the mailer records its send, as an event
		// published with the answer often was here.
		DeliveryDelay: sesDeliveryDelay,
		Logger:        slog.New(slog.NewTextHandler(prefixed(o.Log, "[ses] "), nil)),
	}))
	var graph *fakegraph.Server
	graphRoot := ""
	if o.graph() {
		graph = fakegraph.New(fakegraph.Options{Logger: slog.New(slog.NewTextHandler(prefixed(o.Log, "[graph] "), nil))})
		s.GraphURL = fmt.Sprintf("http://localhost:%d", o.GraphPort)
		graphRoot = "http://" + graphLn.Addr().String()
		env["GRAPH_LOGIN_BASE"] = "http://" + graphLn.Addr().String()
		env["GRAPH_API_BASE"] = "http://" + graphLn.Addr().String() + "/v1.0"
		s.serve(graphLn, graph)
	}
	// The agent rail, on: Base Sepolia through the fake facilitator.
	env["X402_PAY_TO"], env["X402_NETWORKS"] = LocalPayTo, "testnet"
	env["X402_FACILITATOR_URL"] = "http://" + facilitatorLn.Addr().String()
	// The smoke test's wallet: its key is the X402SmokeKeyArn secret (in
	// moto, provisioned by prepare) and its address X402SmokePayer, as in
	// AWS.
	env["X402_SMOKE_PAYER"] = s.SmokePayer
	s.FacilitatorURL = fmt.Sprintf("http://localhost:%d", o.FacilitatorPort)
	s.serve(facilitatorLn, fakefacilitator.New(fakefacilitator.Options{Logger: slog.New(slog.NewTextHandler(prefixed(o.Log, "[facilitator] "), nil))}))
	// The functions reach moto here (runtimeapi sets it too); in the
	// environment so that sam local invoke's file carries it.
	env["AWS_ENDPOINT_URL"] = s.backend.functionsEndpoint()
	// The functions export their spans to the front door's OTLP
	// receiver, as they would to a collector in AWS.
	env["OTEL_EXPORTER_OTLP_ENDPOINT"] = "http://" + api.Addr().String() + otlpPath
	s.env = env
	s.environments = map[string]map[string]string{}
	var routes []gateway.Route
	sqsClient := sqs.NewFromConfig(s.AWS)
	pollLog := log.New(o.Log, "[poller] ", 0)
	fmt.Fprintf(o.Log, "[stack] starting %d function(s) behind the local Lambda Runtime API\n", len(fns))
	for _, fn := range fns {
		conc, err := concurrencyOf(&o, s.backend, fn)
		if err != nil {
			return s, err
		}
		vars, err := environment(&o, s.backend, fn, env)
		if err != nil {
			return s, err
		}
		s.environments[fn.LogicalID] = vars
		f, err := function(&o, s.backend, fn, bins[fn.LogicalID], vars, conc)
		if err != nil {
			return s, err
		}
		s.functions = append(s.functions, f)
		s.byName[fn.LogicalID] = f
		s.invokers[fn.LogicalID] = f
		for _, r := range fn.Routes {
			routes = append(routes, gateway.Route{Method: r.Method, Path: r.Path, Function: f})
		}
		for _, q := range fn.Queues {
			c := poller.Config{
				SQS:                     sqsClient,
				QueueURL:                s.Resources.Ref(q.QueueLogicalID),
				QueueARN:                s.Resources.Attr(q.QueueLogicalID + ".Arn"),
				Region:                  Region,
				BatchSize:               q.BatchSize,
				ReportBatchItemFailures: q.ReportBatchItemFailures,
				Concurrency:             conc.batches(&o, q.QueueLogicalID),
				Function:                observed(f, q.QueueLogicalID, o.BeforeDelivery, o.LoseDelivery),
				Name:                    q.QueueLogicalID + " -> " + fn.LogicalID,
				Log:                     pollLog,
			}
			if m := conc.maximum[q.QueueLogicalID]; m > 0 {
				s.caps[fn.LogicalID] = max(s.caps[fn.LogicalID], m)
			}
			if c.QueueURL == "" {
				return s, fmt.Errorf("%s: SQS event on %q, which is not a provisioned queue", fn.LogicalID, q.QueueLogicalID)
			}
			s.wg.Go(func() { _ = poller.Run(runCtx, c) })
		}
	}
	front, err := gateway.New(gateway.Options{Routes: routes, ForceBase64: o.ForceBase64, Log: log.New(o.Log, "[gateway] ", 0)})
	if err != nil {
		return s, err
	}
	if s.alerts, err = tapAlerts(ctx, s.AWS, s.Resources, o.Prefix, o.Log); err != nil {
		return s, err
	}
	s.wg.Go(func() { s.alerts.run(runCtx) })
	mux := http.NewServeMux()
	mux.Handle("/_local/mail", mailboxPage{moto: s.backend.endpoint, graph: graph})
	spans := traces.NewStore(traces.Limits{})
	mux.Handle(otlpPath+"/v1/traces", traces.Receiver{Store: spans, Log: log.New(o.Log, "[otlp] ", 0)})
	mux.Handle(traces.PagePath, traces.Page{Store: spans})
	// A stack of a smaller template (the tests' echo function) has no inbox.
	if slices.ContainsFunc(fns, func(fn sam.Function) bool { return fn.LogicalID == "InboxFunction" }) {
		inboxFn, err := s.asyncInvoker(runCtx, &o, fns, "InboxFunction", sqsClient)
		if err != nil {
			return s, err
		}
		mux.Handle("/_local/inbox", receiving{messages: inbox.NewMessages(awsenv.S3(s.AWS), s.Resources.Ref("InboxBucket")),
			function: inboxFn, support: oracle.SupportAddress, graph: graphRoot})
	}
	mux.Handle("/", front)
	s.serve(api, mux)
	s.startSchedules(runCtx, &o)
	return s, nil
}

// otlpPath is the OTLP endpoint on the front door: the functions' spans go
// to otlpPath/v1/traces.
const otlpPath = "/_local/otlp"

// sesDeliveryDelay is how long after a send the local SES front publishes
// its Delivery (or Bounce, Complaint): a quarter second, the least an SMTP
// exchange with another host takes; SES's own take seconds.
const sesDeliveryDelay = 250 * time.Millisecond

// asyncInvoker invokes the function id as Lambda invokes it
// asynchronously, with the retries and the on-failure destination of its
// EventInvokeConfig.
func (s *Stack) asyncInvoker(ctx context.Context, o *Options, fns []sam.Function, id string, q *sqs.Client) (poller.Invoker, error) {
	i := slices.IndexFunc(fns, func(fn sam.Function) bool { return fn.LogicalID == id })
	if i < 0 {
		return nil, fmt.Errorf("the template has no %s", id)
	}
	a := &asyncInvoker{fn: s.invokers[id], function: id, retries: 2, delays: o.AsyncRetryDelays, sqs: q, ctx: ctx,
		pending: &s.async, log: log.New(o.Log, "[lambda] ", 0)}
	if x := fns[i].Async.MaximumRetryAttempts; x != nil {
		n, err := s.backend.template.ResolveInt(x, s.backend.resources.Values)
		if err != nil {
			return nil, fmt.Errorf("%s: MaximumRetryAttempts: %w", id, err)
		}
		a.retries = n
	}
	if q := fns[i].Async.OnFailureQueue; q != "" {
		if a.destination = s.Resources.Ref(q); a.destination == "" {
			return nil, fmt.Errorf("%s: its on-failure destination %q is not a provisioned queue", id, q)
		}
	}
	return a, nil
}

// SAMEnvFile is where `make run` writes the functions' environments, for
// `sam local invoke <Function> --env-vars .build/sam-env.json`.
const SAMEnvFile = ".build/sam-env.json"

// SAMEnv is each function's environment as the stack started it, by
// logical id, in sam local invoke's --env-vars form: every variable the
// template declares for the function (Globals included; SAM CLI sets no
// other), with the local stack's endpoints and its secrets' ARNs in moto.
func (s *Stack) SAMEnv() map[string]map[string]string {
	out := map[string]map[string]string{}
	for _, fn := range s.backend.template.Functions() {
		vars := map[string]string{}
		for k := range fn.Env {
			vars[k] = s.environments[fn.LogicalID][k]
		}
		out[fn.LogicalID] = vars
	}
	return out
}

// WriteSAMEnv writes SAMEnv to path as JSON.
func (s *Stack) WriteSAMEnv(path string) error {
	b, err := json.MarshalIndent(s.SAMEnv(), "", "  ")
	if err != nil {
		return fmt.Errorf("encode the functions' environments: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	// Local secrets only (moto's ARNs, the fakes' addresses), but still
	// the operator's alone.
	return os.WriteFile(path, append(b, '\n'), 0o600)
}

// WaitAsync waits until every asynchronous invocation made so far has
// settled: succeeded, or failed its retries and sent its record on.
func (s *Stack) WaitAsync() { s.async.Wait() }

// checkEnv refuses overrides for a function the template does not have: a
// misspelt id would otherwise leave the test running with the defaults.
func checkEnv(env map[string]map[string]string, fns []sam.Function) error {
	for id := range env {
		if !slices.ContainsFunc(fns, func(fn sam.Function) bool { return fn.LogicalID == id }) {
			return fmt.Errorf("environment overrides for %q, which is not a function of the template", id)
		}
	}
	return nil
}

// Alerts returns the alerts published so far, oldest first.
func (s *Stack) Alerts() []string { return s.alerts.list() }

// Close stops everything Start started: servers, pollers, schedules,
// processes, and moto if Start started it.
func (s *Stack) Close() error {
	s.cancel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var errs []error
	for _, srv := range s.servers {
		if err := srv.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("shut down %s: %w", srv.Addr, err))
		}
	}
	s.wg.Wait()
	s.async.Wait()
	for _, f := range s.functions {
		f.Close()
	}
	if s.backend != nil {
		s.backend.close()
	}
	return errors.Join(errs...)
}

func (s *Stack) serve(ln net.Listener, h http.Handler) {
	srv := &http.Server{Addr: ln.Addr().String(), Handler: h, ReadHeaderTimeout: 10 * time.Second}
	s.servers = append(s.servers, srv)
	s.wg.Go(func() { _ = srv.Serve(ln) })
}

// observed shows each batch to see before the function gets it, and
// answers a batch lose takes with an empty response, which the poller
// takes for success and deletes: the function never sees it.
func observed(f poller.Invoker, queue string, see func(string, events.SQSEvent), lose func(string, events.SQSEvent) bool) poller.Invoker {
	if see == nil && lose == nil {
		return f
	}
	return invokerFunc(func(ctx context.Context, payload []byte) ([]byte, error) {
		var batch events.SQSEvent
		if err := json.Unmarshal(payload, &batch); err != nil {
			return nil, fmt.Errorf("observe %s batch: %w", queue, err)
		}
		if see != nil {
			see(queue, batch)
		}
		if lose != nil && lose(queue, batch) {
			return nil, nil
		}
		return f.Invoke(ctx, payload)
	})
}

type invokerFunc func(context.Context, []byte) ([]byte, error)

func (f invokerFunc) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	return f(ctx, payload)
}

// listen claims a loopback port; the stack is for this machine only.
func listen(port int) (net.Listener, error) {
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return nil, fmt.Errorf("port %d is not free: %w", port, err)
	}
	return ln, nil
}

// prefixed writes each Write (one log record) with a prefix.
func prefixed(w io.Writer, prefix string) io.Writer {
	return writerFunc(func(p []byte) (int, error) {
		if _, err := w.Write(append([]byte(prefix), p...)); err != nil {
			return 0, err
		}
		return len(p), nil
	})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// Deployment describes the running stack as CloudFormation describes a
// deployed one, for the operator's tools: the template's outputs that name
// a local resource, the front door as the API's URL, every parameter's
// value (secrets by their ARN in moto), and the endpoints of moto and the
// fakes.
func (s *Stack) Deployment() deployment.Deployment {
	t, v := s.Resources.Template, s.Resources.Values
	d := deployment.Deployment{
		Name: "local", Region: Region,
		Outputs:     map[string]string{},
		Parameters:  map[string]string{},
		AWSEndpoint: s.backend.endpoint,
		Env:         maps.Clone(s.env),
	}
	for name, value := range t.Outputs {
		// What the stack does not run (the HTTP API, the dashboard) does
		// not resolve: the front door stands in for the API below.
		if out, err := t.ResolveString(value, v); err == nil {
			d.Outputs[name] = out
		}
	}
	d.Outputs["ApiUrl"] = s.APIURL
	d.Outputs["WebhookUrl"] = s.APIURL + "/api/webhook"
	for name := range t.Parameters {
		d.Parameters[name], _ = t.Param(name, v)
	}
	return d
}

// motoSettings are what every function is told because it talks to moto,
// not AWS. moto does not speak CloudWatch's current (CBOR) protocol, so the
// health job reports queue ages as unknown here. moto is one Python
// process, in which one thread at a time runs, whatever serve.py's locks
// allow, so under a burst on a busy machine it answers in seconds what
// DynamoDB answers in milliseconds: the store calls' timeouts, 2 s an
// attempt and 5 s a call in AWS, are 8 s and 9 s here, inside the shortest
// function timeout (10 s), so that a slow moto is not taken for a failing
// store.
func motoSettings(env map[string]string) {
	env["QUEUE_AGE_METRICS"] = "off"
	env["STORE_ATTEMPT_TIMEOUT"] = "8s"
	env["STORE_CALL_TIMEOUT"] = "9s"
}
