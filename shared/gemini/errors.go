package gemini

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"google.golang.org/genai"

	"42sisters.ai/oracle/shared/geminikey"
)

// Kind says what went wrong with a call, so that the caller can choose
// between retrying, waiting, alerting and giving up.
type Kind int

// Kinds of failure.
const (
	// RateLimited: Google answered 429. Error.RetryAfter holds the delay
	// Google asked for, when it gave one.
	RateLimited Kind = iota + 1
	// Timeout: no answer within the client's timeout or the caller's
	// deadline, or Google gave up itself (504).
	Timeout
	// ServerError: Google answered 5xx, or with a body that could not be read.
	ServerError
	// ConnectionError: the request or the answer was lost on the network.
	ConnectionError
	// BadRequest: Google refused the request (400, 404, other 4xx), or it
	// was not sent because it was empty.
	BadRequest
	// AuthFailure: Google refused the API key (401, 403, or 400 with an
	// API_KEY_* reason, which is how it answers an unknown key).
	AuthFailure
	// ContentFailure: Google answered, but with no usable text: the prompt
	// or the candidate was blocked, or the candidate is empty.
	ContentFailure
	// Canceled: the caller's context was canceled before an answer; not a
	// fault of Gemini.
	Canceled
)

var kindNames = map[Kind]string{
	RateLimited:     "rate_limited",
	Timeout:         "timeout",
	ServerError:     "server_error",
	ConnectionError: "connection_error",
	BadRequest:      "bad_request",
	AuthFailure:     "auth_failure",
	ContentFailure:  "content_failure",
	Canceled:        "canceled",
}

// String names the kind with a snake_case token, such as "rate_limited",
// fit for logs, metrics and audit classes; "unknown" for any other value.
func (k Kind) String() string {
	if s, ok := kindNames[k]; ok {
		return s
	}
	return "unknown"
}

// Error is a failed call. Its message is built from the fields below and
// never includes the cause's text, which can quote the request (the prompt)
// or the answer; the cause stays reachable through errors.As and errors.Is
// (a genai.APIError, a context error, a network error).
type Error struct {
	Kind       Kind
	HTTPStatus int           // the HTTP status Google answered, 0 when it did not answer
	Status     string        // Google's status, such as RESOURCE_EXHAUSTED
	RetryAfter time.Duration // RateLimited only: the delay Google asked for, 0 when none
	Err        error         // the cause, when there is one
	detail     string        // what happened, in words safe to log
	key        string        // the API key the call carried, for RenewKey; never shown
}

// Error describes the failure by its kind, Google's status, a safe detail
// and the retry delay, for example
// "gemini: rate_limited (HTTP 429 RESOURCE_EXHAUSTED); retry after 7s".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("gemini: ")
	b.WriteString(e.Kind.String())
	if e.HTTPStatus != 0 {
		fmt.Fprintf(&b, " (HTTP %d %s)", e.HTTPStatus, e.Status)
	}
	if e.detail != "" {
		b.WriteString(": ")
		b.WriteString(e.detail)
	}
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, "; retry after %s", e.RetryAfter)
	}
	return b.String()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// ErrRefused is wrapped in the ContentFailure of an answer that refused the
// request on content grounds: the prompt blocked (no candidate, with a
// block reason) or the candidate stopped for safety, prohibited content, a
// block list or personal data. Asked the same again, the model refuses the
// same: see Refusals.
var ErrRefused = errors.New("gemini: the model refused the request")

// KindOf returns the Kind of the first *Error in err's chain, or 0 when
// there is none.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return 0
}

// classify turns a failed GenerateContent call into an *Error. ctx is the
// caller's context and callCtx the one bounded by the client's timeout.
func (c *Client) classify(ctx, callCtx context.Context, err error) *Error {
	e := &Error{Err: err}
	var apiErr genai.APIError
	var netErr net.Error
	switch {
	case errors.As(err, &apiErr):
		fromAPIError(e, apiErr)
	case errors.Is(callCtx.Err(), context.DeadlineExceeded):
		e.Kind, e.detail = Timeout, fmt.Sprintf("no answer within %s", c.timeout)
		if ctx.Err() != nil {
			e.detail = "no answer before the caller's deadline"
		}
	case ctx.Err() != nil:
		e.Kind, e.detail = Canceled, "the caller canceled the call"
	case errors.As(err, &netErr) && netErr.Timeout():
		e.Kind, e.detail = Timeout, "the HTTP client timed out"
	case errors.As(err, &netErr), errors.Is(err, io.ErrUnexpectedEOF):
		e.Kind, e.detail = ConnectionError, connectionDetail(err)
	default:
		e.Kind, e.detail = ServerError, "the answer could not be read"
	}
	return e
}

// fromAPIError fills e from the error Google answered with.
func fromAPIError(e *Error, apiErr genai.APIError) {
	e.HTTPStatus, e.Status = apiErr.Code, apiErr.Status
	switch code := apiErr.Code; {
	case code == http.StatusTooManyRequests:
		e.Kind, e.RetryAfter = RateLimited, retryDelay(apiErr.Details)
	case code == http.StatusUnauthorized || code == http.StatusForbidden || geminikey.KeyRefused(apiErr.Details):
		e.Kind = AuthFailure
	case code == http.StatusGatewayTimeout:
		e.Kind = Timeout
	case code >= 500:
		e.Kind = ServerError
	case code >= 400:
		e.Kind = BadRequest
	default:
		e.Kind, e.detail = ServerError, "unexpected answer"
	}
}

// retryInfoType is the google.rpc detail that says when to retry.
const retryInfoType = "type.googleapis.com/google.rpc.RetryInfo"

// retryDelay is the delay of a google.rpc.RetryInfo detail ("7s", "0.5s"),
// or 0 when there is none.
func retryDelay(details []map[string]any) time.Duration {
	for _, d := range details {
		if d["@type"] != retryInfoType {
			continue
		}
		s, _ := d["retryDelay"].(string)
		if delay, err := time.ParseDuration(s); err == nil && delay > 0 {
			return delay
		}
	}
	return 0
}

// connectionDetail describes a network failure by its operation, such as
// "dial tcp 127.0.0.1:3002: connect: connection refused"; the request's
// body never appears in these.
func connectionDetail(err error) string {
	var opErr *net.OpError
	if errors.As(err, &opErr) {
		return opErr.Error()
	}
	return "the connection failed"
}
