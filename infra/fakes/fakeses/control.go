package fakeses

import (
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"

	"42sisters.ai/oracle/infra/fakes/fakecontrol"
)

// Bounds of what Control accepts.
const (
	maxQueued      = 100
	maxRetryAfterS = 3600
	maxControlBody = 64 << 10
)

// validCode is what an error code looks like: the SDK reads it from a
// header, so it is one word.
var validCode = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9.]{0,99}$`)

// Failure is one answer SendEmail fails with instead of sending.
type Failure struct {
	// Status is the HTTP status, 400 to 599.
	Status int `json:"status"`
	// Code is the error code the SDK reports, such as ServiceUnavailable,
	// TooManyRequestsException, MessageRejected or SendingPausedException.
	Code string `json:"code"`
	// RetryAfterS, 0 to 3600 seconds, is sent as a Retry-After header when
	// positive.
	RetryAfterS int `json:"retry_after_s,omitempty"`
}

func (f Failure) validate() error {
	switch {
	case f.Status < 400 || f.Status > 599:
		return fmt.Errorf("status must be between 400 and 599, got %d", f.Status)
	case f.Code == "":
		return errors.New("code is required")
	case !validCode.MatchString(f.Code):
		return errors.New("code must be one word of letters, digits and dots, at most 100 characters")
	case f.RetryAfterS < 0 || f.RetryAfterS > maxRetryAfterS:
		return fmt.Errorf("retry_after_s must be between 0 and %d, got %d", maxRetryAfterS, f.RetryAfterS)
	}
	return nil
}

// Control changes how SendEmail answers. POST /_control takes it as JSON,
// such as {"fail":[{"status":429,"code":"TooManyRequestsException","retry_after_s":120}]}.
// Its parts apply in order: Reset, then Fail, then FailAlways.
type Control struct {
	// Fail queues failures for the next SendEmail requests, after those
	// still queued, each answering one request; at most 100 wait at once.
	Fail []Failure `json:"fail,omitempty"`
	// FailAlways fails every SendEmail request that finds no failure
	// queued, until a Reset.
	FailAlways *Failure `json:"fail_always,omitempty"`
	// Reset forgets the queued failures and FailAlways, and resumes
	// sending.
	Reset bool `json:"reset,omitempty"`
	// SendingPaused sets what GetAccount answers for SendingEnabled (its
	// negation), as SES pausing an account looks to the health job.
	SendingPaused *bool `json:"sending_paused,omitempty"`
}

// pending is the answer of /_control: the failures waiting.
type pending struct {
	Queued     []Failure `json:"queued"`
	FailAlways *Failure  `json:"fail_always"`
}

// Apply applies c, or nothing when any part of c is invalid.
func (s *Server) Apply(c Control) error {
	if len(c.Fail) == 0 && c.FailAlways == nil && !c.Reset && c.SendingPaused == nil {
		return errors.New("control: set fail, fail_always, sending_paused or reset")
	}
	for i, f := range c.Fail {
		if err := f.validate(); err != nil {
			return fmt.Errorf("control: fail[%d]: %w", i, err)
		}
	}
	if c.FailAlways != nil {
		if err := c.FailAlways.validate(); err != nil {
			return fmt.Errorf("control: fail_always: %w", err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	queued := len(s.queue)
	if c.Reset {
		queued = 0
	}
	if queued+len(c.Fail) > maxQueued {
		return fmt.Errorf("control: at most %d failures may be queued; %d are and %d more were asked", maxQueued, queued, len(c.Fail))
	}
	if c.Reset {
		s.queue, s.always, s.paused = nil, nil, false
	}
	if c.SendingPaused != nil {
		s.paused = *c.SendingPaused
	}
	s.queue = append(s.queue, c.Fail...)
	if c.FailAlways != nil {
		f := *c.FailAlways
		s.always = &f
	}
	return nil
}

// state returns the failures pending.
func (s *Server) state() pending {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := pending{Queued: slices.Clone(s.queue)}
	if p.Queued == nil {
		p.Queued = []Failure{}
	}
	if s.always != nil {
		f := *s.always
		p.FailAlways = &f
	}
	return p
}

// takeFailure returns the failure that answers the next SendEmail, if any:
// the first queued, which it uses up, else FailAlways.
func (s *Server) takeFailure() (Failure, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queue) > 0 {
		f := s.queue[0]
		s.queue = s.queue[1:]
		return f, true
	}
	if s.always != nil {
		return *s.always, true
	}
	return Failure{}, false
}

// handleControl serves POST /_control: a JSON Control, unknown fields
// refused. It answers with the failures pending.
func (s *Server) handleControl(w http.ResponseWriter, r *http.Request) {
	c, err := fakecontrol.Decode[Control](http.MaxBytesReader(w, r.Body, maxControlBody))
	if err == nil {
		err = s.Apply(c)
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, "BadRequestException", s.requestID(), 0, "Invalid control: "+err.Error())
		return
	}
	p := s.state()
	s.log.Info("fakeses: control", "queued", len(p.Queued), "fail_always", p.FailAlways != nil)
	s.writeJSON(w, http.StatusOK, p)
}
