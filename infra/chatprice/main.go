// Command chatprice makes Sisters Chat's Stripe Price (C$5.00 a month,
// lookup key sisters_chat_monthly_cad) in the Stripe account one
// deployment uses, once: `make chat-price` runs it against `make run`'s
// fake Stripe, with REMOTE=1 against the deployed stack's account.
//
//	go run ./infra/chatprice -local .build/stack-local.json
//	go run ./infra/chatprice [-stack oracle]
//
// The keys are the deployment's own secrets (STRIPE_SECRET_KEY, and
// STRIPE_TEST_SECRET_KEY beside a live key), read as its functions read
// them, or the workstation's STRIPE_SECRET_KEY when set. A Price already
// under the lookup key is reported, not made again; one that is not the
// fixed price is refused (exit 1), for the operator to archive in Stripe's
// Dashboard before running this again.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"

	"42sisters.ai/oracle/infra/awsprofile"
	"42sisters.ai/oracle/infra/deployment"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/config"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/secret"
	"42sisters.ai/oracle/shared/stripex"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.LookupEnv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, lookup func(string) (string, bool), stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("chatprice", flag.ContinueOnError)
	fs.SetOutput(stderr)
	stackName := fs.String("stack", "oracle", "the deployed CloudFormation stack")
	local := fs.String("local", "", "the local stack's description that `make run` writes (.build/stack-local.json)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	d, cfg, err := find(ctx, *stackName, *local)
	if err != nil {
		fmt.Fprintln(stderr, "chat-price:", err)
		return 2
	}
	env := map[string]string{
		"STRIPE_SECRET_KEY_ARN":      d.Parameters["StripeSecretKeyArn"],
		"STRIPE_TEST_SECRET_KEY_ARN": d.Parameters["StripeTestSecretKeyArn"],
		"STRIPE_API_BASE":            d.Env["STRIPE_API_BASE"],
	}
	if v, ok := lookup("STRIPE_SECRET_KEY"); ok && v != "" {
		env["STRIPE_SECRET_KEY"] = v
		delete(env, "STRIPE_SECRET_KEY_ARN")
		delete(env, "STRIPE_TEST_SECRET_KEY_ARN")
	}
	conf := config.New(func(name string) (string, bool) { v, ok := env[name]; return v, ok && v != "" }, config.NewAWSSecrets(cfg))
	live, test := stripex.KeysFrom(ctx, conf)
	base := conf.Optional("STRIPE_API_BASE", "")
	if err := conf.Err(); err != nil {
		fmt.Fprintln(stderr, "chat-price:", err)
		return 2
	}
	code := 0
	for _, k := range []struct {
		mode string
		key  *secret.Value
	}{{"live", live}, {"test", test}} {
		if k.key == nil {
			continue
		}
		p, err := stripex.NewBilling(k.key, stripex.Options{BaseURL: base, Retries: 2}).CreateChatPrice(ctx)
		switch {
		case errors.Is(err, stripex.ErrChatPrice):
			fmt.Fprintf(stdout, "%s mode: %v: archive it in Stripe's Dashboard (or move its lookup key), then run make chat-price again\n", k.mode, err)
			code = 1
		case err != nil:
			fmt.Fprintf(stdout, "%s mode: %v\n", k.mode, err)
			code = 1
		case p.Created:
			fmt.Fprintf(stdout, "%s mode: created %s, %s a %s, lookup key %s\n", k.mode, p.ID, oracle.FormatAmount(oracle.ChatPriceCents, oracle.Currency), oracle.ChatInterval, oracle.ChatPriceLookupKey)
		default:
			fmt.Fprintf(stdout, "%s mode: %s is already there, %s a %s, lookup key %s\n", k.mode, p.ID, oracle.FormatAmount(oracle.ChatPriceCents, oracle.Currency), oracle.ChatInterval, oracle.ChatPriceLookupKey)
		}
	}
	return code
}

// find reads the deployment: the local stack's file, or the deployed
// stack's description with the workstation's AWS credentials.
func find(ctx context.Context, stackName, local string) (deployment.Deployment, aws.Config, error) {
	if local != "" {
		d, err := deployment.Read(local)
		if err != nil {
			return d, aws.Config{}, fmt.Errorf("%w (is make run running?)", err)
		}
		if d.AWSEndpoint == "" {
			return d, aws.Config{}, errors.New(local + " names no local AWS endpoint")
		}
		return d, awsenv.ForEndpoint(d.AWSEndpoint, d.Region), nil
	}
	cfg, err := awsprofile.Load(ctx)
	if err != nil {
		return deployment.Deployment{}, cfg, err
	}
	d, err := deployment.Describe(ctx, cloudformation.NewFromConfig(cfg), cfg.Region, stackName)
	return d, cfg, err
}
