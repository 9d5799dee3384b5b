package fakegraph

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/google/uuid"
)

// Scope is the one scope the fake grants: Graph's, as an application asks
// for it in the client-credentials grant.
const Scope = "https://graph.microsoft.com/.default"

// handleToken serves POST /{tenant}/oauth2/v2.0/token: the
// client-credentials grant, checked as Entra ID checks it, in order: the
// tenant, the grant type, the client id, the secret, the scope.
func (s *Server) handleToken(w http.ResponseWriter, r *http.Request) {
	call := Call{Kind: KindToken, Time: time.Now(), RequestID: uuid.NewString(), ClientRequestID: r.Header.Get("client-request-id")}
	refuse := func(e aadError) {
		writeAADError(w, call.RequestID, e)
		call.Status, call.Code, call.RetryAfter = e.status, e.code, e.retryAfter
		s.record(call)
		s.log.Info("fakegraph: token refused", "status", e.status, "error", e.code, "forced", call.Forced, "request_id", call.RequestID)
	}
	if a := s.nextTokenAnswer(); a != nil {
		call.Forced = true
		refuse(forcedAADError(*a))
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		refuse(aadError{status: http.StatusBadRequest, code: "invalid_request", aadsts: 900144, description: "The request body must be a form-encoded client-credentials grant."})
		return
	}
	clientID, secret := r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	if u, p, ok := r.BasicAuth(); ok {
		// RFC 6749 section 2.3.1: the credentials are form-encoded before
		// they go into Basic authentication.
		clientID, secret = formDecode(u), formDecode(p)
	}
	switch tenant, grant, scope := r.PathValue("tenant"), r.PostForm.Get("grant_type"), r.PostForm.Get("scope"); {
	case tenant != s.tenant:
		refuse(aadError{status: http.StatusBadRequest, code: "invalid_request", aadsts: 90002,
			description: fmt.Sprintf("Tenant '%.100s' not found. Check to make sure you have the correct tenant ID and are signing into the correct cloud.", tenant)})
	case grant == "":
		refuse(aadError{status: http.StatusBadRequest, code: "invalid_request", aadsts: 900144, description: "The request body must contain the following parameter: 'grant_type'."})
	case grant != "client_credentials":
		refuse(aadError{status: http.StatusBadRequest, code: "unsupported_grant_type", aadsts: 70003, description: "The app requested an unsupported grant type."})
	case clientID == "":
		refuse(aadError{status: http.StatusBadRequest, code: "invalid_request", aadsts: 900144, description: "The request body must contain the following parameter: 'client_id'."})
	case clientID != s.clientID:
		refuse(aadError{status: http.StatusBadRequest, code: "unauthorized_client", aadsts: 700016,
			description: fmt.Sprintf("Application with identifier '%.100s' was not found in the directory '%s'.", clientID, s.tenant)})
	case secret == "":
		refuse(aadError{status: http.StatusUnauthorized, code: "invalid_client", aadsts: 7000216, description: "'client_assertion', 'client_secret' or 'request' is required for the 'client_credentials' grant type."})
	case subtle.ConstantTimeCompare([]byte(secret), []byte(s.secret)) != 1:
		refuse(aadError{status: http.StatusUnauthorized, code: "invalid_client", aadsts: 7000215, description: tokenDescriptions["invalid_client"].description})
	case scope != Scope:
		refuse(aadError{status: http.StatusBadRequest, code: "invalid_scope", aadsts: 1002012, description: tokenDescriptions["invalid_scope"].description})
	default:
		s.grant(w, call)
	}
}

// grant issues a token and answers with it.
func (s *Server) grant(w http.ResponseWriter, call Call) {
	var b [24]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read does not fail
	token := "fake-graph." + hex.EncodeToString(b[:])
	// expires_in is in whole seconds; rounding down could make it 0, which
	// clients read as a token that never expires.
	expiresIn := int64((s.ttl + time.Second - 1) / time.Second)
	s.mu.Lock()
	for t, exp := range s.tokens {
		if !call.Time.Before(exp) {
			delete(s.tokens, t)
		}
	}
	s.tokens[token] = call.Time.Add(s.ttl)
	s.mu.Unlock()

	w.Header().Set("x-ms-request-id", call.RequestID)
	w.Header().Set("Cache-Control", "no-store, no-cache")
	writeJSON(w, http.StatusOK, struct {
		TokenType    string `json:"token_type"`
		ExpiresIn    int64  `json:"expires_in"`
		ExtExpiresIn int64  `json:"ext_expires_in"`
		AccessToken  string `json:"access_token"`
	}{"Bearer", expiresIn, expiresIn, token})
	call.Status = http.StatusOK
	s.record(call)
	s.log.Info("fakegraph: token granted", "expires_in", expiresIn, "request_id", call.RequestID)
}

// tokenValid reports whether token was issued here and has not expired.
func (s *Server) tokenValid(token string, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	exp, ok := s.tokens[token]
	return ok && now.Before(exp)
}

func formDecode(s string) string {
	if d, err := url.QueryUnescape(s); err == nil {
		return d
	}
	return s
}
