package mail

import (
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
)

// Class says what a failed send means for the mailer's retry schedule. It
// is decided once, here, by the transport that failed; the mailer acts on
// the class alone.
type Class int

// The failure classes.
const (
	// Transient: the transport did not answer (network, timeout), failed
	// on its side (5xx) or limits the rate (429, throttling, a spent daily
	// quota). The mailer tries again at the schedule's next step, or after
	// RetryAfter when the server asked for longer.
	Transient Class = iota + 1
	// Permanent: this message will be refused again (an invalid or
	// unencodable address, a rejected message, a 400). The mailer aborts at
	// once: no retry, a dead-letter record and an EMAIL_FAILED alert.
	Permanent
	// Blocked: the account cannot send at all (SES sending paused or the
	// account suspended, the MAIL FROM domain unverified, credentials or a
	// Graph token refused, 403). No message will go until the operator
	// acts, and then every one should: the mailer parks the job without
	// spending an attempt and raises EMAIL_BLOCKED.
	Blocked
)

var classNames = map[Class]string{Transient: "transient", Permanent: "permanent", Blocked: "blocked"}

func (c Class) String() string {
	if s, ok := classNames[c]; ok {
		return s
	}
	return "unknown"
}

// Error is a failed send. Its text never holds an address or the text of
// the server's answer, which can quote the recipient (SES in its sandbox
// lists the addresses that failed verification): only the transport, the
// server's error code, the HTTP status and the request id, which the
// provider's support can trace.
type Error struct {
	Class     Class
	Transport string // "SES" or "Graph"
	Code      string // the server's error code, e.g. "MessageRejected"; empty when it did not answer
	Status    int    // the HTTP status of the answer; 0 when there was none
	RequestID string
	// RetryAfter is how long the server asked to be left alone (Graph's
	// Retry-After on 429 and 503); 0 when it did not say.
	RetryAfter time.Duration
	reason     string // why the message was refused here, or the transport failure with addresses removed
	cause      error  // the transport failure, for errors.Is (context deadlines); never a server's answer
}

func (e *Error) Error() string {
	transport := e.Transport
	if transport == "" {
		transport = "the transport"
	}
	if e.Status != 0 {
		s := fmt.Sprintf("send email: %s: %s answered %d", e.Class, transport, e.Status)
		if e.Code != "" {
			s += " " + e.Code
		}
		if e.RequestID != "" {
			s += " (request " + e.RequestID + ")"
		}
		if e.RetryAfter > 0 {
			s += fmt.Sprintf(", retry after %s", e.RetryAfter)
		}
		return s
	}
	return fmt.Sprintf("send email: %s: %s", e.Class, e.reason)
}

// Unwrap gives the transport failure, so that errors.Is finds a context
// deadline or cancellation. Servers' answers are not kept.
func (e *Error) Unwrap() error { return e.cause }

// ClassOf returns the class of a send failure, or 0 when err is not one
// (nil, or an error no transport classified).
func ClassOf(err error) Class {
	var e *Error
	if errors.As(err, &e) {
		return e.Class
	}
	return 0
}

// RetryAfter returns how long the server asked the sender to wait, or 0.
func RetryAfter(err error) time.Duration {
	var e *Error
	if errors.As(err, &e) {
		return e.RetryAfter
	}
	return 0
}

func refused(reason string) *Error { return &Error{Class: Permanent, reason: reason} }

// transient is a failure to reach the server: the cause is kept for
// errors.Is, its text scrubbed of addresses.
func transient(transport string, err error) *Error {
	return &Error{Class: Transient, Transport: transport, reason: addressPattern.ReplaceAllString(err.Error(), "<address>"), cause: err}
}

// sesCodes classifies SES v2's SendEmail errors
// (https://docs.aws.amazon.com/ses/latest/APIReference-V2/API_SendEmail.html)
// and the AWS-wide codes that say more than their status.
var sesCodes = map[string]Class{
	"TooManyRequestsException":           Transient,
	"LimitExceededException":             Transient, // the sending quota or rate
	"ThrottlingException":                Transient,
	"MessageRejected":                    Permanent,
	"BadRequestException":                Permanent,
	"NotFoundException":                  Permanent,
	"AccountSuspendedException":          Blocked,
	"SendingPausedException":             Blocked,
	"MailFromDomainNotVerifiedException": Blocked,
	// Expired or skewed signatures pass once the SDK signs anew.
	"ExpiredTokenException": Transient,
	"RequestExpired":        Transient,
}

// addressPattern finds email addresses, which a transport failure should
// never hold but is scrubbed of all the same.
var addressPattern = regexp.MustCompile(`[^\s<>"'(),;:]+@[^\s<>"'(),;:]+`)

// classifySES turns an SES SDK error into an *Error.
func classifySES(err error) *Error {
	var api smithy.APIError
	if !errors.As(err, &api) {
		return transient("SES", err)
	}
	e := &Error{Transport: "SES", Code: api.ErrorCode()}
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		e.Status, e.RequestID = re.HTTPStatusCode(), re.ServiceRequestID()
		e.RetryAfter = retryAfter(re.Response.Header.Get("Retry-After"), time.Now())
	}
	if c, ok := sesCodes[e.Code]; ok {
		e.Class = c
		return e
	}
	e.Class = classOfStatus(e.Status)
	return e
}

// classOfStatus is the class an HTTP status says on its own: 408, 429 and
// 5xx pass, 401 and 403 block the account, another 4xx refuses the message.
// An answer without a status says nothing will fail again.
func classOfStatus(status int) Class {
	switch {
	case status == http.StatusRequestTimeout || status == http.StatusTooManyRequests:
		return Transient
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return Blocked
	case status >= 400 && status < 500:
		return Permanent
	}
	return Transient
}

// retryAfter reads a Retry-After header, in seconds or as an HTTP date, as
// a wait from now; 0 when absent or unreadable.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil {
		return max(time.Duration(s)*time.Second, 0)
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0)
	}
	return 0
}
