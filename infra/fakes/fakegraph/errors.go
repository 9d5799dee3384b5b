package fakegraph

import (
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"
)

// graphError is an error answer of Graph's: {"error":{"code","message",
// "innerError"}} with the request's ids in headers.
type graphError struct {
	status     int
	code       string
	message    string
	retryAfter string // the Retry-After header; none when empty
}

// sendDefaults are Graph's code and message for each status a sendMail
// answer can be told to have.
var sendDefaults = map[int]struct{ code, message string }{
	http.StatusBadRequest:            {"BadRequest", "The request is malformed or incorrect."},
	http.StatusUnauthorized:          {"InvalidAuthenticationToken", "Access token has expired or is not yet valid."},
	http.StatusForbidden:             {"ErrorAccessDenied", "Access is denied. Check credentials and try again."},
	http.StatusNotFound:              {"ErrorInvalidUser", "The requested user is invalid."},
	http.StatusRequestTimeout:        {"RequestTimeout", "The request timed out."},
	http.StatusRequestEntityTooLarge: {"ErrorMessageSizeExceeded", "The message exceeds the maximum supported size."},
	http.StatusTooManyRequests:       {"ApplicationThrottled", "Application is over its MailboxConcurrency limit."},
	http.StatusInternalServerError:   {"ErrorInternalServerError", "An internal server error occurred. The operation failed."},
	http.StatusBadGateway:            {"UnknownError", "The service could not be reached."},
	http.StatusServiceUnavailable:    {"ServiceUnavailable", "The service is temporarily unavailable. Please retry later."},
	http.StatusGatewayTimeout:        {"GatewayTimeout", "The gateway did not receive a timely response."},
}

// writeGraphError writes e as Graph does, under requestID.
func writeGraphError(w http.ResponseWriter, requestID string, e graphError) {
	w.Header().Set("request-id", requestID)
	if e.retryAfter != "" {
		w.Header().Set("Retry-After", e.retryAfter)
	}
	type inner struct {
		Date      string `json:"date"`
		RequestID string `json:"request-id"`
	}
	type body struct {
		Code       string `json:"code"`
		Message    string `json:"message"`
		InnerError inner  `json:"innerError"`
	}
	writeJSON(w, e.status, struct {
		Error body `json:"error"`
	}{body{e.code, e.message, inner{time.Now().UTC().Format("2006-01-02T15:04:05"), requestID}}})
}

// aadError is an error answer of the identity platform's token endpoint
// (RFC 6749 section 5.2 with Entra ID's extra fields).
type aadError struct {
	status      int
	code        string // RFC 6749's error, e.g. invalid_client
	aadsts      int    // Entra ID's own error number
	description string // without its "AADSTSn: " prefix
	retryAfter  string
}

// tokenDefaults are the identity platform's answers for each status a
// token answer can be told to have, and the code's usual description.
var tokenDefaults = map[int]string{
	http.StatusBadRequest:          "invalid_request",
	http.StatusUnauthorized:        "invalid_client",
	http.StatusTooManyRequests:     "temporarily_unavailable",
	http.StatusInternalServerError: "server_error",
	http.StatusBadGateway:          "temporarily_unavailable",
	http.StatusServiceUnavailable:  "temporarily_unavailable",
	http.StatusGatewayTimeout:      "temporarily_unavailable",
}

var tokenDescriptions = map[string]struct {
	aadsts      int
	description string
}{
	"invalid_request":         {900144, "The request body must contain the following parameter: 'grant_type'."},
	"invalid_client":          {7000215, "Invalid client secret provided. Ensure the secret being sent in the request is the client secret value, not the client secret ID."},
	"unauthorized_client":     {700016, "Application was not found in the directory. This can happen if the application has not been installed by the administrator of the tenant."},
	"invalid_scope":           {1002012, "The provided value for scope is not valid. Client credential flows must have a scope value with /.default suffixed to the resource identifier."},
	"unsupported_grant_type":  {70003, "The app requested an unsupported grant type."},
	"temporarily_unavailable": {50196, "The server temporarily blocked this request because it is receiving too many requests. Please retry later."},
	"server_error":            {90033, "A transient error has occurred. Please try again."},
}

// forcedAADError is the answer a queued TokenAnswer asks for.
func forcedAADError(a TokenAnswer) aadError {
	code := a.Error
	if code == "" {
		code = tokenDefaults[a.Status]
	}
	d, ok := tokenDescriptions[code]
	if !ok {
		d.aadsts, d.description = 90000, "The fake Graph was told to refuse this request."
	}
	return aadError{status: a.Status, code: code, aadsts: d.aadsts, description: d.description, retryAfter: a.retryAfterHeader()}
}

// writeAADError writes e as the identity platform does, under requestID.
func writeAADError(w http.ResponseWriter, requestID string, e aadError) {
	w.Header().Set("x-ms-request-id", requestID)
	if e.retryAfter != "" {
		w.Header().Set("Retry-After", e.retryAfter)
	}
	w.Header().Set("Cache-Control", "no-store, no-cache")
	writeJSON(w, e.status, struct {
		Error         string `json:"error"`
		Description   string `json:"error_description"`
		Codes         []int  `json:"error_codes"`
		Timestamp     string `json:"timestamp"`
		TraceID       string `json:"trace_id"`
		CorrelationID string `json:"correlation_id"`
	}{e.code, "AADSTS" + strconv.Itoa(e.aadsts) + ": " + e.description, []int{e.aadsts}, time.Now().UTC().Format("2006-01-02 15:04:05Z"), requestID, uuid.NewString()})
}
