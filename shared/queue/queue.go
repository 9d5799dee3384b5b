// Package queue defines the small JSON jobs the functions pass through SQS
// and sends them.
package queue

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"42sisters.ai/oracle/shared/ascii"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/tracing"
)

// Reason says why a generate job was sent.
type Reason string

// The reasons.
const (
	ReasonPaid       Reason = "paid"       // first generation after payment
	ReasonRegenerate Reason = "regenerate" // the stored verdict expired
	ReasonOperator   Reason = "operator"   // the operator delivered or re-ran the order (the ops function)
	// ReasonQuarantineReview was a link of the retired quarantine reminder
	// chain (the health job re-alerts now). It is still parsed only so that
	// the generator can acknowledge a reminder that was on the queue when
	// the chain was removed; nothing sends it.
	ReasonQuarantineReview Reason = "quarantine_review"
)

// Job is one message on the generate or mail queue. It carries no email
// address and no query: consumers read the order by session id, the
// stored message an autoresponse answers by its key, or a chat account by
// its keyed hash.
type Job struct {
	SessionID string          `json:"session_id,omitempty"`
	Reason    Reason          `json:"reason,omitempty"` // generate jobs
	Kind      oracle.MailKind `json:"kind,omitempty"`   // mail jobs
	// Inbox is, on an autoresponse job, the key of the received message in
	// the inbox bucket; the mailer reads the sender from it at send time.
	Inbox string `json:"inbox,omitempty"`
	// Account is, on a chat mail job, the account's keyed hash; Nonce
	// names what the email answers (the sign-in request, the failed
	// invoice), so that each is sent at most once.
	Account   string     `json:"account,omitempty"`
	Nonce     string     `json:"nonce,omitempty"`
	Attempt   int        `json:"attempt"`
	NotBefore *time.Time `json:"not_before,omitempty"`
}

// validInboxKey reports the form of a stored message's key: what the inbox
// function and the local stack write ("inbound/<id>", an id of 1 to 160 of
// inboxChars).
func validInboxKey(key string) bool {
	id, ok := strings.CutPrefix(key, "inbound/")
	return ok && inboxChars.Run(id, 1, 160)
}

var inboxChars = ascii.NewSet("A-Za-z0-9._-")

// accountKey is a chat account's name: audit.Hasher's keyed hash (not
// imported: queue sits below audit).
var accountKey = regexp.MustCompile(`^hmac-sha256:[0-9a-f]{32}$`)

// nonceChars make what a chat mail job answers (8 to 80 of them): a
// request id or an invoice id.
var nonceChars = ascii.NewSet("A-Za-z0-9_-")

// Validate checks a job's fields.
func (j Job) Validate() error {
	if oracle.ChatMail(j.Kind) {
		switch {
		case !accountKey.MatchString(j.Account):
			return fmt.Errorf("chat mail job has an invalid account")
		case !nonceChars.Run(j.Nonce, 8, 80):
			return fmt.Errorf("chat mail job has an invalid nonce")
		case j.SessionID != "" || j.Reason != "" || j.Inbox != "":
			return fmt.Errorf("chat mail job names a session, reason or inbox message")
		case j.Attempt < 0:
			return fmt.Errorf("job has a negative attempt")
		}
		return nil
	}
	if j.Account != "" || j.Nonce != "" {
		return fmt.Errorf("job names a chat account but is no chat mail")
	}
	if j.Kind == oracle.MailAutoresponse {
		switch {
		case !validInboxKey(j.Inbox) || strings.Contains(j.Inbox, ".."):
			return fmt.Errorf("autoresponse job has an invalid inbox key")
		case j.SessionID != "" || j.Reason != "":
			return fmt.Errorf("autoresponse job names a session or reason")
		case j.Attempt < 0:
			return fmt.Errorf("job has a negative attempt")
		}
		return nil
	}
	if j.Inbox != "" {
		return fmt.Errorf("job names an inbox message but is no autoresponse")
	}
	if !oracle.ValidSessionID(j.SessionID) {
		return fmt.Errorf("job has an invalid session_id")
	}
	switch {
	case j.Reason != "" && j.Kind != "":
		return fmt.Errorf("job has both reason and kind")
	case j.Reason != "" && j.Reason != ReasonPaid && j.Reason != ReasonRegenerate && j.Reason != ReasonOperator && j.Reason != ReasonQuarantineReview:
		return fmt.Errorf("job has unknown reason %q", j.Reason)
	case j.Kind != "" && !slices.Contains(oracle.MailKinds(), j.Kind):
		return fmt.Errorf("job has unknown kind %q", j.Kind)
	case j.Reason == "" && j.Kind == "":
		return fmt.Errorf("job has neither reason nor kind")
	case j.Attempt < 0:
		return fmt.Errorf("job has a negative attempt")
	}
	return nil
}

// Parse decodes and validates a message body strictly: unknown fields or
// trailing data make it garbage, for the dead-letter queue.
func Parse(body string) (Job, error) {
	dec := json.NewDecoder(bytes.NewReader([]byte(body)))
	dec.DisallowUnknownFields()
	var j Job
	if err := dec.Decode(&j); err != nil {
		return Job{}, fmt.Errorf("decode job: %w", err)
	}
	if dec.More() {
		return Job{}, fmt.Errorf("decode job: trailing data")
	}
	if err := j.Validate(); err != nil {
		return Job{}, err
	}
	return j, nil
}

// maxDelay is SQS's cap on a message delay; longer waits are done by
// re-sending with the remaining delay.
const maxDelay = 15 * time.Minute

// Client is the SQS client Senders send through: sqs.Client with only
// SendMessage, so that a function links that one operation and not all of
// SQS, which it would where reflection can call methods (see package
// awsenv).
type Client sqs.Client

// NewClient returns an SQS client for cfg.
func NewClient(cfg aws.Config, optFns ...func(*sqs.Options)) *Client {
	return (*Client)(sqs.NewFromConfig(cfg, optFns...))
}

// SendMessage is sqs.Client.SendMessage.
func (c *Client) SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	return (*sqs.Client)(c).SendMessage(ctx, in, optFns...)
}

// Sender sends jobs to one queue.
type Sender struct {
	sqs *Client
	url string
	now func() time.Time
}

// NewSender sends to the queue at url through c.
func NewSender(c *Client, url string, now func() time.Time) *Sender {
	if now == nil {
		now = time.Now
	}
	return &Sender{sqs: c, url: url, now: now}
}

// delaySeconds is SQS's delay for a wait of d: whole seconds rounded up
// (a message delivered before its time only hops again, so a delay rounded
// down to 0 would spin), at most 15 minutes.
func delaySeconds(d time.Duration) int32 {
	if d <= 0 {
		return 0
	}
	return int32((min(d, maxDelay) + time.Second - 1) / time.Second)
}

// Send validates and sends j, delayed until j.NotBefore (at most 15 minutes).
func (s *Sender) Send(ctx context.Context, j Job) error {
	if err := j.Validate(); err != nil {
		return err
	}
	b, err := json.Marshal(j)
	if err != nil {
		return fmt.Errorf("encode job: %w", err)
	}
	name := s.url[strings.LastIndexByte(s.url, '/')+1:]
	if j.SessionID != "" {
		ctx = tracing.WithOrder(ctx, j.SessionID)
	}
	// The send is a span, and its context travels in the message's
	// attributes: the consumer's span is its child, one trace per order.
	ctx, span := tracing.Tracer().Start(ctx, "send "+name, trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(attribute.String("messaging.system", "aws_sqs"), attribute.String("messaging.destination.name", name)))
	defer span.End()
	in := &sqs.SendMessageInput{QueueUrl: aws.String(s.url), MessageBody: aws.String(string(b))}
	for k, v := range tracing.ToMessage(ctx) {
		if in.MessageAttributes == nil {
			in.MessageAttributes = map[string]types.MessageAttributeValue{}
		}
		in.MessageAttributes[k] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
	}
	if j.NotBefore != nil {
		in.DelaySeconds = delaySeconds(j.NotBefore.Sub(s.now()))
	}
	if _, err := s.sqs.SendMessage(ctx, in); err != nil {
		span.SetStatus(codes.Error, err.Error())
		return fmt.Errorf("send job for %s: %w", j.subject(), err)
	}
	return nil
}

// subject names what the job is for in errors and logs.
func (j Job) subject() string {
	if j.Kind == oracle.MailAutoresponse {
		return "inbox message " + strings.TrimPrefix(j.Inbox, "inbound/")
	}
	if oracle.ChatMail(j.Kind) {
		return string(j.Kind) + " " + j.Nonce
	}
	return oracle.ShortID(j.SessionID)
}
