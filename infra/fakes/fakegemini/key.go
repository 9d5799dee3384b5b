package fakegemini

import (
	"net/http"

	"42sisters.ai/oracle/infra/fakes/fakecontrol"
)

// keyControl is the body of POST /_key.
type keyControl struct {
	// Accepted is the one API key the fake accepts from now on; empty
	// accepts any key but InvalidKey again.
	Accepted string `json:"accepted"`
}

// AcceptOnly makes key the one API key the fake accepts, on both API
// endpoints: any other is refused as Google refuses an unknown key, as
// InvalidKey is. An empty key accepts any key but InvalidKey again. It
// stands in for a key revoked at Google and its replacement, the operator's
// rotation.
func (s *Server) AcceptOnly(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.accepted = key
}

// keyRefused reports whether the fake refuses key, a key that was sent.
func (s *Server) keyRefused(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return key == InvalidKey || (s.accepted != "" && key != s.accepted)
}

// handleKey serves POST /_key: {"accepted":"…"}, see AcceptOnly.
func (s *Server) handleKey(w http.ResponseWriter, r *http.Request) {
	c, err := fakecontrol.Decode[keyControl](http.MaxBytesReader(w, r.Body, 4<<10))
	if err != nil {
		writeAPIError(w, invalidArgument("Invalid key control: %v", err))
		return
	}
	s.AcceptOnly(c.Accepted)
	s.log.Info("fakegemini: accepted key set", "any", c.Accepted == "")
	w.WriteHeader(http.StatusNoContent)
}
