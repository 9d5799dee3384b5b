package fakegraph

import (
	"net/http"
	"slices"
	"time"
)

// The kinds of Call.
const (
	KindToken = "token"
	KindSend  = "sendMail"
)

// Call is one token or sendMail request the fake answered. It holds no
// body, address, token or secret.
type Call struct {
	Kind   string    `json:"kind"` // KindToken or KindSend
	Time   time.Time `json:"time"`
	Status int       `json:"status"` // the HTTP status answered
	// Code is the error code answered: the OAuth error of a token request,
	// Graph's code of a sendMail request; empty on success.
	Code string `json:"code,omitempty"`
	// Forced is set when the answer came from Control, not from the
	// request itself.
	Forced     bool   `json:"forced,omitempty"`
	RetryAfter string `json:"retry_after,omitempty"` // the Retry-After header answered
	RequestID  string `json:"request_id"`            // request-id, or x-ms-request-id of a token request
	// ClientRequestID is the client-request-id the client sent.
	ClientRequestID string `json:"client_request_id,omitempty"`
}

func (s *Server) record(c Call) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, c)
}

// Calls returns the requests answered so far, oldest first.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

// CountCalls returns how many requests of kind were answered.
func (s *Server) CountCalls(kind string) int {
	n := 0
	for _, c := range s.Calls() {
		if c.Kind == kind {
			n++
		}
	}
	return n
}

// ClearCalls forgets the requests answered.
func (s *Server) ClearCalls() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = nil
}

// handleCalls serves GET /_calls: the requests answered, oldest first.
func (s *Server) handleCalls(w http.ResponseWriter, _ *http.Request) {
	calls := s.Calls()
	if calls == nil {
		calls = []Call{}
	}
	writeJSON(w, http.StatusOK, calls)
}

// handleClearCalls serves DELETE /_calls.
func (s *Server) handleClearCalls(w http.ResponseWriter, _ *http.Request) {
	s.ClearCalls()
	w.WriteHeader(http.StatusNoContent)
}
