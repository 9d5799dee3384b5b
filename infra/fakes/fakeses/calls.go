package fakeses

import (
	"maps"
	"slices"
	"time"

	"42sisters.ai/oracle/shared/sesevent"
)

// Call is one SendEmail request the front received. It holds no address
// and no part of the message.
type Call struct {
	Time time.Time `json:"time"`
	// Status is the HTTP status answered: an injected failure's, moto's,
	// or 502 when moto did not answer.
	Status int `json:"status"`
	// Code is the error code answered (X-Amzn-Errortype), if any.
	Code string `json:"code,omitempty"`
	// Injected is set when the front answered and moto never saw the
	// request: a queued or FailAlways failure, or a body over 64 MiB.
	Injected  bool   `json:"injected"`
	RequestID string `json:"request_id,omitempty"`
	// MessageID is the id moto answered a send with.
	MessageID        string `json:"message_id,omitempty"`
	ConfigurationSet string `json:"configuration_set,omitempty"`
	// Tags are the request's EmailTags, name to value.
	Tags map[string]string `json:"tags,omitempty"`
	// Events are the event types the front publishes for the send, in
	// order. They are decided before the answer and published just after
	// it, so a reader of the topic may meet them a moment after SendEmail
	// returns; a publishing failure is logged, not recorded here.
	Events []sesevent.EventType `json:"events,omitempty"`
}

func (c Call) clone() Call {
	c.Tags = maps.Clone(c.Tags)
	c.Events = slices.Clone(c.Events)
	return c
}

// record keeps c; it must not change afterwards.
func (s *Server) record(c *Call) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, c)
}

// Calls returns the SendEmail requests answered so far, oldest first. A
// request is listed before its answer reaches the client.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Call, len(s.calls))
	for i, c := range s.calls {
		out[i] = c.clone()
	}
	return out
}

// ClearCalls forgets the requests received.
func (s *Server) ClearCalls() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = nil
}
