package fakestripe

import "net/http"

// AcceptOnly makes key the one secret key the fake accepts: any other is
// answered 401, as Stripe answers a key that was rolled. An empty key
// accepts any test-mode key again. It stands in for the operator's roll
// of the key in the Dashboard.
func (s *Server) AcceptOnly(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.accepted = key
}

// rolled refuses key, a well-formed test-mode key, when AcceptOnly names
// another. The caller holds s.mu.
func (s *Server) rolled(key string) error {
	if s.accepted == "" || key == s.accepted {
		return nil
	}
	return newAPIError(http.StatusUnauthorized, "", "", "Invalid API Key provided: %s", redactKey(key))
}
