package oracle

import (
	"errors"
	"fmt"
)

// Code classifies an error for the one place (shared/httpapi) that turns
// errors into HTTP statuses and decides which messages a client may see.
type Code string

// Error codes. Only the message of a non-internal code is shown to clients.
const (
	CodeInvalid         Code = "invalid"          // 400: bad input
	CodePaymentRequired Code = "payment_required" // 402: session not paid
	CodeForbidden       Code = "forbidden"        // 403: a signed request whose signature fails
	CodeNotFound        Code = "not_found"        // 404: unknown session
	CodeConflict        Code = "conflict"         // 409: the same work is in flight
	CodeTooLarge        Code = "too_large"        // 413: body or query too large
	CodeUnavailable     Code = "unavailable"      // 503: misconfigured or a dependency is down
	CodeInternal        Code = "internal"         // 500: anything else; message hidden
)

// Error is a domain error with a code and a message safe to show a customer.
type Error struct {
	Code    Code
	Message string
	Err     error // the cause, for logs only
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf builds an *Error with a formatted, client-safe message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Wrap attaches a code and a client-safe message to a cause.
func Wrap(code Code, err error, message string) *Error {
	return &Error{Code: code, Message: message, Err: err}
}

// ErrorCode returns the code of the first *Error in err's chain, or
// CodeInternal when there is none.
func ErrorCode(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}

// ErrorMessage returns the client-safe message of err, or a generic text for
// internal errors so that no internal detail reaches a customer.
func ErrorMessage(err error) string {
	var e *Error
	if errors.As(err, &e) && e.Code != CodeInternal {
		return e.Message
	}
	return "internal error"
}
