// Command echo is the test Lambda of the local stack's tests. What it does is
// chosen by the payload's "do" field (or, for an API Gateway event, by the
// "do" query parameter); SQS events report every record whose body contains
// "fail" as a batch item failure.
package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"42sisters.ai/oracle/shared/crashpoint"
)

type request struct {
	Do      string            `json:"do"`
	URL     string            `json:"url"`
	Point   string            `json:"point"`
	Version string            `json:"version"`
	Query   map[string]string `json:"queryStringParameters"`
	Records []json.RawMessage `json:"Records"`
}

func main() {
	if os.Getenv("ECHO_EXTENSION") == "" {
		lambda.Start(handle)
		return
	}
	if err := startExtension(); err != nil {
		fmt.Fprintln(os.Stderr, "echo: extension:", err)
		os.Exit(4)
	}
	lambda.Start(func(ctx context.Context, payload json.RawMessage) (any, error) {
		defer func() { answered <- struct{}{} }()
		return handle(ctx, payload)
	})
}

// With ECHO_EXTENSION set, an internal extension is registered at init;
// after each invocation's handler has returned it works 300 ms, then
// records the invocation as done (and says so on stdout) and asks for its
// next event. The handler of "extension" reports what it has recorded.
var (
	answered = make(chan struct{}, 1)
	extMu    sync.Mutex
	extDone  []string
)

func startExtension() error {
	base := "http://" + os.Getenv("AWS_LAMBDA_RUNTIME_API") + "/2020-01-01/extension"
	req, _ := http.NewRequest(http.MethodPost, base+"/register", strings.NewReader(`{"events":["INVOKE"]}`))
	req.Header.Set("Lambda-Extension-Name", "echo-extension")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	id := resp.Header.Get("Lambda-Extension-Identifier")
	if resp.StatusCode != http.StatusOK || id == "" {
		return fmt.Errorf("register: %s", resp.Status)
	}
	go func() {
		for {
			req, _ := http.NewRequest(http.MethodGet, base+"/event/next", nil)
			req.Header.Set("Lambda-Extension-Identifier", id)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return
			}
			var ev struct {
				EventType string `json:"eventType"`
				RequestID string `json:"requestId"`
			}
			_ = json.NewDecoder(resp.Body).Decode(&ev)
			resp.Body.Close()
			<-answered
			time.Sleep(300 * time.Millisecond)
			extMu.Lock()
			extDone = append(extDone, ev.EventType+" "+ev.RequestID)
			extMu.Unlock()
			fmt.Printf("echo: extension done with %s %s\n", ev.EventType, ev.RequestID)
		}
	}()
	return nil
}

func handle(ctx context.Context, payload json.RawMessage) (any, error) {
	var req request
	if err := json.Unmarshal(payload, &req); err != nil {
		return nil, fmt.Errorf("decode payload: %w", err)
	}
	if req.Records != nil {
		return sqs(payload)
	}
	do := req.Do
	if req.Version == "2.0" {
		do = req.Query["do"]
	}
	fmt.Printf("echo: invoked do=%q\n", do)
	switch do {
	case "error":
		return nil, errors.New("boom")
	case "sleep":
		time.Sleep(time.Hour)
	case "exit":
		os.Exit(3)
	case "raw":
		return map[string]string{"hello": "world"}, nil
	case "binary":
		return events.APIGatewayV2HTTPResponse{
			StatusCode:      201,
			Headers:         map[string]string{"content-type": "application/octet-stream"},
			Body:            base64.StdEncoding.EncodeToString([]byte{0, 1, 2, 255}),
			IsBase64Encoded: true,
		}, nil
	case "get":
		return get(ctx, req.URL)
	case "pid":
		return map[string]int{"pid": os.Getpid()}, nil
	case "extension":
		lc, _ := lambdacontext.FromContext(ctx)
		extMu.Lock()
		defer extMu.Unlock()
		return map[string]any{"requestId": lc.AwsRequestID, "done": append([]string{}, extDone...)}, nil
	case "crashpoint":
		crashpoint.Reach(ctx, crashpoint.Point(req.Point))
		return "went on past " + req.Point, nil
	}
	if req.Version == "2.0" {
		return events.APIGatewayV2HTTPResponse{
			StatusCode:        200,
			Headers:           map[string]string{"content-type": "application/json", "x-echo": "1"},
			MultiValueHeaders: map[string][]string{"x-multi": {"a", "b"}},
			Cookies:           []string{"c1=v1; Path=/", "c2=v2"},
			Body:              string(payload),
		}, nil
	}
	lc, _ := lambdacontext.FromContext(ctx)
	deadline, _ := ctx.Deadline()
	env := map[string]string{}
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	return map[string]any{
		"payload":    payload,
		"requestId":  lc.AwsRequestID,
		"arn":        lc.InvokedFunctionArn,
		"deadlineMs": deadline.UnixMilli(),
		"traceId":    ctx.Value("x-amzn-trace-id"),
		"env":        env,
		"pid":        os.Getpid(),
	}, nil
}

// get fetches url; the tests use it as a barrier that answers only once
// enough invocations are in flight at the same time.
func get(ctx context.Context, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

func sqs(payload json.RawMessage) (any, error) {
	var ev events.SQSEvent
	if err := json.Unmarshal(payload, &ev); err != nil {
		return nil, fmt.Errorf("decode SQS event: %w", err)
	}
	out := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
	for _, r := range ev.Records {
		if r.Body == "error" {
			return nil, errors.New("batch failed")
		}
		if strings.Contains(r.Body, "fail") {
			out.BatchItemFailures = append(out.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: r.MessageId})
		}
	}
	return out, nil
}
