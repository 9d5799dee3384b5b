// Package sqsbatch runs an SQS-triggered function's records one by one with
// Lambda's partial batch response: a record that fails, or panics, is
// reported so that SQS redelivers it alone, and no panic crosses the handler.
package sqsbatch

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"42sisters.ai/oracle/shared/tracing"

	"42sisters.ai/oracle/shared/obs"
)

// Counter emits a metric (obs.Metrics).
type Counter interface {
	Count(name string, n float64)
}

// Failures is the metric the records that fail are counted on. A failed
// record is only retried by SQS, never a Lambda error, so without it no
// alarm would see a function failing record after record.
type Failures struct {
	Metrics Counter // nil counts nothing
	Name    string  // e.g. "GeneratorRecordFailures"
}

// Process calls each for every record, reports the ones that failed and
// counts them on failures. Each record is a span that continues the trace
// its message carries (the sender's), linked to the invocation's; a
// message that carries none is processed all the same, its span the
// invocation's child.
func Process(ctx context.Context, log *slog.Logger, failures Failures, ev events.SQSEvent, each func(context.Context, events.SQSMessage) error) events.SQSEventResponse {
	var resp events.SQSEventResponse
	for _, rec := range ev.Records {
		// Every line about the record names its message (sqs_message_id).
		ctx := obs.WithMessage(ctx, rec.MessageId)
		if err := safely(ctx, log, rec, each); err != nil {
			// Errors never carry a query or an address, so the reason can be
			// logged whole.
			log.WarnContext(ctx, "record failed; SQS will deliver it again", "error", err.Error())
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: rec.MessageId})
		}
	}
	if n := len(resp.BatchItemFailures); n > 0 && failures.Metrics != nil {
		// One metric line per batch, however many of its records failed.
		failures.Metrics.Count(failures.Name, float64(n))
	}
	return resp
}

func safely(ctx context.Context, log *slog.Logger, rec events.SQSMessage, each func(context.Context, events.SQSMessage) error) (err error) {
	queue := rec.EventSourceARN[strings.LastIndexByte(rec.EventSourceARN, ':')+1:]
	ctx, span := tracing.Continue(ctx, "process "+queue, tracing.FromMessage(rec.MessageAttributes), trace.SpanKindConsumer)
	span.SetAttributes(attribute.String("messaging.system", "aws_sqs"), attribute.String("messaging.destination.name", queue),
		attribute.String("messaging.message.id", rec.MessageId))
	defer func() {
		if err != nil {
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}()
	defer func() {
		if p := recover(); p != nil {
			log.ErrorContext(ctx, "panic while processing a record", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return each(ctx, rec)
}
