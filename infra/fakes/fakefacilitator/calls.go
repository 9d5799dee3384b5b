package fakefacilitator

import (
	"net/http"
	"time"

	"42sisters.ai/oracle/shared/x402"
)

// Call is one API request the fake received.
type Call struct {
	Time time.Time `json:"time"`
	// Path is /supported, /verify or /settle.
	Path string `json:"path"`
	// Network, From, Nonce and Value are the payment's, when the body
	// could be read.
	Network x402.Network `json:"network,omitempty"`
	From    string       `json:"from,omitempty"`
	Nonce   string       `json:"nonce,omitempty"`
	Value   string       `json:"value,omitempty"`
	// Outcome is "ok" for /supported, "valid" for a payment verified,
	// "settled" for one settled (the money moved, whatever the answer's
	// Status), "down", or the reason of a refusal.
	Outcome string `json:"outcome"`
	// Transaction is the hash of the settlement's transaction, also of
	// one that reverted.
	Transaction string `json:"transaction,omitempty"`
	// Status is the HTTP status answered: 502 when the answer was lost,
	// 0 while the request is pending or when the client gave up first.
	Status int `json:"status"`
}

// record adds a call for a request to path and returns it.
func (s *Server) record(path string) *Call {
	c := &Call{Time: s.now(), Path: path}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, c)
	return c
}

// describe records the payment req carries in c.
func (s *Server) describe(c *Call, req *request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if req.PaymentRequirements != nil {
		c.Network = req.PaymentRequirements.Network
	}
	if req.PaymentPayload != nil {
		a := req.PaymentPayload.Payload.Authorization
		c.From, c.Nonce, c.Value = a.From, a.Nonce, a.Value
	}
}

// finish records a call's outcome.
func (s *Server) finish(c *Call, outcome, tx string, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c.Outcome, c.Transaction, c.Status = outcome, tx, status
}

// Calls returns the API requests received so far, oldest first.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Call, len(s.calls))
	for i, c := range s.calls {
		out[i] = *c
	}
	return out
}

// ClearCalls forgets the requests received.
func (s *Server) ClearCalls() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = nil
}

// handleCalls serves GET /_calls: the requests received, oldest first.
func (s *Server) handleCalls(w http.ResponseWriter, _ *http.Request) {
	s.writeJSON(w, http.StatusOK, s.Calls())
}

// handleClearCalls serves DELETE /_calls.
func (s *Server) handleClearCalls(w http.ResponseWriter, _ *http.Request) {
	s.ClearCalls()
	w.WriteHeader(http.StatusNoContent)
}
