// Command smoke runs the smoke test's thirteen stages from a workstation
// against one deployment, exactly as the scheduled smoke function runs
// them: after `sam deploy` against the deployed stack, found through
// CloudFormation, or with -local against `make run`'s stack.
//
//	go run ./infra/smoke [-stack oracle]          the deployed stack
//	go run ./infra/smoke -local .build/stack-local.json
//	go run ./infra/smoke -new-wallet              a fresh smoke wallet: key and address
//
// It prints the report, raises the run's alert (INFO SMOKE_PASSED or
// CRITICAL SMOKE_FAILED) on the stack's alerts topic, and exits 0 when
// every stage passed, 1 when a stage failed, 2 when the environment check
// failed or the deployment could not be read.
package main

import (
	"context"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"
	"github.com/decred/dcrd/dcrec/secp256k1/v4"

	"42sisters.ai/oracle/infra/awsprofile"
	"42sisters.ai/oracle/infra/deployment"
	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/config"
	"42sisters.ai/oracle/shared/obs"
	"42sisters.ai/oracle/shared/smoke"
	"42sisters.ai/oracle/shared/store"
	"42sisters.ai/oracle/shared/x402"
)

// exitEnvironment is the exit code of a run whose environment check
// failed, or that could not start: nothing was created.
const exitEnvironment = 2

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.LookupEnv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is the command; lookup reads the workstation's environment.
func run(ctx context.Context, args []string, lookup func(string) (string, bool), stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("smoke", flag.ContinueOnError)
	fs.SetOutput(stderr)
	stackName := fs.String("stack", "oracle", "the deployed CloudFormation stack")
	local := fs.String("local", "", "the local stack's description that `make run` writes (.build/stack-local.json)")
	stageTimeout := fs.Duration("stage-timeout", smoke.StageTimeout, "the most each stage may take")
	newWallet := fs.Bool("new-wallet", false, "print a fresh key for the smoke test's Base Sepolia wallet and its address, and exit")
	if err := fs.Parse(args); err != nil {
		return exitEnvironment
	}
	if fs.NArg() > 0 {
		fmt.Fprintln(stderr, "smoke: unexpected arguments (-h shows usage)")
		return exitEnvironment
	}
	if *newWallet {
		return printWallet(stdout, stderr)
	}
	if *stageTimeout <= 0 {
		fmt.Fprintln(stderr, "smoke: -stage-timeout must be a positive duration such as 30s")
		return exitEnvironment
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	runner, alerts, err := wire(ctx, *stackName, *local, lookup, log)
	if err != nil {
		fmt.Fprintln(stderr, "smoke: "+err.Error())
		return exitEnvironment
	}
	runner.StageTimeout = *stageTimeout
	rep := runner.Run(ctx)
	fmt.Fprint(stdout, rep.String())
	alerts.Raise(ctx, smoke.Announcement(rep))
	return rep.ExitCode()
}

// printWallet makes a fresh smoke wallet and prints its key, for the
// X402SmokeKeyArn secret, and its address, for X402SmokePayer.
func printWallet(stdout, stderr io.Writer) int {
	key, err := secp256k1.GeneratePrivateKey()
	if err != nil {
		fmt.Fprintln(stderr, "smoke: "+err.Error())
		return 1
	}
	fmt.Fprintf(stdout, "X402_SMOKE_KEY=0x%s\nX402SmokePayer=%s\n", hex.EncodeToString(key.Serialize()), x402.AddressOf(key.PubKey()))
	fmt.Fprintln(stderr, "Store the key as the X402SmokeKeyArn secret, pass the address as X402SmokePayer, and fund it with test USDC on Base Sepolia from https://faucet.circle.com.")
	return 0
}

// wire finds the deployment and builds the runner and the alerter for it.
func wire(ctx context.Context, stackName, local string, lookup func(string) (string, bool), log *slog.Logger) (*smoke.Runner, *alert.Alerter, error) {
	d, cfg, err := find(ctx, stackName, local)
	if err != nil {
		return nil, nil, err
	}
	env, err := settingsEnv(d, lookup)
	if err != nil {
		return nil, nil, err
	}
	s, err := smoke.LoadSettings(ctx, config.New(func(name string) (string, bool) {
		v, ok := env[name]
		return v, ok
	}, config.NewAWSSecrets(cfg)))
	if err != nil {
		return nil, nil, err
	}
	ses := sesv2.NewFromConfig(cfg, func(o *sesv2.Options) {
		if u := d.Env["AWS_ENDPOINT_URL_SESV2"]; u != "" {
			o.BaseEndpoint = aws.String(u) // the local SES front, as the mailer has it
		}
	})
	runner, err := smoke.NewRunner(s, cfg, ses)
	if err != nil {
		return nil, nil, err
	}
	ledger := store.NewLedger(awsenv.NewTables(cfg), s.LedgerTable, time.Now)
	alerts := &alert.Alerter{SNS: awsenv.NewTopics(cfg), Topic: s.AlertsTopic, Dedupe: ledger,
		Metrics: obs.NewMetrics(io.Discard, "Oracle", time.Now), Log: log}
	return runner, alerts, nil
}

// find reads the deployment: the local stack's file, or the deployed
// stack's description with the workstation's AWS credentials.
func find(ctx context.Context, stackName, local string) (deployment.Deployment, aws.Config, error) {
	if local != "" {
		d, err := deployment.Read(local)
		if err != nil {
			return d, aws.Config{}, err
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
