package fakestripe

import (
	"encoding/json"
	"net/http"
)

// handleCalls serves GET /_calls: the API calls received, oldest first.
func (s *Server) handleCalls(w http.ResponseWriter, _ *http.Request) {
	s.writeJSON(w, http.StatusOK, s.Calls())
}

// handleClearCalls serves DELETE /_calls: it forgets the calls received.
func (s *Server) handleClearCalls(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	s.calls = nil
	s.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// handleDeliveries serves GET /_deliveries: the webhook deliveries attempted.
func (s *Server) handleDeliveries(w http.ResponseWriter, _ *http.Request) {
	s.writeJSON(w, http.StatusOK, s.Deliveries())
}

// handleEvents serves GET /_events: the events created, oldest first, as
// Stripe would send them.
func (s *Server) handleEvents(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	out := make([]json.RawMessage, len(s.events))
	for i, ev := range s.events {
		out[i] = ev.body
	}
	s.mu.Unlock()
	s.writeJSON(w, http.StatusOK, out)
}
