package fakegemini

import (
	"encoding/json"
	"net/http"
	"slices"
	"time"

	"42sisters.ai/oracle/shared/oracle"
)

// Call is one generateContent request the fake received. It records whether
// an API key was sent, never the key.
type Call struct {
	Time              time.Time        `json:"time"`
	Model             string           `json:"model"`
	APIKeyPresent     bool             `json:"api_key_present"`
	SystemInstruction string           `json:"system_instruction"`
	UserText          string           `json:"user_text"` // the text parts of the user turns, joined by newlines
	GenerationConfig  GenerationConfig `json:"generation_config"`
	// Tier is the tier read from the response schema; empty when the
	// request could not be read.
	Tier oracle.Tier `json:"tier,omitempty"`
	// Pass is the chat pass of a free-text request (build, test or merge,
	// read from its system instruction); empty for a verdict.
	Pass string `json:"pass,omitempty"`
	// Status is the HTTP status answered; 0 while the request is pending
	// or when the client gave up first.
	Status int `json:"status"`
}

// GenerationConfig holds the fields of a request's generationConfig that
// the fake reads, under Google's names. A pointer is nil when the field was
// not sent.
type GenerationConfig struct {
	Temperature        *float64        `json:"temperature,omitempty"`
	TopP               *float64        `json:"topP,omitempty"`
	TopK               *float64        `json:"topK,omitempty"`
	CandidateCount     *int64          `json:"candidateCount,omitempty"`
	MaxOutputTokens    *int64          `json:"maxOutputTokens,omitempty"`
	Seed               *int64          `json:"seed,omitempty"`
	ResponseMIMEType   string          `json:"responseMimeType,omitempty"`
	ResponseSchema     json.RawMessage `json:"responseSchema,omitempty"`
	ResponseJSONSchema json.RawMessage `json:"responseJsonSchema,omitempty"`
}

// clone returns a copy that shares no memory with g.
func (g GenerationConfig) clone() GenerationConfig {
	g.Temperature = clonePtr(g.Temperature)
	g.TopP = clonePtr(g.TopP)
	g.TopK = clonePtr(g.TopK)
	g.CandidateCount = clonePtr(g.CandidateCount)
	g.MaxOutputTokens = clonePtr(g.MaxOutputTokens)
	g.Seed = clonePtr(g.Seed)
	g.ResponseSchema = slices.Clone(g.ResponseSchema)
	g.ResponseJSONSchema = slices.Clone(g.ResponseJSONSchema)
	return g
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// Calls returns the generateContent requests received so far, oldest first.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Call, len(s.calls))
	for i, c := range s.calls {
		out[i] = *c
		out[i].GenerationConfig = c.GenerationConfig.clone()
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
