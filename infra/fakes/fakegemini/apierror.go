package fakegemini

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"42sisters.ai/oracle/shared/oracle"
)

// statusNames are the google.rpc.Code names Google sends with each HTTP
// status the fake can answer.
var statusNames = map[int]string{
	http.StatusBadRequest:          "INVALID_ARGUMENT",
	http.StatusUnauthorized:        "UNAUTHENTICATED",
	http.StatusForbidden:           "PERMISSION_DENIED",
	http.StatusNotFound:            "NOT_FOUND",
	http.StatusTooManyRequests:     "RESOURCE_EXHAUSTED",
	http.StatusInternalServerError: "INTERNAL",
	http.StatusServiceUnavailable:  "UNAVAILABLE",
	http.StatusGatewayTimeout:      "DEADLINE_EXCEEDED",
}

// scenarioMessages are the messages Google sends with the errors a scenario
// can force.
var scenarioMessages = map[int]string{
	http.StatusBadRequest:          "Request contains an invalid argument.",
	http.StatusUnauthorized:        "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.",
	http.StatusForbidden:           "The caller does not have permission",
	http.StatusNotFound:            "Requested entity was not found.",
	http.StatusTooManyRequests:     "You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.",
	http.StatusInternalServerError: "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting",
	http.StatusServiceUnavailable:  "The model is overloaded. Please try again later.",
	http.StatusGatewayTimeout:      "Deadline expired before operation could complete.",
}

// apiError is a Google API error (a google.rpc.Status) and the HTTP status
// it is sent with.
type apiError struct {
	Code    int              `json:"code"`
	Message string           `json:"message"`
	Status  string           `json:"status"`
	Details []map[string]any `json:"details,omitempty"`
	// retryAfter, in seconds, is also sent as a Retry-After header when > 0.
	retryAfter int
}

func (e *apiError) Error() string {
	return fmt.Sprintf("gemini %d %s: %s", e.Code, e.Status, e.Message)
}

// newAPIError builds an error for an HTTP status the fake knows.
func newAPIError(code int, format string, args ...any) *apiError {
	return &apiError{Code: code, Status: statusNames[code], Message: fmt.Sprintf(format, args...)}
}

// invalidArgument is Google's 400 for a request it cannot accept.
func invalidArgument(format string, args ...any) *apiError {
	return newAPIError(http.StatusBadRequest, format, args...)
}

// scenarioError is the error a scenario forces for status, shaped as Google
// shapes it: a 429 carries quota, help and retry details.
func scenarioError(status, retryAfter int) *apiError {
	e := newAPIError(status, "%s", scenarioMessages[status])
	if status != http.StatusTooManyRequests {
		return e
	}
	e.Details = []map[string]any{
		{
			"@type": "type.googleapis.com/google.rpc.QuotaFailure",
			"violations": []map[string]any{{
				"quotaMetric": "generativelanguage.googleapis.com/generate_content_paid_tier_input_token_count",
				"quotaId":     "GenerateContentPaidTierInputTokensPerModelPerMinute",
				"quotaValue":  "1000000",
			}},
		},
		{
			"@type": "type.googleapis.com/google.rpc.Help",
			"links": []map[string]any{{
				"description": "Learn more about Gemini API quotas",
				"url":         "https://ai.google.dev/gemini-api/docs/rate-limits",
			}},
		},
	}
	if retryAfter > 0 {
		e.retryAfter = retryAfter
		e.Details = append(e.Details, map[string]any{
			"@type":      "type.googleapis.com/google.rpc.RetryInfo",
			"retryDelay": strconv.Itoa(retryAfter) + "s",
		})
	}
	return e
}

// invalidKey is what Google answers for an API key it does not know: a 400,
// not a 401, with the reason API_KEY_INVALID.
func invalidKey() *apiError {
	const msg = "API key not valid. Please pass a valid API key."
	e := invalidArgument(msg)
	e.Details = []map[string]any{
		{
			"@type":    "type.googleapis.com/google.rpc.ErrorInfo",
			"reason":   "API_KEY_INVALID",
			"domain":   "googleapis.com",
			"metadata": map[string]any{"service": "generativelanguage.googleapis.com"},
		},
		{"@type": "type.googleapis.com/google.rpc.LocalizedMessage", "locale": "en-US", "message": msg},
	}
	return e
}

// missingKey is Google's 403 for a request without any API key.
func missingKey() *apiError {
	return newAPIError(http.StatusForbidden,
		"Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.")
}

func notFound(r *http.Request) *apiError {
	return newAPIError(http.StatusNotFound, "Method not found: %s %s.", r.Method, oracle.Clip(r.URL.Path, 100))
}

// internalError is the 500 sent for a failure inside the fake itself.
func internalError() *apiError {
	return newAPIError(http.StatusInternalServerError, "An internal error occurred in the fake Gemini.")
}

// body is the error's JSON response body: {"error": {...}}.
func (e *apiError) body() []byte {
	b, err := json.Marshal(struct {
		Error *apiError `json:"error"`
	}{e})
	if err != nil {
		// Details hold only strings and maps of strings, so this cannot
		// happen; keep the response well-formed regardless.
		return []byte(`{"error":{"code":500,"message":"error encoding failed","status":"INTERNAL"}}`)
	}
	return b
}

func writeAPIError(w http.ResponseWriter, e *apiError) {
	if e.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.retryAfter))
	}
	writeJSONBody(w, e.Code, e.body())
}

func writeJSONBody(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(status)
	// A write error means the client went away; there is no one to tell.
	_, _ = w.Write(body)
}
