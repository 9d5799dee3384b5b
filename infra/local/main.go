// Command local runs the Oracle verdict service on this machine: every
// function's real bootstrap behind a local Lambda Runtime API, talking to
// moto server and a fake Stripe over real HTTP.
//
//	go run ./infra/local                                  the whole stack on http://localhost:3000
//	go run ./infra/local invoke <LogicalID> -e <event>    one invocation, like `sam local invoke`
package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/stripe/stripe-go/v76/webhook"

	"42sisters.ai/oracle/infra/deployment"
	"42sisters.ai/oracle/infra/local/runtimeapi"
	"42sisters.ai/oracle/infra/local/stack"
	"42sisters.ai/oracle/infra/motoserver"
)

const usage = `Usage:
  go run ./infra/local                                 run the whole stack until Ctrl-C
  go run ./infra/local invoke <LogicalID> -e <event>   run one function once with an event file

invoke prints the function's response on stdout (logs go to stderr) and
exits non-zero when the function fails. An API Gateway v2 event carrying a
stripe-signature header is re-signed with the local webhook secret first.

Environment:
  PORT                   front door port (default 3000)
  STRIPE_PORT            fake Stripe port (default 3001)
  MOTO_PORT              moto server port, reused if running (default 5000)
  ORACLE_MOTO_ENDPOINT   a running moto server to use instead
  STRIPE_SECRET_KEY      a real Stripe test key (sk_test_...); unset means the fake Stripe
  STRIPE_WEBHOOK_SECRET  the whsec_ of 'stripe listen' (default: the local secret)
  ORACLE_HASH_PEPPER     audit hash pepper (default: a fixed local value)
  GEMINI_PORT            fake Gemini port (default 3002)
  GEMINI_API_KEY         a real Gemini API key; unset means the fake Gemini
  SES_PORT               fake SES front port, before moto's SES (default 3003)
  MAIL_TRANSPORT         ses (default) or graph: email through the fake Microsoft Graph
  GRAPH_PORT             fake Microsoft Graph port (default 3004)
  FACILITATOR_PORT       fake x402 facilitator port; the agent rail pays the local wallet on Base Sepolia through it (default 3005)
  ORACLE_FORCE_BASE64    1: the front door base64-encodes every request body
  SCHEDULE_EVERY         fire some functions' schedules at a fixed interval instead of
                         their rate or cron, e.g. HealthFunction=30s,SmokeFunction=2m
`

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "local: "+err.Error())
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help" || args[0] == "help") {
		fmt.Print(usage)
		return nil
	}
	o, err := optionsFromEnv()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	switch {
	case len(args) == 0:
		return serve(ctx, o)
	case args[0] == "invoke":
		return invoke(ctx, o, args[1:])
	}
	return fmt.Errorf("unknown command %q (-h shows usage)", args[0])
}

func serve(ctx context.Context, o stack.Options) error {
	// The service is watched from its first moment: /api/health answers
	// as soon as the stack is ready.
	o.ScheduleAtStart = true
	s, err := stack.Start(ctx, o)
	if err != nil {
		return err
	}
	if s.StripeURL != "" {
		fmt.Fprintf(os.Stderr, "fake Stripe: %s (Payment Links at %s/link/{tier})\n", s.StripeURL, s.StripeURL)
	}
	fmt.Fprintf(os.Stderr, "fake SES front: %s (failures on demand at /_control)\n", s.SESURL)
	if s.GraphURL != "" {
		fmt.Fprintf(os.Stderr, "fake Microsoft Graph: %s (email goes through it; /_control, /_mailbox)\n", s.GraphURL)
	}
	fmt.Fprintf(os.Stderr, "fake x402 facilitator: %s (agents pay %s on Base Sepolia; /_control, /_calls)\n", s.FacilitatorURL, stack.LocalPayTo)
	// The operator's tools (make smoke LOCAL=1) find the stack here, as
	// they find a deployed one through CloudFormation.
	described := filepath.Join(o.Root, deployment.LocalFile)
	if err := s.Deployment().Write(described); err != nil {
		_ = s.Close()
		return fmt.Errorf("describe the stack for the tools: %w", err)
	}
	// sam local invoke reaches the stack with this file (docs/operating.md).
	samEnv := filepath.Join(o.Root, stack.SAMEnvFile)
	if err := s.WriteSAMEnv(samEnv); err != nil {
		_ = s.Close()
		return fmt.Errorf("write the functions' environments for sam local invoke: %w", err)
	}
	fmt.Printf("ready: %s\n", s.APIURL)
	<-ctx.Done()
	fmt.Fprintln(os.Stderr, "shutting down")
	_ = os.Remove(described)
	_ = os.Remove(samEnv)
	return s.Close()
}

func invoke(ctx context.Context, o stack.Options, args []string) error {
	fs := flag.NewFlagSet("invoke", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	eventFile := fs.String("e", "", "event file (JSON)")
	// The logical id may come before or after the flags.
	var id string
	for rest := args; ; rest = fs.Args()[1:] {
		if err := fs.Parse(rest); errors.Is(err, flag.ErrHelp) {
			fmt.Print(usage)
			return nil
		} else if err != nil {
			return fmt.Errorf("invoke: %w (-h shows usage)", err)
		}
		if fs.NArg() == 0 {
			break
		}
		if id != "" {
			return fmt.Errorf("invoke: unexpected argument %q (-h shows usage)", fs.Arg(0))
		}
		id = fs.Arg(0)
	}
	if id == "" || *eventFile == "" {
		return errors.New("invoke needs a function's logical id and -e <event.json> (-h shows usage)")
	}
	event, err := os.ReadFile(*eventFile)
	if err != nil {
		return fmt.Errorf("read the event: %w", err)
	}
	if !json.Valid(event) {
		return fmt.Errorf("event file %s is not valid JSON", *eventFile)
	}
	secret := o.StripeWebhookSecret
	if secret == "" {
		secret = stack.LocalWebhookSecret
	}
	if event, err = resign(event, secret, time.Now()); err != nil {
		return err
	}
	out, err := stack.Invoke(ctx, o, id, event)
	var fe *runtimeapi.Error
	if errors.As(err, &fe) {
		b, _ := json.Marshal(fe)
		fmt.Println(string(b))
		return fmt.Errorf("%s failed: %w", id, err)
	}
	if err != nil {
		return err
	}
	fmt.Println(string(out))
	return nil
}

// resign gives an API Gateway v2 event that carries a stripe-signature
// header a fresh, valid signature over its raw body, so recorded webhook
// events pass the webhook's signature and age checks. Other events are
// returned unchanged.
func resign(event []byte, secret string, now time.Time) ([]byte, error) {
	var ev map[string]json.RawMessage
	if json.Unmarshal(event, &ev) != nil {
		return event, nil
	}
	var version, body string
	var headers map[string]string
	var isBase64 bool
	if json.Unmarshal(ev["version"], &version) != nil || version != "2.0" || json.Unmarshal(ev["headers"], &headers) != nil {
		return event, nil
	}
	// Absent fields leave their zero values: no body, not base64.
	_ = json.Unmarshal(ev["body"], &body)
	_ = json.Unmarshal(ev["isBase64Encoded"], &isBase64)
	for name := range headers {
		if !strings.EqualFold(name, "stripe-signature") {
			continue
		}
		raw := []byte(body)
		if isBase64 {
			var err error
			if raw, err = base64.StdEncoding.DecodeString(body); err != nil {
				return nil, fmt.Errorf("the event's body is marked base64 but is not: %w", err)
			}
		}
		headers[name] = webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: raw, Secret: secret, Timestamp: now}).Header
		h, err := json.Marshal(headers)
		if err != nil {
			return nil, fmt.Errorf("re-sign the event: %w", err)
		}
		ev["headers"] = h
		return json.Marshal(ev)
	}
	return event, nil
}

func optionsFromEnv() (stack.Options, error) {
	root, err := repoRoot()
	if err != nil {
		return stack.Options{}, err
	}
	o := stack.Options{
		Root:                root,
		MotoEndpoint:        os.Getenv(motoserver.EndpointEnv),
		StripeSecretKey:     os.Getenv("STRIPE_SECRET_KEY"),
		StripeWebhookSecret: os.Getenv("STRIPE_WEBHOOK_SECRET"),
		HashPepper:          os.Getenv("ORACLE_HASH_PEPPER"),
		GeminiAPIKey:        os.Getenv("GEMINI_API_KEY"),
		ForceBase64:         os.Getenv("ORACLE_FORCE_BASE64") == "1",
		MailTransport:       os.Getenv("MAIL_TRANSPORT"),
	}
	if o.ScheduleEvery, err = scheduleEvery(os.Getenv("SCHEDULE_EVERY")); err != nil {
		return stack.Options{}, err
	}
	for name, p := range map[string]*int{"PORT": &o.Port, "STRIPE_PORT": &o.StripePort, "MOTO_PORT": &o.MotoPort, "GEMINI_PORT": &o.GeminiPort, "SES_PORT": &o.SESPort, "GRAPH_PORT": &o.GraphPort, "FACILITATOR_PORT": &o.FacilitatorPort} {
		v := os.Getenv(name)
		if v == "" {
			continue
		}
		if *p, err = strconv.Atoi(v); err != nil || *p < 1 || *p > 65535 {
			return stack.Options{}, fmt.Errorf("%s=%q is not a port number", name, v)
		}
	}
	return o, nil
}

// scheduleEvery reads SCHEDULE_EVERY: comma-separated LogicalId=duration
// pairs, each the interval at which that function's schedules fire instead
// of their rate or cron expression.
func scheduleEvery(v string) (map[string]time.Duration, error) {
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	out := map[string]time.Duration{}
	for pair := range strings.SplitSeq(v, ",") {
		id, text, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if !ok || id == "" {
			return nil, fmt.Errorf("SCHEDULE_EVERY: %q is not LogicalId=duration (e.g. HealthFunction=30s)", pair)
		}
		d, err := time.ParseDuration(text)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("SCHEDULE_EVERY: %s=%q is not a positive duration such as 30s or 2m", id, text)
		}
		if _, dup := out[id]; dup {
			return nil, fmt.Errorf("SCHEDULE_EVERY names %s twice", id)
		}
		out[id] = d
	}
	return out, nil
}

// repoRoot is the nearest directory up from the working directory that
// holds template.yaml and go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("working directory: %w", err)
	}
	for {
		_, errT := os.Stat(filepath.Join(dir, "template.yaml"))
		_, errM := os.Stat(filepath.Join(dir, "go.mod"))
		if errT == nil && errM == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("run this inside the repository: no template.yaml and go.mod found above the working directory")
		}
		dir = parent
	}
}
