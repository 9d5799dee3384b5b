// Command pages is the Lambda function behind GET /, GET /result/{session_id}
// and GET /oracle/result: the order form and the result page, HTML with
// their styles and scripts embedded, served under a strict
// Content-Security-Policy. The pages talk to the checkout and verdict APIs
// from the browser; this function calls nothing.
package main

import (
	"errors"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"42sisters.ai/oracle/shared/config"
	"42sisters.ai/oracle/shared/httpapi"
	"42sisters.ai/oracle/shared/obs"
	"42sisters.ai/oracle/shared/tracing"
)

func main() {
	log := obs.NewLogger(os.Stdout, os.Getenv("LOG_LEVEL"))
	cfg, err := loadConfig(os.LookupEnv)
	traces := config.FromEnviron(nil)
	ts := tracing.Read(traces)
	err = errors.Join(err, traces.Err())
	if err != nil {
		log.Error("cold start failed", "error", err.Error())
		os.Exit(1)
	}
	h := &Handler{Site: cfg.Site, Support: cfg.Support, Polling: DefaultPolling, Log: log}
	lambda.Start(tracing.Invocations(tracing.Start(ts, tracing.LambdaConfig(), log), httpapi.Recover(log, h.Handle)))
}
