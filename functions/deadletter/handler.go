package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/ascii"
	"42sisters.ai/oracle/shared/inbox"
	"42sisters.ai/oracle/shared/mail"
	"42sisters.ai/oracle/shared/obs"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/queue"
	"42sisters.ai/oracle/shared/sesevent"
	"42sisters.ai/oracle/shared/sqsbatch"
	"42sisters.ai/oracle/shared/store"
)

// Records keeps dead letters (store.Ledger).
type Records interface {
	RecordDeadLetter(ctx context.Context, d store.DeadLetter, keep time.Duration) (first bool, err error)
}

// Alerter raises operator alerts.
type Alerter interface {
	Raise(ctx context.Context, a alert.Alert)
}

// Counter emits a metric (obs.Metrics).
type Counter interface {
	Count(name string, n float64)
}

// Handler consumes the dead-letter queues.
type Handler struct {
	Records Records
	Alerts  Alerter
	// Retention is how long each record is kept.
	Retention time.Duration
	// Metrics counts each dead letter once, when it is first recorded
	// (DeadLetters), and the deliveries that fail (DeadLetterRecordFailures).
	Metrics Counter
	Log     *slog.Logger
}

// Handle records and alerts every message of the batch and reports the
// ones it could not record, so that SQS delivers those again: a message
// leaves its dead-letter queue only once its record is written.
func (h *Handler) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	return sqsbatch.Process(ctx, h.Log, sqsbatch.Failures{Metrics: h.Metrics, Name: obs.DeadLetterRecordFailures}, ev, h.process), nil
}

// process records one message and, the first time only, alerts.
func (h *Handler) process(ctx context.Context, rec events.SQSMessage) error {
	d, err := deadLetter(rec)
	if err != nil {
		return err
	}
	key := store.DeadLetterKey(d.Queue, d.MessageID)
	log := h.Log.With("message_id", d.MessageID, "queue", d.Queue)
	switch job, _ := queue.Parse(d.Job); {
	case oracle.ChatMail(job.Kind):
		log = log.With("kind", string(job.Kind), "nonce", job.Nonce) // never the account's address
	case d.Job != "":
		ctx = obs.WithOrder(ctx, d.SessionID)
	}
	first, err := h.Records.RecordDeadLetter(ctx, d, h.Retention)
	if errors.Is(err, store.ErrNotCounted) {
		// The record stands and its alert is owed; only the health job's
		// figure of new dead letters is short by one.
		log.WarnContext(ctx, "dead letter recorded but not counted", "error", err.Error())
		err = nil
	}
	if err != nil {
		// Logged once by sqsbatch, which names the message; the error names
		// the queue and the session's name (oracle.ShortID).
		return fmt.Errorf("dead letter from %s%s not recorded; it stays on the queue: %w", d.Queue, shortSession(d), err)
	}
	if !first {
		log.InfoContext(ctx, "dead letter already recorded; the redelivery is acknowledged", "record", key)
		return nil
	}
	// Counted here, past the put-once record, so a redelivery of the same
	// message never counts twice; an alarm watches it apart from SNS.
	if h.Metrics != nil {
		h.Metrics.Count(obs.DeadLetters, 1)
	}
	if d.Inbox != "" {
		h.inboxFailed(ctx, d, rec.Body)
		log.WarnContext(ctx, "failed inbox invocation recorded and alerted", "record", key)
		return nil
	}
	session, about := d.SessionID, what(d)
	if d.Job == "" {
		session = d.MessageID
		// A mail event (SES's, through SNS) is no job, and holds addresses:
		// it is kept only as its hash, but the alert names its email.
		if ev, err := sesevent.Parse(rec.Body); err == nil && oracle.ValidSessionID(ev.Tag(mail.TagSession)) {
			session = ev.Tag(mail.TagSession)
			about = fmt.Sprintf("SES's %s event about the %s email", ev.EventType, ev.Tag(mail.TagKind))
		}
		if kind, nonce, ok := garbledChatMail(rec.Body); ok {
			about = fmt.Sprintf("an unreadable %s mail job for %s (%d bytes: the account is no keyed hash, or a field is missing)", kind, nonce, d.BodyBytes)
		}
	}
	// Every source's dead letters share one queue: its body says what a
	// job was, and for the rest (garbage) SQS names the queue it left
	// (DeadLetterQueueSourceArn, which moto does not set).
	if src := queueName(rec.Attributes["DeadLetterQueueSourceArn"]); src != "" && d.Job == "" {
		about += " from " + src
	}
	// The message id keys the dedupe window too: jobs of no session (the
	// autoresponses) would otherwise share one.
	h.Alerts.Raise(ctx, alert.Alert{Severity: alert.Critical, Kind: alert.JobDeadLettered, Session: session, Subject: d.MessageID,
		Detail: about + " reached " + d.Queue + " as message " + d.MessageID + "; the record " + key + " keeps it"})
	log.WarnContext(ctx, "dead letter recorded and alerted", "record", key)
	return nil
}

// deadLetter reads what the record keeps of a message: its queue, id and
// send time, and the job, or only the hash and size of a body that is not
// one (it may hold anything, so it is neither kept nor logged).
func deadLetter(rec events.SQSMessage) (store.DeadLetter, error) {
	q := queueName(rec.EventSourceARN)
	if q == "" || rec.MessageId == "" {
		return store.DeadLetter{}, errors.New("a record without its queue's ARN or its message id")
	}
	d := store.DeadLetter{Queue: q, MessageID: rec.MessageId, SentAt: sentAt(rec.Attributes["SentTimestamp"])}
	job, err := queue.Parse(rec.Body)
	if err != nil {
		sum := sha256.Sum256([]byte(rec.Body))
		d.BodySHA256, d.BodyBytes = hex.EncodeToString(sum[:]), len(rec.Body)
		if f, ok := inbox.ParseFailure(rec.Body); ok {
			d.Inbox = strings.Join(f.Objects, " ")
		}
		return d, nil
	}
	b, err := json.Marshal(job)
	if err != nil {
		return store.DeadLetter{}, fmt.Errorf("encode the job of message %s: %w", rec.MessageId, err)
	}
	d.Job, d.SessionID, d.Reason, d.Kind, d.Attempt = string(b), job.SessionID, string(job.Reason), string(job.Kind), job.Attempt
	return d, nil
}

// queueName is the last part of a queue's ARN (arn:aws:sqs:region:account:name).
func queueName(arn string) string {
	if !strings.HasPrefix(arn, "arn:") {
		return ""
	}
	return arn[strings.LastIndex(arn, ":")+1:]
}

// sentAt reads SQS's SentTimestamp (milliseconds since the epoch), which a
// message keeps when it moves to the dead-letter queue; zero when absent.
func sentAt(ms string) time.Time {
	n, err := strconv.ParseInt(ms, 10, 64)
	if err != nil || n <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(n).UTC()
}

// what says what the dead message was, for the alert.
func what(d store.DeadLetter) string {
	switch {
	case d.Job == "":
		return fmt.Sprintf("an unreadable message (%d bytes)", d.BodyBytes)
	case d.Kind == string(oracle.MailAutoresponse):
		return fmt.Sprintf("an autoresponse job (attempt %d): the sender was not acknowledged; the message is in the inbox", d.Attempt)
	case oracle.ChatMail(oracle.MailKind(d.Kind)):
		job, _ := queue.Parse(d.Job)
		return fmt.Sprintf("a %s mail job for %s (attempt %d)", d.Kind, job.Nonce, d.Attempt)
	case d.Kind != "":
		return fmt.Sprintf("a mail job (kind %s, attempt %d)", d.Kind, d.Attempt)
	default:
		return fmt.Sprintf("a generate job (reason %s, attempt %d)", d.Reason, d.Attempt)
	}
}

// shortSession names the job's session in an error by oracle.ShortID, or a
// chat mail job by its kind (it names no session).
func shortSession(d store.DeadLetter) string {
	switch {
	case d.Job == "":
		return ""
	case d.SessionID == "":
		return " (" + d.Kind + ")"
	}
	return " (session " + oracle.ShortID(d.SessionID) + ")"
}

// chatNonceChars make a chat mail job's nonce, 8 to 80 of them
// (queue.Job.Validate's form): it cannot hold an address.
var chatNonceChars = ascii.NewSet("A-Za-z0-9_-")

// garbledChatMail reads, from a body that is no valid job but says it is a
// chat mail job, its kind and its nonce (or "no readable nonce"): what its
// alert may name. Its account, which may be an address, is never read.
func garbledChatMail(body string) (oracle.MailKind, string, bool) {
	var j struct {
		Kind  oracle.MailKind `json:"kind"`
		Nonce string          `json:"nonce"`
	}
	if json.Unmarshal([]byte(body), &j) != nil || !oracle.ChatMail(j.Kind) {
		return "", "", false
	}
	if !chatNonceChars.Run(j.Nonce, 8, 80) {
		return j.Kind, "no readable nonce", true
	}
	return j.Kind, j.Nonce, true
}

// inboxFailed alerts a failed invocation of the inbox function, from its
// on-failure destination: each message it named was neither alerted nor
// acknowledged, and waits in the inbox bucket for `make inbox-replay`.
func (h *Handler) inboxFailed(ctx context.Context, d store.DeadLetter, body string) {
	f, _ := inbox.ParseFailure(body)
	for _, object := range f.Objects {
		h.Alerts.Raise(ctx, alert.Alert{Severity: alert.Critical, Kind: alert.InboxFailed, Subject: object,
			Detail: fmt.Sprintf("the inbox function failed on the message stored as %s (%s after %d attempts, %s): it was neither alerted nor acknowledged; "+
				"read it with make ops ACTION=inbox SHOW=%s, fix the cause (the inbox function's log), then make inbox-replay processes it; the record %s keeps it",
				object, f.Condition, f.Attempts, oracle.Clip(f.ErrorType, 64), inbox.ID(object), store.DeadLetterKey(d.Queue, d.MessageID))})
	}
}
