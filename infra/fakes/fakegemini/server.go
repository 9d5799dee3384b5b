// Package fakegemini is a fake of the Gemini API's generateContent endpoint
// that answers with deterministic, schema-valid Oracle verdicts and can be
// told to fail the ways the real service fails. It also describes models,
// the call a client makes to check its API key without generating.
//
// It speaks the REST wire format that google.golang.org/genai uses with the
// Gemini API backend, so the service's real client runs against it
// unchanged. Request fields the fake does not model are accepted and
// ignored.
//
// The verdict's tier is read from the response schema: a schema with a
// "strategy" property gets the Strategy Session document, one with
// "breakdown" the Full Breakdown, anything else the Quick Take. The verdict
// and its sentences are picked by a hash of the system instruction and the
// user text, so the same prompt always gets the same answer. A request for
// free text (responseMimeType text/plain) is a pass of the Sisters Chat
// and gets plausible prose instead (chat.go): a stance's note or the merged
// reply, told apart by the system instruction.
//
// Endpoints:
//
//	POST   /v1beta/models/{model}:generateContent   generate a verdict (API key in x-goog-api-key or ?key=)
//	GET    /v1beta/models/{model}                   describe the model: name, version, displayName,
//	                                                supportedGenerationMethods (same API key check)
//	POST   /_control                                shape the next answers (see Scenario); {} resets
//	POST   /_key                                    {"accepted":"k"}: accept only the key k (see AcceptOnly)
//	GET    /_calls                                  generateContent requests received (never the API key)
//	DELETE /_calls                                  forget them
//
// An API key is required on both API endpoints; the key InvalidKey, and
// any key but the one set by AcceptOnly, is refused as Google refuses a key
// it does not know, with the same answer on both. Describing a model is not a generateContent request: it is not in
// /_calls and does not use up a Scenario.
package fakegemini

import (
	"42sisters.ai/oracle/shared/wait"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"
)

// InvalidKey is the API key the fake refuses, as Google refuses an unknown
// key: 400 INVALID_ARGUMENT with the reason API_KEY_INVALID.
const InvalidKey = "invalid-key"

// Options configures a Server. The zero value serves a working fake.
type Options struct {
	// Clock is the time source of the calls' timestamps; nil means time.Now.
	Clock func() time.Time
	// Sleep waits for d, or until ctx ends and then returns ctx.Err(). It
	// delays answers for Scenario.LatencyMS; nil means a real timer. A test
	// can record the delays and return at once.
	Sleep func(ctx context.Context, d time.Duration) error
	// Logger receives request logs, which never hold prompts or keys; nil
	// discards them.
	Logger *slog.Logger
}

// Server is the fake. It implements http.Handler and is safe for concurrent use.
type Server struct {
	now   func() time.Time
	sleep func(context.Context, time.Duration) error
	log   *slog.Logger
	mux   *http.ServeMux

	mu        sync.Mutex
	calls     []*Call
	sequence  uint64 // generateContent requests received, for response ids
	scenario  Scenario
	remaining int    // requests the scenario still applies to
	accepted  string // the one key accepted, when set (AcceptOnly)
}

// New returns a fake Gemini configured by opts.
func New(opts Options) *Server {
	s := &Server{now: opts.Clock, sleep: opts.Sleep, log: opts.Logger, mux: http.NewServeMux()}
	if s.now == nil {
		s.now = time.Now
	}
	if s.sleep == nil {
		s.sleep = wait.Sleep
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.mux.HandleFunc("POST /v1beta/models/{action}", s.handleGenerate)
	s.mux.HandleFunc("GET /v1beta/models/{model}", s.handleGetModel)
	s.mux.HandleFunc("POST /_control", s.handleControl)
	s.mux.HandleFunc("POST /_key", s.handleKey)
	s.mux.HandleFunc("GET /_calls", s.handleCalls)
	s.mux.HandleFunc("DELETE /_calls", s.handleClearCalls)
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeAPIError(w, notFound(r))
	})
	return s
}

// ServeHTTP serves the fake's API and test endpoints.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mux.ServeHTTP(w, r)
}

// writeJSON marshals v and writes it with status.
func (s *Server) writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		s.log.Error("fakegemini: encode response", "err", fmt.Errorf("marshal %T: %w", v, err))
		writeAPIError(w, internalError())
		return
	}
	writeJSONBody(w, status, b)
}
