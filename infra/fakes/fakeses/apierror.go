package fakeses

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
)

// messages are the texts sent with the error codes SES v2's SendEmail
// answers with; none quotes an address, though SES's own MessageRejected
// can (in the sandbox it lists the unverified recipients).
var messages = map[string]string{
	"ServiceUnavailable":                 "Service Unavailable",
	"InternalFailure":                    "The request processing has failed because of an unknown error, exception or failure.",
	"TooManyRequestsException":           "Too many requests.",
	"LimitExceededException":             "Maximum sending rate exceeded.",
	"ThrottlingException":                "Rate exceeded.",
	"MessageRejected":                    "Message rejected.",
	"BadRequestException":                "The request is invalid.",
	"NotFoundException":                  "The resource you attempted to access doesn't exist.",
	"AccountSuspendedException":          "Sending has been permanently disabled for this account.",
	"SendingPausedException":             "Sending is paused for this account.",
	"MailFromDomainNotVerifiedException": "The MAIL FROM domain is not verified.",
}

// message is the text an injected failure with code is sent with.
func message(code string) string {
	if m, ok := messages[code]; ok {
		return m
	}
	return "The fake SES front failed the request with " + code + "."
}

// requestID returns a fresh request id for an answer the front makes
// itself, shaped as AWS's (a UUID) and counted, so runs are repeatable.
func (s *Server) requestID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	return fmt.Sprintf("fa4e5e50-0000-4000-8000-%012x", s.seq)
}

// writeError answers as AWS's REST-JSON protocol answers an error: the
// status, the code in X-Amzn-Errortype (from which the SDK takes the
// smithy.APIError's code), the request id in X-Amzn-Requestid, and a JSON
// body holding the message. retryAfter, in seconds, is sent as Retry-After
// when positive. An empty code or request id is left out.
func writeError(w http.ResponseWriter, status int, code, requestID string, retryAfter int, msg string) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if code != "" {
		h.Set("X-Amzn-Errortype", code)
	}
	if requestID != "" {
		h.Set("X-Amzn-Requestid", requestID)
	}
	if retryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(retryAfter))
	}
	b, err := json.Marshal(struct {
		Message string `json:"message"`
	}{msg})
	if err != nil {
		// A struct of one string always marshals; keep the answer
		// well-formed regardless.
		b = []byte(`{"message":"error"}`)
	}
	w.WriteHeader(status)
	// A write error means the client went away; there is no one to tell.
	_, _ = w.Write(b)
}
