package mail

import (
	"errors"
	"fmt"
	"net/http"
	"regexp"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
)

// Kind says what a failed send means for the retry schedule.
type Kind int

// Kinds of send failure.
const (
	// Temporary: SES did not answer (network, timeout, cancelled context)
	// or failed on its side (5xx). Retry on the schedule.
	Temporary Kind = iota + 1
	// Throttled: SES limits the sending rate or the daily quota is spent
	// (429, LimitExceeded). Retry on the schedule, no sooner than a minute.
	Throttled
	// Rejected: SES or this package refused this message (MessageRejected,
	// an unverified sender, a malformed address or message). The same
	// message will be refused again: dead-letter it and alert.
	Rejected
	// Blocked: the account cannot send (suspended, sending paused, the
	// MAIL FROM domain unverified, credentials refused). No message will go
	// until an operator acts, and then every one should: alert, and keep
	// the message (retries, then the dead-letter queue) rather than close it.
	Blocked
)

var kindNames = map[Kind]string{Temporary: "temporary", Throttled: "throttled", Rejected: "rejected", Blocked: "blocked"}

func (k Kind) String() string {
	if s, ok := kindNames[k]; ok {
		return s
	}
	return "unknown"
}

// Retryable reports whether a later attempt of the same message can succeed.
func (k Kind) Retryable() bool { return k == Temporary || k == Throttled }

// Error is a failed send. Its text never holds an address or the text of
// SES's answer, which can quote the recipient (SES in its sandbox lists the
// addresses that failed verification): only SES's error code, the HTTP
// status and the request id, which AWS support can trace.
type Error struct {
	Kind      Kind
	Code      string // SES's error code, e.g. "MessageRejected"; empty when SES did not answer
	Status    int    // the HTTP status of SES's answer; 0 when there was none
	RequestID string
	reason    string // why this package refused the message, or the transport failure with addresses removed
	cause     error  // the transport failure, for errors.Is (context deadlines); never an SES answer
}

func (e *Error) Error() string {
	if e.Code != "" {
		return fmt.Sprintf("send email: %s: SES answered %d %s (request %s)", e.Kind, e.Status, e.Code, e.RequestID)
	}
	return fmt.Sprintf("send email: %s: %s", e.Kind, e.reason)
}

// Unwrap gives the transport failure, so that errors.Is finds a context
// deadline or cancellation. SES's answers are not kept.
func (e *Error) Unwrap() error { return e.cause }

// Retryable reports whether err is a send failure that a later attempt of
// the same message can overcome.
func Retryable(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Kind.Retryable()
}

// KindOf returns the kind of a send failure, or 0 when err is none.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return 0
}

func refused(reason string) *Error { return &Error{Kind: Rejected, reason: reason} }

// codeKinds classifies SES v2's SendEmail errors
// (https://docs.aws.amazon.com/ses/latest/APIReference-V2/API_SendEmail.html)
// and the AWS-wide codes that say more than their status.
var codeKinds = map[string]Kind{
	"TooManyRequestsException":           Throttled,
	"LimitExceededException":             Throttled, // the sending quota or rate
	"ThrottlingException":                Throttled,
	"MessageRejected":                    Rejected,
	"BadRequestException":                Rejected,
	"NotFoundException":                  Rejected,
	"AccountSuspendedException":          Blocked,
	"SendingPausedException":             Blocked,
	"MailFromDomainNotVerifiedException": Blocked,
	// Expired or skewed signatures pass once the SDK signs anew.
	"ExpiredTokenException": Temporary,
	"RequestExpired":        Temporary,
}

// addressPattern finds email addresses, which a transport failure should
// never hold but is scrubbed of all the same.
var addressPattern = regexp.MustCompile(`[^\s<>"'(),;:]+@[^\s<>"'(),;:]+`)

// classify turns an SDK error into an *Error.
func classify(err error) *Error {
	var api smithy.APIError
	if !errors.As(err, &api) {
		return &Error{Kind: Temporary, reason: addressPattern.ReplaceAllString(err.Error(), "<address>"), cause: err}
	}
	e := &Error{Code: api.ErrorCode()}
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		e.Status, e.RequestID = re.HTTPStatusCode(), re.ServiceRequestID()
	}
	if k, ok := codeKinds[e.Code]; ok {
		e.Kind = k
		return e
	}
	switch {
	case e.Status == http.StatusTooManyRequests:
		e.Kind = Throttled
	case e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden:
		e.Kind = Blocked
	case e.Status >= 400 && e.Status < 500:
		e.Kind = Rejected
	default:
		// 5xx, or an answer without a status: nothing says it will fail again.
		e.Kind = Temporary
	}
	return e
}
