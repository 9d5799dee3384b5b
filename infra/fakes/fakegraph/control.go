package fakegraph

import (
	"fmt"
	"net/http"
	"regexp"
	"strconv"

	"github.com/google/uuid"

	"42sisters.ai/oracle/infra/fakes/fakecontrol"
)

// Bounds of a Control.
const (
	maxQueued      = 100 // answers waiting in each queue
	maxRetryAfterS = 3600
)

// Control shapes the fake's next answers. Its parts apply in this order:
// Reset, ExpireTokens, then Send and Token join the end of their queues and
// SendAlways is set. {} changes nothing.
//
// Each request takes the next answer of its queue, if any, before anything
// of it is checked, and answers with it; with its queue empty, a sendMail
// request answers with SendAlways when set, and otherwise as Graph would.
type Control struct {
	// Reset empties both queues and clears SendAlways. It keeps the tokens
	// issued, the calls and the mailbox.
	Reset bool `json:"reset,omitempty"`
	// ExpireTokens makes every token issued so far expired: sendMail
	// refuses it with 401 InvalidAuthenticationToken.
	ExpireTokens bool `json:"expire_tokens,omitempty"`
	// Send queues answers for the next sendMail requests, in order.
	Send []SendAnswer `json:"send,omitempty"`
	// Token queues answers for the next token requests, in order.
	Token []TokenAnswer `json:"token,omitempty"`
	// SendAlways answers every sendMail request whose queue is empty,
	// until a Reset.
	SendAlways *SendAnswer `json:"send_always,omitempty"`
}

// SendAnswer is a sendMail failure: Graph's error for Status.
type SendAnswer struct {
	// Status is one of 400, 401, 403, 404, 408, 413, 429, 500, 502, 503, 504.
	Status int `json:"status"`
	// Code is Graph's error code, e.g. ErrorInvalidRecipients; empty means
	// Graph's usual one for Status. A 400 ErrorInvalidRecipients quotes the
	// message's first recipient, as Exchange does.
	Code string `json:"code,omitempty"`
	// RetryAfterS is sent as Retry-After in seconds; 0 sends none.
	RetryAfterS int `json:"retry_after_s,omitempty"`
	// RetryAfterDate is sent as Retry-After as is: an HTTP date.
	RetryAfterDate string `json:"retry_after_date,omitempty"`
}

// TokenAnswer is a token endpoint failure: the identity platform's error
// for Status.
type TokenAnswer struct {
	// Status is one of 400, 401, 429, 500, 502, 503, 504.
	Status int `json:"status"`
	// Error is the OAuth error code, e.g. invalid_client or
	// unauthorized_client; empty means the usual one for Status.
	Error          string `json:"error,omitempty"`
	RetryAfterS    int    `json:"retry_after_s,omitempty"`    // as in SendAnswer
	RetryAfterDate string `json:"retry_after_date,omitempty"` // as in SendAnswer
}

// State is what is pending after a Control.
type State struct {
	SendQueued  int         `json:"send_queued"`
	TokenQueued int         `json:"token_queued"`
	SendAlways  *SendAnswer `json:"send_always"`
}

var (
	graphCodePattern = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.]{0,63}$`)
	oauthCodePattern = regexp.MustCompile(`^[a-z][a-z_]{0,63}$`)
)

func (a SendAnswer) check(field string) error {
	if _, ok := sendDefaults[a.Status]; !ok {
		return fmt.Errorf("%s: status must be one of 400, 401, 403, 404, 408, 413, 429, 500, 502, 503, 504, got %d", field, a.Status)
	}
	if a.Code != "" && !graphCodePattern.MatchString(a.Code) {
		return fmt.Errorf("%s: code must be a Graph error code (a letter, then up to 63 letters, digits, _ or .)", field)
	}
	return checkRetryAfter(field, a.Status, a.RetryAfterS, a.RetryAfterDate)
}

func (a TokenAnswer) check(field string) error {
	if _, ok := tokenDefaults[a.Status]; !ok {
		return fmt.Errorf("%s: status must be one of 400, 401, 429, 500, 502, 503, 504, got %d", field, a.Status)
	}
	if a.Error != "" && !oauthCodePattern.MatchString(a.Error) {
		return fmt.Errorf("%s: error must be an OAuth error code (lower case letters and _, up to 64)", field)
	}
	return checkRetryAfter(field, a.Status, a.RetryAfterS, a.RetryAfterDate)
}

func checkRetryAfter(field string, status, seconds int, date string) error {
	if seconds == 0 && date == "" {
		return nil
	}
	switch {
	case status != http.StatusRequestTimeout && status != http.StatusTooManyRequests && status < 500:
		return fmt.Errorf("%s: a retry delay applies only to status 408, 429 and 5xx", field)
	case seconds != 0 && date != "":
		return fmt.Errorf("%s: retry_after_s and retry_after_date exclude each other", field)
	case seconds < 0 || seconds > maxRetryAfterS:
		return fmt.Errorf("%s: retry_after_s must be between 0 and %d, got %d", field, maxRetryAfterS, seconds)
	}
	if date != "" {
		if _, err := http.ParseTime(date); err != nil {
			return fmt.Errorf("%s: retry_after_date must be an HTTP date (Mon, 02 Jan 2006 15:04:05 GMT)", field)
		}
	}
	return nil
}

func (a SendAnswer) retryAfterHeader() string {
	return retryAfterHeader(a.RetryAfterS, a.RetryAfterDate)
}
func (a TokenAnswer) retryAfterHeader() string {
	return retryAfterHeader(a.RetryAfterS, a.RetryAfterDate)
}

func retryAfterHeader(seconds int, date string) string {
	if seconds > 0 {
		return strconv.Itoa(seconds)
	}
	return date
}

// Control applies c, all of it or, when any part is invalid, none, and
// returns what is pending.
func (s *Server) Control(c Control) (State, error) {
	for i, a := range c.Send {
		if err := a.check(fmt.Sprintf("send[%d]", i)); err != nil {
			return State{}, fmt.Errorf("control: %w", err)
		}
	}
	for i, a := range c.Token {
		if err := a.check(fmt.Sprintf("token[%d]", i)); err != nil {
			return State{}, fmt.Errorf("control: %w", err)
		}
	}
	if c.SendAlways != nil {
		if err := c.SendAlways.check("send_always"); err != nil {
			return State{}, fmt.Errorf("control: %w", err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sendQueue, tokenQueue := s.sendQueue, s.tokenQueue
	if c.Reset {
		sendQueue, tokenQueue = nil, nil
	}
	if n := len(sendQueue) + len(c.Send); n > maxQueued {
		return State{}, fmt.Errorf("control: at most %d sendMail answers may wait, this would make %d", maxQueued, n)
	}
	if n := len(tokenQueue) + len(c.Token); n > maxQueued {
		return State{}, fmt.Errorf("control: at most %d token answers may wait, this would make %d", maxQueued, n)
	}
	if c.Reset {
		s.sendQueue, s.tokenQueue, s.sendAlways = nil, nil, nil
	}
	if c.ExpireTokens {
		// Deleting them answers as expiry does: the token is not valid.
		clear(s.tokens)
	}
	s.sendQueue = append(s.sendQueue, c.Send...)
	s.tokenQueue = append(s.tokenQueue, c.Token...)
	if c.SendAlways != nil {
		a := *c.SendAlways
		s.sendAlways = &a
	}
	return s.stateLocked(), nil
}

// stateLocked reports what is pending; the caller holds s.mu.
func (s *Server) stateLocked() State {
	st := State{SendQueued: len(s.sendQueue), TokenQueued: len(s.tokenQueue)}
	if s.sendAlways != nil {
		a := *s.sendAlways
		st.SendAlways = &a
	}
	return st
}

// nextSendAnswer takes the answer for a sendMail request, nil for a normal
// one.
func (s *Server) nextSendAnswer() *SendAnswer {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.sendQueue) > 0 {
		a := s.sendQueue[0]
		s.sendQueue = s.sendQueue[1:]
		return &a
	}
	if s.sendAlways != nil {
		a := *s.sendAlways
		return &a
	}
	return nil
}

// nextTokenAnswer takes the answer for a token request, nil for a normal
// one.
func (s *Server) nextTokenAnswer() *TokenAnswer {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.tokenQueue) == 0 {
		return nil
	}
	a := s.tokenQueue[0]
	s.tokenQueue = s.tokenQueue[1:]
	return &a
}

// handleControl serves POST /_control: a JSON Control, unknown fields
// refused. It answers with the State.
func (s *Server) handleControl(w http.ResponseWriter, r *http.Request) {
	c, err := fakecontrol.Decode[Control](http.MaxBytesReader(w, r.Body, 64<<10))
	var st State
	if err == nil {
		st, err = s.Control(c)
	}
	if err != nil {
		writeGraphError(w, uuid.NewString(), graphError{status: http.StatusBadRequest, code: "BadRequest", message: "Invalid control: " + err.Error()})
		return
	}
	s.log.Info("fakegraph: control", "reset", c.Reset, "expire_tokens", c.ExpireTokens, "send_queued", st.SendQueued, "token_queued", st.TokenQueued, "send_always", st.SendAlways != nil)
	writeJSON(w, http.StatusOK, st)
}
