// Package sqsbatch runs an SQS-triggered function's records one by one with
// Lambda's partial batch response: a record that fails, or panics, is
// reported so that SQS redelivers it alone, and no panic crosses the handler.
package sqsbatch

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"

	"github.com/aws/aws-lambda-go/events"
)

// Process calls each for every record and reports the ones that failed.
func Process(ctx context.Context, log *slog.Logger, ev events.SQSEvent, each func(context.Context, events.SQSMessage) error) events.SQSEventResponse {
	var resp events.SQSEventResponse
	for _, rec := range ev.Records {
		if err := safely(ctx, log, rec, each); err != nil {
			// Errors carry session ids cut short and never a query or an
			// address, so the reason can be logged whole.
			log.Warn("record failed; SQS will deliver it again", "message_id", rec.MessageId, "error", err.Error())
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: rec.MessageId})
		}
	}
	return resp
}

func safely(ctx context.Context, log *slog.Logger, rec events.SQSMessage, each func(context.Context, events.SQSMessage) error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			log.Error("panic while processing a record", "panic", fmt.Sprint(p), "stack", string(debug.Stack()), "message_id", rec.MessageId)
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return each(ctx, rec)
}
