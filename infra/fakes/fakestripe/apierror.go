package fakestripe

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// Stripe error types and codes the fake answers with.
const (
	typeInvalidRequest = "invalid_request_error"
	typeIdempotency    = "idempotency_error"
	typeAPI            = "api_error"

	codeResourceMissing       = "resource_missing"
	codeParameterMissing      = "parameter_missing"
	codeParameterUnknown      = "parameter_unknown"
	codeParameterInvalidInt   = "parameter_invalid_integer"
	codeURLInvalid            = "url_invalid"
	codeEmailInvalid          = "email_invalid"
	codeAmountTooLarge        = "amount_too_large"
	codeChargeAlreadyRefunded = "charge_already_refunded"
	codeChargeNotRefundable   = "charge_not_refundable"
	codeChargeDisputed        = "charge_disputed"
)

// apiError is a Stripe error object with the HTTP status it is sent with.
type apiError struct {
	status  int
	Type    string `json:"type"`
	Code    string `json:"code,omitempty"`
	DocURL  string `json:"doc_url,omitempty"`
	Message string `json:"message"`
	Param   string `json:"param,omitempty"`
}

func (e *apiError) Error() string {
	return fmt.Sprintf("stripe %d %s: %s", e.status, e.Type, e.Message)
}

// newAPIError builds an invalid_request_error; code and param may be empty.
func newAPIError(status int, code, param, format string, args ...any) *apiError {
	e := &apiError{
		status:  status,
		Type:    typeInvalidRequest,
		Code:    code,
		Message: fmt.Sprintf(format, args...),
		Param:   param,
	}
	if code != "" {
		e.DocURL = "https://stripe.com/docs/error-codes/" + strings.ReplaceAll(code, "_", "-")
	}
	return e
}

// invalidParam is a 400 about one parameter.
func invalidParam(code, param, format string, args ...any) *apiError {
	return newAPIError(http.StatusBadRequest, code, param, format, args...)
}

// missingParam is Stripe's 400 for an absent required parameter.
func missingParam(param string) *apiError {
	return invalidParam(codeParameterMissing, param, "Missing required param: %s.", param)
}

// noSuch is Stripe's resource_missing error for an unknown object.
func noSuch(status int, object, id, param string) *apiError {
	return newAPIError(status, codeResourceMissing, param, "No such %s: '%s'", object, id)
}

func routeNotFound(r *http.Request) *apiError {
	return newAPIError(http.StatusNotFound, "", "",
		"Unrecognized request URL (%s: %s). Please see https://stripe.com/docs or we can help at https://support.stripe.com/.",
		r.Method, r.URL.Path)
}

// internalError is the 500 sent for a failure inside the fake itself.
func internalError() *apiError {
	return &apiError{status: http.StatusInternalServerError, Type: typeAPI, Message: "An unknown error occurred in the fake Stripe."}
}

// body is the error's JSON response body.
func (e *apiError) body() []byte {
	b, err := json.Marshal(struct {
		Error *apiError `json:"error"`
	}{e})
	if err != nil {
		// Only strings are marshalled, so this cannot happen; keep the
		// response well-formed regardless.
		return []byte(`{"error":{"type":"api_error","message":"error encoding failed"}}`)
	}
	return b
}

func writeAPIError(w http.ResponseWriter, e *apiError) {
	writeJSONBody(w, e.status, e.body())
}

func writeJSONBody(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	// A write error means the client went away; there is no one to tell.
	_, _ = w.Write(body)
}

// writeJSON marshals v and writes it with status.
func (s *Server) writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		s.log.Error("fakestripe: encode response", "err", fmt.Errorf("marshal %T: %w", v, err))
		writeAPIError(w, internalError())
		return
	}
	writeJSONBody(w, status, b)
}
