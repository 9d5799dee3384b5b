// Package coldstart is what every function's main does before it serves:
// the logger, the AWS configuration (its store calls bounded and alerting,
// shared/storeguard), the function's settings read and validated once, and
// the operator alerts. A failure ends the process with
// one log line, so Lambda reports an init error instead of a function that
// fails request by request.
package coldstart

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/config"
	"42sisters.ai/oracle/shared/obs"
	"42sisters.ai/oracle/shared/storeguard"
	"42sisters.ai/oracle/shared/tracing"
)

// Function is what a function's main wires its handler from.
type Function struct {
	Log     *slog.Logger
	AWS     aws.Config
	Metrics *obs.Metrics
	// Tracing is the function's tracer provider: nil when no traces
	// endpoint is configured. main wraps its handler with
	// tracing.Invocations(fn.Tracing, …).
	Tracing *tracing.Provider
	// guard bounds the store calls of every client made from AWS and,
	// once the function has an alerter, raises their failures.
	guard *storeguard.Guard
}

// Start loads the AWS configuration and then the settings with load; it
// ends the process when either fails.
func Start[S any](load func(context.Context, aws.Config) (S, error)) (*Function, S) {
	ctx := context.Background()
	f := &Function{Log: obs.NewLogger(os.Stdout, os.Getenv("LOG_LEVEL"))}
	// What logs without a logger of its own (httpapi.JSON; a secret read
	// again when refused, package secret) logs as the function does.
	slog.SetDefault(f.Log)
	env := config.FromEnviron(nil)
	ns, err := metricsNamespace(env)
	f.Check(err, "metrics namespace")
	f.Metrics = obs.NewMetrics(os.Stdout, ns, time.Now)
	cfg, err := awsenv.LoadLambda(ctx)
	f.Check(err, "AWS configuration")
	f.guard, err = storeGuard(env, f)
	f.Check(err, "store timeouts")
	f.guard.Options(&cfg)
	traces := config.FromEnviron(nil)
	ts := tracing.Read(traces)
	f.Check(traces.Err(), "tracing")
	if f.Tracing = tracing.Start(ts, cfg, f.Log); f.Tracing != nil {
		// Every client made from AWS makes a span of each call.
		cfg.APIOptions = append(cfg.APIOptions, tracing.AWS)
	}
	f.AWS = cfg
	settings, err := load(ctx, cfg)
	f.Check(err, "settings")
	return f, settings
}

// metricsNamespace reads METRICS_NAMESPACE, the stack's own namespace
// (Oracle/<stack name>) that its alarms and dashboard watch.
func metricsNamespace(env *config.Env) (string, error) {
	ns := env.String("METRICS_NAMESPACE")
	if err := env.Err(); err != nil {
		return "", err
	}
	if err := obs.ValidNamespace(ns); err != nil {
		env.Invalid("METRICS_NAMESPACE", err)
		return "", env.Err()
	}
	return ns, nil
}

// storeGuard reads the store calls' timeouts: STORE_ATTEMPT_TIMEOUT and
// STORE_CALL_TIMEOUT, the defaults AWS's latency calls for; the local stack
// sets longer ones for moto, which applies DynamoDB's requests one at a
// time and, under a burst on a busy machine, answers in seconds.
func storeGuard(env *config.Env, f *Function) (*storeguard.Guard, error) {
	g := &storeguard.Guard{
		Log:            f.Log,
		Metrics:        f.Metrics,
		AttemptTimeout: env.Duration("STORE_ATTEMPT_TIMEOUT", storeguard.AttemptTimeout),
		CallTimeout:    env.Duration("STORE_CALL_TIMEOUT", storeguard.CallTimeout),
	}
	if g.AttemptTimeout > g.CallTimeout {
		env.Invalid("STORE_ATTEMPT_TIMEOUT", fmt.Errorf("%s is longer than STORE_CALL_TIMEOUT (%s)", g.AttemptTimeout, g.CallTimeout))
	}
	return g, env.Err()
}

// Check ends the process when err is not nil, naming what could not be set up.
func (f *Function) Check(err error, what string) {
	if err != nil {
		f.Log.Error("cold start failed: "+what, "error", err.Error())
		os.Exit(1)
	}
}

// Alerter raises alerts on topic, deduplicated through dedupe (the Ledger).
// The first one made also raises the function's store failures.
func (f *Function) Alerter(topic string, dedupe alert.Deduper) *alert.Alerter {
	al := &alert.Alerter{SNS: awsenv.NewTopics(f.AWS), Topic: topic, Dedupe: dedupe, Metrics: f.Metrics, Log: f.Log}
	if f.guard != nil && f.guard.Alerts == nil {
		f.guard.Alerts = al
	}
	return al
}
