package stack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/google/uuid"

	"42sisters.ai/oracle/infra/local/poller"
	"42sisters.ai/oracle/infra/local/runtimeapi"
	"42sisters.ai/oracle/infra/provision"
)

// DefaultAsyncRetryDelays are the waits before Lambda's retries of a failed
// asynchronous invocation: a minute before the first, two before the second.
var DefaultAsyncRetryDelays = []time.Duration{time.Minute, 2 * time.Minute}

// asyncInvoker invokes a function as Lambda does an asynchronous invocation
// (SES's receipt rule invokes with InvocationType Event): it answers at
// once; a failed attempt is retried up to retries times, after delays; an
// invocation that failed them all sends Lambda's invocation record to the
// on-failure destination, as the template's EventInvokeConfig says.
type asyncInvoker struct {
	fn          poller.Invoker
	function    string // the function's logical id
	retries     int
	delays      []time.Duration
	destination string // the on-failure queue's URL; "" for none
	sqs         *sqs.Client
	ctx         context.Context // the stack's: cancelled by Close
	pending     *sync.WaitGroup
	log         *log.Logger
}

// Invoke queues the invocation and answers at once, as Lambda answers 202.
func (a *asyncInvoker) Invoke(_ context.Context, payload []byte) ([]byte, error) {
	a.pending.Go(func() { a.run(payload) })
	return nil, nil
}

func (a *asyncInvoker) run(payload []byte) {
	var err error
	attempts := 0
	for attempts <= a.retries {
		if attempts > 0 {
			select {
			case <-a.ctx.Done():
				return
			case <-time.After(a.delay(attempts - 1)):
			}
		}
		attempts++
		if _, err = a.fn.Invoke(a.ctx, payload); err == nil {
			return
		}
		a.log.Printf("%s: asynchronous invocation failed (attempt %d of %d): %v", a.function, attempts, a.retries+1, err)
	}
	if a.destination == "" || a.ctx.Err() != nil {
		return
	}
	body, merr := json.Marshal(a.record(payload, attempts, err))
	if merr == nil {
		_, merr = a.sqs.SendMessage(a.ctx, &sqs.SendMessageInput{QueueUrl: aws.String(a.destination), MessageBody: aws.String(string(body))})
	}
	if merr != nil {
		a.log.Printf("%s: the failed invocation's record was not sent to its destination: %v", a.function, merr)
		return
	}
	a.log.Printf("%s: asynchronous invocation failed %d times: its record went to the on-failure destination", a.function, attempts)
}

func (a *asyncInvoker) delay(i int) time.Duration {
	if len(a.delays) == 0 {
		return 0
	}
	return a.delays[min(i, len(a.delays)-1)]
}

// record is Lambda's invocation record for a destination.
func (a *asyncInvoker) record(payload []byte, attempts int, err error) map[string]any {
	fe := &runtimeapi.Error{Type: "Unhandled", Message: fmt.Sprint(err)}
	var re *runtimeapi.Error
	if errors.As(err, &re) {
		fe = re
	}
	return map[string]any{
		"version":   "1.0",
		"timestamp": time.Now().UTC().Format("2006-01-02T15:04:05.000Z"),
		"requestContext": map[string]any{
			"requestId":              uuid.NewString(),
			"functionArn":            fmt.Sprintf("arn:aws:lambda:%s:%s:function:%s:$LATEST", Region, provision.Account, a.function),
			"condition":              "RetriesExhausted",
			"approximateInvokeCount": attempts,
		},
		"requestPayload":  json.RawMessage(payload),
		"responseContext": map[string]any{"statusCode": 200, "executedVersion": "$LATEST", "functionError": "Unhandled"},
		"responsePayload": fe,
	}
}
