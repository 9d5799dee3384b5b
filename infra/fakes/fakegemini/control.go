package fakegemini

import (
	"errors"
	"fmt"
	"net/http"
	"slices"

	"42sisters.ai/oracle/infra/fakes/fakecontrol"

	"42sisters.ai/oracle/shared/oracle"
)

// Bounds of a Scenario set over HTTP.
const (
	maxScenarioCalls = 10000
	maxLatencyMS     = 10 * 60 * 1000
	maxRetryAfterS   = 3600
	maxLeakTerms     = 20
	maxLeakTermRunes = 200
	// defaultRetryAfterS is the retry delay of a 429 when the scenario names none.
	defaultRetryAfterS = 7
)

// Scenario shapes the answers to the next Calls generateContent requests;
// each request, whatever its outcome, uses up one. The zero Scenario answers
// normally. Effects apply in this order: latency, hang, authentication,
// status, request validation, then the content options.
type Scenario struct {
	// Calls is how many requests the scenario applies to; 0 means 1.
	Calls int `json:"calls,omitempty"`
	// LatencyMS delays the answer, or the error, by this many milliseconds.
	LatencyMS int `json:"latency_ms,omitempty"`
	// Status answers with Google's error for this HTTP status: 400, 401,
	// 403, 404, 429, 500, 503 or 504.
	Status int `json:"status,omitempty"`
	// RetryAfterS is the retry delay of a 429, in seconds, sent both as a
	// Retry-After header and as a google.rpc.RetryInfo detail. Absent means
	// 7 s; 0 sends neither.
	RetryAfterS *int `json:"retry_after_s,omitempty"`
	// Hang never answers: the request ends when the client gives up.
	Hang bool `json:"hang,omitempty"`
	// Malformed answers with the verdict cut off halfway, text that is not
	// JSON, as when a model stops early.
	Malformed bool `json:"malformed,omitempty"`
	// Fenced wraps the JSON verdict in a ```json markdown fence.
	Fenced bool `json:"fenced,omitempty"`
	// Blocked answers as Google does for a blocked prompt: no candidate and
	// promptFeedback.blockReason SAFETY.
	Blocked bool `json:"blocked,omitempty"`
	// Verdict forces the top verdict: GREEN, AMBER, RED or NULL.
	Verdict oracle.Verdict `json:"verdict,omitempty"`
	// LeakTerms are written into every text of the verdict: the summary,
	// each analysis and each strategy text.
	LeakTerms []string `json:"leak_terms,omitempty"`
	// Inconsistent gives every dimension a verdict that contradicts the top
	// one: RED under GREEN, GREEN under AMBER, RED or NULL. The quick tier
	// has no dimensions and is unaffected. Under GREEN or RED the reply
	// fails the crosscheck's majority rule: with Calls 1 the generator's
	// retry repairs it, with Calls 2 the order is held.
	Inconsistent bool `json:"inconsistent,omitempty"`
	// Incomplete leaves the summary out of otherwise valid JSON: the
	// structural defect the crosscheck rejects (field_missing).
	Incomplete bool `json:"incomplete,omitempty"`
	// Pass, when set (build, test or merge), applies the scenario only to
	// the chat requests of that pass: the others are answered normally
	// and do not use it up. With LeakTerms and pass merge, Calls 1 lets a
	// reply written again pass the content filter, Calls 2 does not.
	Pass string `json:"pass,omitempty"`
	// Then is the scenario that follows once this one's calls are used
	// up: {"leak_terms":["CSDM"],"then":{"status":503,"calls":3}} leaks in
	// the first reply and answers the next three with 503. It has no Then
	// of its own.
	Then *Scenario `json:"then,omitempty"`
}

// active reports whether the scenario changes anything.
func (sc Scenario) active() bool {
	return sc.LatencyMS != 0 || sc.Status != 0 || sc.RetryAfterS != nil || sc.Hang || sc.Malformed ||
		sc.Fenced || sc.Blocked || sc.Verdict != "" || len(sc.LeakTerms) != 0 || sc.Inconsistent || sc.Incomplete || sc.Then != nil
}

// appliesTo reports whether the scenario is for a request of pass (empty
// for a verdict).
func (sc Scenario) appliesTo(pass string) bool {
	return sc.Pass == "" || sc.Pass == pass
}

// retryAfter is the 429 retry delay in seconds, 0 for none.
func (sc Scenario) retryAfter() int {
	if sc.RetryAfterS == nil {
		return defaultRetryAfterS
	}
	return *sc.RetryAfterS
}

// normalized checks sc and fills in its defaults.
func (sc Scenario) normalized() (Scenario, error) {
	if sc.Calls < 0 || sc.Calls > maxScenarioCalls {
		return Scenario{}, fmt.Errorf("calls must be between 0 and %d, got %d", maxScenarioCalls, sc.Calls)
	}
	if sc.Calls == 0 {
		sc.Calls = 1
	}
	if sc.LatencyMS < 0 || sc.LatencyMS > maxLatencyMS {
		return Scenario{}, fmt.Errorf("latency_ms must be between 0 and %d, got %d", maxLatencyMS, sc.LatencyMS)
	}
	if _, ok := scenarioMessages[sc.Status]; sc.Status != 0 && !ok {
		return Scenario{}, fmt.Errorf("status must be one of 400, 401, 403, 404, 429, 500, 503, 504, got %d", sc.Status)
	}
	if sc.RetryAfterS != nil {
		if sc.Status != http.StatusTooManyRequests {
			return Scenario{}, errors.New("retry_after_s applies only to status 429")
		}
		if *sc.RetryAfterS < 0 || *sc.RetryAfterS > maxRetryAfterS {
			return Scenario{}, fmt.Errorf("retry_after_s must be between 0 and %d, got %d", maxRetryAfterS, *sc.RetryAfterS)
		}
	}
	if sc.Pass != "" && !slices.Contains([]string{PassBuild, PassTest, PassMerge}, sc.Pass) {
		return Scenario{}, fmt.Errorf("pass must be build, test or merge, got %q", sc.Pass)
	}
	if sc.Verdict != "" {
		if _, err := oracle.ParseVerdict(string(sc.Verdict)); err != nil {
			return Scenario{}, fmt.Errorf("verdict must be GREEN, AMBER, RED or NULL: %w", err)
		}
	}
	if len(sc.LeakTerms) > maxLeakTerms {
		return Scenario{}, fmt.Errorf("leak_terms may hold at most %d terms, got %d", maxLeakTerms, len(sc.LeakTerms))
	}
	for i, t := range sc.LeakTerms {
		if n := len([]rune(t)); n == 0 || n > maxLeakTermRunes {
			return Scenario{}, fmt.Errorf("leak_terms[%d] must have 1 to %d characters", i, maxLeakTermRunes)
		}
	}
	if sc.Then != nil {
		if sc.Then.Then != nil {
			return Scenario{}, errors.New("then may not have a then of its own")
		}
		then, err := sc.Then.normalized()
		if err != nil {
			return Scenario{}, fmt.Errorf("then: %w", err)
		}
		sc.Then = &then
	}
	switch {
	case sc.Hang && sc.Status != 0:
		return Scenario{}, errors.New("hang and status exclude each other")
	case sc.Malformed && sc.Fenced:
		return Scenario{}, errors.New("malformed and fenced exclude each other")
	case sc.Incomplete && (sc.Malformed || sc.Fenced || sc.Blocked):
		return Scenario{}, errors.New("incomplete is valid JSON without a summary: it excludes malformed, fenced and blocked")
	case sc.Blocked && (sc.Malformed || sc.Fenced):
		return Scenario{}, errors.New("blocked answers without text: it excludes malformed and fenced")
	}
	return sc, nil
}

// SetScenario sets the scenario for the next sc.Calls requests, replacing
// any pending one, and returns it with its defaults filled in. A scenario
// that changes nothing, such as the zero Scenario, resets.
func (s *Server) SetScenario(sc Scenario) (Scenario, error) {
	sc, err := sc.normalized()
	if err != nil {
		return Scenario{}, fmt.Errorf("set scenario: %w", err)
	}
	if !sc.active() {
		sc = Scenario{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scenario = sc
	s.remaining = sc.Calls
	return sc, nil
}

// takeScenario returns the scenario for one request of pass (empty for a
// verdict) and counts it used. The caller holds s.mu.
func (s *Server) takeScenario(pass string) Scenario {
	if s.remaining == 0 || !s.scenario.appliesTo(pass) {
		return Scenario{}
	}
	s.remaining--
	sc := s.scenario
	if s.remaining == 0 {
		s.scenario = Scenario{}
		if then := sc.Then; then != nil {
			s.scenario, s.remaining = *then, then.Calls
		}
	}
	return sc
}

// handleControl serves POST /_control: a JSON Scenario, unknown fields
// refused. It answers with the scenario as set.
func (s *Server) handleControl(w http.ResponseWriter, r *http.Request) {
	sc, err := fakecontrol.Decode[Scenario](http.MaxBytesReader(w, r.Body, 16<<10))
	if err == nil {
		sc, err = s.SetScenario(sc)
	}
	if err != nil {
		writeAPIError(w, invalidArgument("Invalid control: %v", err))
		return
	}
	s.log.Info("fakegemini: scenario set", "scenario", sc)
	s.writeJSON(w, http.StatusOK, sc)
}
