package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"42sisters.ai/oracle/shared/queue"
)

// DeadLetter is a message that reached a dead-letter queue, as its Ledger
// record keeps it. A valid job is kept whole (it holds no email address and
// no query); any other body only as its SHA-256 and size, since it may hold
// anything.
type DeadLetter struct {
	Queue     string    // the dead-letter queue's name
	MessageID string    // SQS's id of the message
	SentAt    time.Time // when the message was first sent; zero when unknown
	// The job, when the body was one: its fields, and the job as JSON,
	// ready to be sent again once its cause is fixed.
	SessionID string
	Reason    string
	Kind      string
	Attempt   int
	Job       string
	// An unreadable body: its SHA-256 (hex) and size in bytes.
	BodySHA256 string
	BodyBytes  int
	// Inbox is, for a failed invocation of the inbox function (a body
	// kept only as its hash: it holds addresses), the stored messages it
	// named, space-separated: what `make inbox-replay` processes again.
	Inbox string
}

// DeadLetterKey is the Ledger key of the message with id messageID that
// reached the dead-letter queue named queue.
func DeadLetterKey(queue, messageID string) string {
	return "deadletter#" + queue + "#" + messageID
}

// valid checks that d names its message and holds a job or a body's hash,
// not both.
func (d DeadLetter) valid() error {
	switch {
	case d.Queue == "" || d.MessageID == "":
		return errors.New("a dead letter needs its queue and message id")
	case (d.Job == "") == (d.BodySHA256 == ""):
		return errors.New("a dead letter holds either a job or an unreadable body's hash")
	}
	if d.Job != "" {
		// What a job must name (a session, or the stored message an
		// autoresponse answers) is the job's own rule.
		if _, err := queue.Parse(d.Job); err != nil {
			return fmt.Errorf("a dead job must be a valid job: %w", err)
		}
	}
	return nil
}

// RecordDeadLetter writes d's record, kept for keep, unless one exists:
// first is false when the message was already recorded (SQS delivered it
// again), which makes the record the guard that raises one alert per
// message. The write recognises its own first attempt when the SDK retried
// it.
func (l *Ledger) RecordDeadLetter(ctx context.Context, d DeadLetter, keep time.Duration) (first bool, err error) {
	if err := d.valid(); err != nil {
		return false, err
	}
	item := map[string]types.AttributeValue{
		"queue":      &types.AttributeValueMemberS{Value: d.Queue},
		"message_id": &types.AttributeValueMemberS{Value: d.MessageID},
		"dead_at":    &types.AttributeValueMemberS{Value: l.now().UTC().Format(time.RFC3339Nano)},
	}
	if !d.SentAt.IsZero() {
		item["sent_at"] = &types.AttributeValueMemberS{Value: d.SentAt.UTC().Format(time.RFC3339Nano)}
	}
	if d.Job != "" {
		item["job"] = &types.AttributeValueMemberS{Value: d.Job}
		if d.SessionID != "" {
			item["session_id"] = &types.AttributeValueMemberS{Value: d.SessionID}
		}
		item["attempt"] = &types.AttributeValueMemberN{Value: strconv.Itoa(d.Attempt)}
		if d.Reason != "" {
			item["reason"] = &types.AttributeValueMemberS{Value: d.Reason}
		}
		if d.Kind != "" {
			item["kind"] = &types.AttributeValueMemberS{Value: d.Kind}
		}
	} else {
		item["body_sha256"] = &types.AttributeValueMemberS{Value: d.BodySHA256}
		item["body_bytes"] = &types.AttributeValueMemberN{Value: strconv.Itoa(d.BodyBytes)}
		if d.Inbox != "" {
			item["inbox"] = &types.AttributeValueMemberS{Value: d.Inbox}
		}
	}
	first, err = l.putOnce(ctx, DeadLetterKey(d.Queue, d.MessageID), item, keep)
	if err != nil {
		return false, fmt.Errorf("record dead letter %s from %s: %w", d.MessageID, d.Queue, err)
	}
	if first {
		if err := l.countDeadLetter(ctx, d.Queue); err != nil {
			return true, fmt.Errorf("%w: %w", ErrNotCounted, err)
		}
	}
	return first, nil
}

// ErrNotCounted means a dead letter was recorded but not counted for the
// health job's figure: the record stands and its alert is owed; only the
// figure is short by one.
var ErrNotCounted = errors.New("the dead letter is recorded but not counted")
