// Package httpapi is the one place where HTTP functions read API Gateway
// requests and turn results and domain errors into responses: the status for
// each error code, and which messages a client may see.
package httpapi

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"42sisters.ai/oracle/shared/oracle"
)

// Request and Response are API Gateway HTTP API (payload 2.0) events.
type (
	Request  = events.APIGatewayV2HTTPRequest
	Response = events.APIGatewayV2HTTPResponse
)

// Header returns a request header by case-insensitive name.
func Header(r Request, name string) string {
	if v, ok := r.Headers[strings.ToLower(name)]; ok {
		return v
	}
	for k, v := range r.Headers {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return ""
}

// Body returns the raw request body, decoding API Gateway's base64 form, and
// refuses bodies larger than limit bytes with a CodeTooLarge error.
func Body(r Request, limit int) ([]byte, error) {
	raw := r.Body
	// Compare before decoding: base64 is 4/3 the size of what it carries.
	if r.IsBase64Encoded && base64.StdEncoding.DecodedLen(len(raw)) > limit+3 || !r.IsBase64Encoded && len(raw) > limit {
		return nil, oracle.Errorf(oracle.CodeTooLarge, "request body is larger than %d bytes", limit)
	}
	if !r.IsBase64Encoded {
		return []byte(raw), nil
	}
	b, err := base64.StdEncoding.DecodeString(raw)
	if err != nil {
		return nil, oracle.Wrap(oracle.CodeInvalid, err, "request body is not valid base64")
	}
	if len(b) > limit {
		return nil, oracle.Errorf(oracle.CodeTooLarge, "request body is larger than %d bytes", limit)
	}
	return b, nil
}

var statusOf = map[oracle.Code]int{
	oracle.CodeInvalid:         http.StatusBadRequest,
	oracle.CodePaymentRequired: http.StatusPaymentRequired,
	oracle.CodeNotFound:        http.StatusNotFound,
	oracle.CodeConflict:        http.StatusConflict,
	oracle.CodeForbidden:       http.StatusForbidden,
	oracle.CodeTooLarge:        http.StatusRequestEntityTooLarge,
	oracle.CodeUnavailable:     http.StatusServiceUnavailable,
	oracle.CodeInternal:        http.StatusInternalServerError,
}

// Status is the HTTP status for err's code.
func Status(err error) int { return statusOf[oracle.ErrorCode(err)] }

// JSON answers status with v as a JSON body. A value that cannot be
// encoded is answered 500 and logged (through slog's default logger, which
// coldstart makes the function's): what it was and why, never silently.
// An Encoded body is answered as it is.
func JSON(status int, v any) Response {
	b, encoded := v.(Encoded)
	if !encoded {
		raw, err := json.Marshal(v)
		if err != nil {
			slog.Error("response not encoded; answered 500", "status", status, "type", fmt.Sprintf("%T", v), "error", err.Error())
			status, raw = http.StatusInternalServerError, []byte(`{"error":"internal error"}`)
		}
		b = Encoded(raw)
	}
	return Response{
		StatusCode: status,
		Headers: map[string]string{
			"Content-Type":           "application/json; charset=utf-8",
			"Cache-Control":          "no-store",
			"X-Content-Type-Options": "nosniff",
		},
		Body: string(b),
	}
}

// Encoded is a JSON body encoded once, for an answer given on a hot path
// (the webhook's {"received":true} to every event), which JSON would
// otherwise encode on each call.
type Encoded string

// MustEncode encodes v once, at a package's initialisation: a value that
// cannot be encoded there is a programming error.
func MustEncode(v any) Encoded {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("httpapi: %T cannot be encoded: %v", v, err))
	}
	return Encoded(b)
}

// Error answers with the status for err's code and {"error": message}. The
// message of an internal error is never shown; the cause is logged.
func Error(ctx context.Context, log *slog.Logger, err error) Response {
	status := Status(err)
	level := slog.LevelInfo
	if status >= 500 {
		level = slog.LevelError
	}
	log.Log(ctx, level, "request failed", "status", status, "error", err.Error())
	return JSON(status, map[string]string{"error": oracle.ErrorMessage(err)})
}

// Handler is an HTTP function's handler.
type Handler func(context.Context, Request) (Response, error)

// Recover wraps h so that no panic crosses the handler boundary: a panic is
// logged with its stack and answered 500.
func Recover(log *slog.Logger, h Handler) Handler {
	return func(ctx context.Context, r Request) (resp Response, err error) {
		defer func() {
			if p := recover(); p != nil {
				log.ErrorContext(ctx, "panic in handler", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				resp, err = JSON(http.StatusInternalServerError, map[string]string{"error": "internal error"}), nil
			}
		}()
		return h(ctx, r)
	}
}
