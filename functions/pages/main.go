// Command pages is the Lambda function behind GET /, GET /result/{session_id}
// and GET /oracle/result: the order form and the result page, HTML with
// their styles and scripts embedded, served under a strict
// Content-Security-Policy. The pages talk to the checkout and verdict APIs
// from the browser; this function calls nothing.
package main

import (
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"42sisters.ai/oracle/shared/httpapi"
	"42sisters.ai/oracle/shared/obs"
)

func main() {
	log := obs.NewLogger(os.Stdout, os.Getenv("LOG_LEVEL"))
	cfg, err := loadConfig(os.LookupEnv)
	if err != nil {
		log.Error("cold start failed", "error", err.Error())
		os.Exit(1)
	}
	h := &Handler{Site: cfg.Site, Support: cfg.Support, Polling: DefaultPolling, Log: log}
	lambda.Start(httpapi.Recover(log, h.Handle))
}
