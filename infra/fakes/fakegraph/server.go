// Package fakegraph is a fake of Microsoft Graph's sendMail and of the
// identity platform's client-credentials token endpoint, for the mail
// transport's tests and the local stack. It keeps the messages it accepts
// in a mailbox and can be told to fail the ways the real services fail.
//
// It speaks the wire formats that golang.org/x/oauth2/clientcredentials and
// mail.Graph use, so the service's real transport runs against it
// unchanged: point LoginBase at the server's root and APIBase at its /v1.0.
//
// Endpoints:
//
//	POST   /{tenant}/oauth2/v2.0/token     a client-credentials token (form-encoded; the client
//	                                       secret in the form or in Basic authentication)
//	POST   /v1.0/users/{sender}/sendMail   send a MIME message: Bearer token, Content-Type
//	                                       text/plain, the message base64-encoded; 202
//	POST   /_control                       queue failures (see Control)
//	GET    /_calls                         token and sendMail requests received (no bodies,
//	DELETE /_calls                         no addresses, no secrets); forget them
//	POST   /_inbox/{mailbox}               deliver a message to a mailbox the app reads (inbox.go,
//	                                       with the two reads Graph answers for it)
//	GET    /_mailbox                       the messages accepted, parsed (see Message)
//	DELETE /_mailbox                       forget them
//
// Errors are shaped as Microsoft shapes them: the identity platform's
// {"error":"invalid_client","error_description":"AADSTS…"} with an
// x-ms-request-id header, Graph's {"error":{"code":…,"message":…}} with a
// request-id header. Like Microsoft's, their messages can quote the tenant,
// the client id and the addresses of the message, which a client must not
// pass on.
package fakegraph

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/google/uuid"
)

// The credentials a zero Options accepts, which the local stack uses. They
// have the form of Entra ID's, and are no one's.
const (
	DefaultTenant       = "42424242-4242-4242-4242-424242424242"
	DefaultClientID     = "0a4c1e50-0000-4000-8000-00000000f4ce"
	DefaultClientSecret = "fake-graph-client-secret"
)

// DefaultTokenTTL is the lifetime of a token when Options.TokenTTL is 0,
// about what Entra ID grants.
const DefaultTokenTTL = time.Hour

// Options configures a Server. The zero value serves a working fake that
// accepts the Default credentials.
type Options struct {
	TenantID, ClientID, ClientSecret string // the Default… constants when empty
	// TokenTTL is how long a token is valid; DefaultTokenTTL when 0. It is
	// sent as expires_in in whole seconds, rounded up.
	TokenTTL time.Duration
	// Logger receives request logs, which never hold addresses, tokens or
	// secrets; nil discards them.
	Logger *slog.Logger
}

// Server is the fake. It implements http.Handler and is safe for concurrent use.
type Server struct {
	tenant, clientID, secret string
	ttl                      time.Duration
	log                      *slog.Logger
	mux                      *http.ServeMux

	mu         sync.Mutex
	tokens     map[string]time.Time // access token -> expiry
	sendQueue  []SendAnswer
	tokenQueue []TokenAnswer
	sendAlways *SendAnswer
	calls      []Call
	received   []received
	inboxes    map[string][]inboxMessage // by lower-case mailbox (inbox.go)
}

// New returns a fake Graph configured by o.
func New(o Options) *Server {
	s := &Server{
		tenant: o.TenantID, clientID: o.ClientID, secret: o.ClientSecret, ttl: o.TokenTTL, log: o.Logger,
		mux: http.NewServeMux(), tokens: map[string]time.Time{},
	}
	if s.tenant == "" {
		s.tenant = DefaultTenant
	}
	if s.clientID == "" {
		s.clientID = DefaultClientID
	}
	if s.secret == "" {
		s.secret = DefaultClientSecret
	}
	if s.ttl <= 0 {
		s.ttl = DefaultTokenTTL
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.mux.HandleFunc("POST /{tenant}/oauth2/v2.0/token", s.handleToken)
	s.mux.HandleFunc("POST /v1.0/users/{sender}/sendMail", s.handleSendMail)
	s.mux.HandleFunc("POST /_control", s.handleControl)
	s.mux.HandleFunc("GET /_calls", s.handleCalls)
	s.mux.HandleFunc("DELETE /_calls", s.handleClearCalls)
	s.mux.HandleFunc("POST /_inbox/{mailbox}", s.handleDeliver)
	s.mux.HandleFunc("GET /v1.0/users/{mailbox}/mailFolders/inbox/messages", s.handleList)
	s.mux.HandleFunc("GET /v1.0/users/{mailbox}/messages/{id}/$value", s.handleValue)
	s.mux.HandleFunc("GET /_mailbox", s.handleMailbox)
	s.mux.HandleFunc("DELETE /_mailbox", s.handleClearMailbox)
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeGraphError(w, uuid.NewString(), graphError{status: http.StatusNotFound, code: "ResourceNotFound",
			message: fmt.Sprintf("Resource not found for the segment '%.100s'.", r.URL.Path)})
	})
	return s
}

// ServeHTTP serves the fake's API and test endpoints.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mux.ServeHTTP(w, r)
}

// writeJSON writes v with status; v is one of the fake's own types, which
// always encode.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":{"code":"generalException","message":"the fake could not encode its answer"}}`)
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	// A write error means the client went away; there is no one to tell.
	_, _ = w.Write(b)
}
