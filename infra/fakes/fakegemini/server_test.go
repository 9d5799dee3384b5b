package fakegemini_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	fakegemini "42sisters.ai/oracle/infra/fakes/fakegemini"
	"42sisters.ai/oracle/shared/oracle"
)

func TestAuthentication(t *testing.T) {
	f := newFixture(t)
	body := requestBody(t, "system", "Should I open a bakery?", oracle.TierQuick)

	resp, b := f.do(t, http.MethodPost, generatePath, "", body)
	wantGoogleError(t, resp, b, http.StatusForbidden, "PERMISSION_DENIED")

	resp, b = f.do(t, http.MethodPost, generatePath, fakegemini.InvalidKey, body)
	e := wantGoogleError(t, resp, b, http.StatusBadRequest, "INVALID_ARGUMENT")
	if len(e.Error.Details) == 0 || e.Error.Details[0]["reason"] != "API_KEY_INVALID" {
		t.Errorf("invalid key: details = %v, want an ErrorInfo with reason API_KEY_INVALID", e.Error.Details)
	}

	resp, b = f.do(t, http.MethodPost, generatePath+"?key="+testKey, "", body)
	if resp.StatusCode != http.StatusOK {
		t.Errorf("key as a query parameter: status %d: %s", resp.StatusCode, b)
	}
}

func TestRequestsGoogleRefuses(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		name, body string
	}{
		{"not JSON", `{"contents":`},
		{"mistyped field", `{"contents":[{"parts":[{"text":"x"}]}],"generationConfig":{"temperature":"hot"}}`},
		{"no contents", `{"generationConfig":{"temperature":0}}`},
		{"empty parts", `{"contents":[{"role":"user","parts":[]}]}`},
		{"unknown role", `{"contents":[{"role":"system","parts":[{"text":"x"}]}]}`},
		{"temperature above 2", `{"contents":[{"parts":[{"text":"x"}]}],"generationConfig":{"temperature":2.5}}`},
		{"topP above 1", `{"contents":[{"parts":[{"text":"x"}]}],"generationConfig":{"topP":1.5}}`},
		{"nine candidates", `{"contents":[{"parts":[{"text":"x"}]}],"generationConfig":{"candidateCount":9}}`},
		{"unknown MIME type", `{"contents":[{"parts":[{"text":"x"}]}],"generationConfig":{"responseMimeType":"text/html"}}`},
		{"schema without JSON", `{"contents":[{"parts":[{"text":"x"}]}],"generationConfig":{"responseSchema":{"type":"OBJECT"}}}`},
		{"both schemas", `{"contents":[{"parts":[{"text":"x"}]}],"generationConfig":{"responseMimeType":"application/json","responseSchema":{"type":"OBJECT"},"responseJsonSchema":{"type":"object"}}}`},
		{"schema not an object", `{"contents":[{"parts":[{"text":"x"}]}],"generationConfig":{"responseMimeType":"application/json","responseSchema":["OBJECT"]}}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, b := f.do(t, http.MethodPost, generatePath, testKey, c.body)
			wantGoogleError(t, resp, b, http.StatusBadRequest, "INVALID_ARGUMENT")
		})
	}
}

func TestUnknownRoutesAreGoogleNotFound(t *testing.T) {
	f := newFixture(t)
	body := requestBody(t, "s", "u", oracle.TierQuick)
	cases := []struct{ method, path string }{
		{http.MethodGet, "/"},
		{http.MethodGet, generatePath},
		{http.MethodPost, "/v1beta/models/gemini-2.5-flash:countTokens"},
		{http.MethodPost, "/v1beta/models/gemini-2.5-flash"},
		{http.MethodPost, "/v1beta/models/bad%20model:generateContent"},
		{http.MethodPost, "/v1/models/gemini-2.5-flash:generateContent"},
		{http.MethodGet, "/_control"},
	}
	for _, c := range cases {
		t.Run(c.method+" "+c.path, func(t *testing.T) {
			resp, b := f.do(t, c.method, c.path, testKey, body)
			wantGoogleError(t, resp, b, http.StatusNotFound, "NOT_FOUND")
		})
	}
	if n := len(f.fake.Calls()); n != 0 {
		t.Errorf("%d calls recorded for unknown routes, want 0", n)
	}
}

func TestAnswerShape(t *testing.T) {
	f := newFixture(t)
	resp, b := f.do(t, http.MethodPost, generatePath, testKey, requestBody(t, "system text", "Should I open a bakery?", oracle.TierQuick))
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("status %d, content type %q: %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	var r response
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	c := r.Candidates[0]
	if c.Content.Role != "model" || c.FinishReason != "STOP" || r.ModelVersion != "gemini-2.5-flash" || r.ResponseID == "" {
		t.Errorf("role, finish reason, model version, response id = %q, %q, %q, %q", c.Content.Role, c.FinishReason, r.ModelVersion, r.ResponseID)
	}
	u := r.UsageMetadata
	if u.PromptTokenCount <= 0 || u.CandidatesTokenCount <= 0 || u.TotalTokenCount != u.PromptTokenCount+u.CandidatesTokenCount {
		t.Errorf("usage metadata = %+v", u)
	}
}

func TestTierFromSchema(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		name, config string
		tier         oracle.Tier
	}{
		{"no schema", `{}`, oracle.TierQuick},
		{"quick responseSchema", `{"responseMimeType":"application/json","responseSchema":` + schemas[oracle.TierQuick] + `}`, oracle.TierQuick},
		{"full responseSchema", `{"responseMimeType":"application/json","responseSchema":` + schemas[oracle.TierFull] + `}`, oracle.TierFull},
		{"strategy responseSchema", `{"responseMimeType":"application/json","responseSchema":` + schemas[oracle.TierStrategy] + `}`, oracle.TierStrategy},
		{"full responseJsonSchema", `{"responseMimeType":"application/json","responseJsonSchema":{"type":"object","properties":{"breakdown":{"type":"object"}}}}`, oracle.TierFull},
		{"strategy responseJsonSchema", `{"responseMimeType":"application/json","responseJsonSchema":{"type":"object","properties":{"strategy":{"type":"object"}}}}`, oracle.TierStrategy},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := `{"contents":[{"parts":[{"text":"Should I sell jam?"}]}],"generationConfig":` + c.config + `}`
			resp, b := f.do(t, http.MethodPost, generatePath, testKey, body)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			var r response
			if err := json.Unmarshal(b, &r); err != nil {
				t.Fatal(err)
			}
			checkDocument(t, c.tier, r.Candidates[0].Content.Parts[0].Text)
			calls := f.fake.Calls()
			if got := calls[len(calls)-1].Tier; got != c.tier {
				t.Errorf("recorded tier %q, want %q", got, c.tier)
			}
		})
	}
}

func TestCallsRecordTheRequestButNeverTheKey(t *testing.T) {
	f := newFixture(t)
	f.generate(t, "You are the Oracle.", "Should I open a bakery?", oracle.TierFull)
	f.do(t, http.MethodPost, generatePath, fakegemini.InvalidKey, requestBody(t, "s", "u", oracle.TierQuick))

	resp, raw := f.do(t, http.MethodGet, "/_calls", "", "")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /_calls: %d", resp.StatusCode)
	}
	if strings.Contains(string(raw), testKey) || strings.Contains(string(raw), fakegemini.InvalidKey) {
		t.Errorf("/_calls holds an API key: %s", raw)
	}
	var calls []fakegemini.Call
	if err := json.Unmarshal(raw, &calls); err != nil {
		t.Fatal(err)
	}
	if len(calls) != 2 {
		t.Fatalf("got %d calls, want 2", len(calls))
	}
	c := calls[0]
	g := c.GenerationConfig
	if !c.Time.Equal(fixedNow) || c.Model != "gemini-2.5-flash" || !c.APIKeyPresent || c.Status != http.StatusOK || c.Tier != oracle.TierFull {
		t.Errorf("call = %+v", c)
	}
	if c.SystemInstruction != "You are the Oracle." || c.UserText != "Should I open a bakery?" {
		t.Errorf("system, user = %q, %q", c.SystemInstruction, c.UserText)
	}
	if g.Temperature == nil || *g.Temperature != 0 || g.TopK == nil || *g.TopK != 1 || g.CandidateCount == nil || *g.CandidateCount != 1 ||
		g.Seed == nil || *g.Seed != 42 || g.ResponseMIMEType != "application/json" || !strings.Contains(string(g.ResponseSchema), `"breakdown"`) {
		t.Errorf("generation config = %+v", g)
	}
	if calls[1].Status != http.StatusBadRequest || !calls[1].APIKeyPresent {
		t.Errorf("invalid key call = %+v, want status 400 with a key present", calls[1])
	}

	if resp, _ := f.do(t, http.MethodDelete, "/_calls", "", ""); resp.StatusCode != http.StatusNoContent {
		t.Errorf("DELETE /_calls: %d", resp.StatusCode)
	}
	if n := len(f.fake.Calls()); n != 0 {
		t.Errorf("%d calls after DELETE, want 0", n)
	}
}

func TestControlIsValidated(t *testing.T) {
	f := newFixture(t)
	cases := []string{
		`{"calls":-1}`,
		`{"calls":10001}`,
		`{"latency_ms":-5}`,
		`{"status":418}`,
		`{"status":500,"retry_after_s":3}`,
		`{"status":429,"retry_after_s":-1}`,
		`{"verdict":"green"}`,
		`{"verdict":"PURPLE"}`,
		`{"leak_terms":[""]}`,
		`{"hang":true,"status":500}`,
		`{"malformed":true,"fenced":true}`,
		`{"blocked":true,"fenced":true}`,
		`{"lag":5}`,
		`{"hang":true} {"hang":false}`,
		`[]`,
		`{"status":503,"then":{"status":418}}`,
		`{"status":503,"then":{"status":500,"then":{"status":503}}}`,
	}
	for _, body := range cases {
		t.Run(body, func(t *testing.T) {
			resp, b := f.do(t, http.MethodPost, "/_control", "", body)
			wantGoogleError(t, resp, b, http.StatusBadRequest, "INVALID_ARGUMENT")
		})
	}
	// None of them changed anything.
	f.generate(t, "s", "u", oracle.TierQuick)
}

func TestScenarioAppliesToTheNextCalls(t *testing.T) {
	f := newFixture(t)
	body := requestBody(t, "s", "Should I open a bakery?", oracle.TierQuick)

	resp, b := f.do(t, http.MethodPost, "/_control", "", `{"status":503,"calls":2}`)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"calls":2`) {
		t.Fatalf("control: %d %s", resp.StatusCode, b)
	}
	for range 2 {
		resp, b := f.do(t, http.MethodPost, generatePath, testKey, body)
		wantGoogleError(t, resp, b, http.StatusServiceUnavailable, "UNAVAILABLE")
	}
	if resp, b := f.do(t, http.MethodPost, generatePath, testKey, body); resp.StatusCode != http.StatusOK {
		t.Errorf("third call: status %d: %s, want 200", resp.StatusCode, b)
	}

	// A scenario without calls applies once; {} resets a pending one.
	f.control(t, `{"status":500}`)
	resp, b = f.do(t, http.MethodPost, generatePath, testKey, body)
	wantGoogleError(t, resp, b, http.StatusInternalServerError, "INTERNAL")
	f.control(t, `{"status":500,"calls":5}`)
	f.control(t, `{}`)
	if resp, b := f.do(t, http.MethodPost, generatePath, testKey, body); resp.StatusCode != http.StatusOK {
		t.Errorf("after reset: status %d: %s, want 200", resp.StatusCode, b)
	}

	// Then follows once the scenario's calls are used up, for its own.
	f.control(t, `{"status":500,"then":{"status":503,"calls":2}}`)
	resp, b = f.do(t, http.MethodPost, generatePath, testKey, body)
	wantGoogleError(t, resp, b, http.StatusInternalServerError, "INTERNAL")
	for range 2 {
		resp, b := f.do(t, http.MethodPost, generatePath, testKey, body)
		wantGoogleError(t, resp, b, http.StatusServiceUnavailable, "UNAVAILABLE")
	}
	if resp, b := f.do(t, http.MethodPost, generatePath, testKey, body); resp.StatusCode != http.StatusOK {
		t.Errorf("after then: status %d: %s, want 200", resp.StatusCode, b)
	}
}

func TestRateLimitLooksLikeGoogles(t *testing.T) {
	f := newFixture(t)
	body := requestBody(t, "s", "u", oracle.TierQuick)
	cases := []struct {
		scenario, retryAfter, retryDelay string
	}{
		{`{"status":429}`, "7", "7s"},
		{`{"status":429,"retry_after_s":30}`, "30", "30s"},
		{`{"status":429,"retry_after_s":0}`, "", ""},
	}
	for _, c := range cases {
		t.Run(c.scenario, func(t *testing.T) {
			f.control(t, c.scenario)
			resp, b := f.do(t, http.MethodPost, generatePath, testKey, body)
			e := wantGoogleError(t, resp, b, http.StatusTooManyRequests, "RESOURCE_EXHAUSTED")
			if got := resp.Header.Get("Retry-After"); got != c.retryAfter {
				t.Errorf("Retry-After = %q, want %q", got, c.retryAfter)
			}
			delay := ""
			for _, d := range e.Error.Details {
				if d["@type"] == "type.googleapis.com/google.rpc.RetryInfo" {
					delay, _ = d["retryDelay"].(string)
				}
			}
			if delay != c.retryDelay {
				t.Errorf("RetryInfo.retryDelay = %q, want %q (details %v)", delay, c.retryDelay, e.Error.Details)
			}
		})
	}
}

func TestLatencyGoesThroughTheSleepHook(t *testing.T) {
	f := newFixture(t)
	f.control(t, `{"latency_ms":1500,"calls":2}`)
	for range 3 {
		f.generate(t, "s", "u", oracle.TierQuick)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if want := []time.Duration{1500 * time.Millisecond, 1500 * time.Millisecond}; fmt.Sprint(f.slept) != fmt.Sprint(want) {
		t.Errorf("slept %v, want %v", f.slept, want)
	}
}

func TestBlockedPrompt(t *testing.T) {
	f := newFixture(t)
	f.control(t, `{"blocked":true}`)
	resp, b := f.do(t, http.MethodPost, generatePath, testKey, requestBody(t, "s", "u", oracle.TierQuick))
	var r response
	if err := json.Unmarshal(b, &r); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	if len(r.Candidates) != 0 || r.PromptFeedback == nil || r.PromptFeedback.BlockReason != "SAFETY" {
		t.Errorf("want no candidate and blockReason SAFETY, got %s", b)
	}
}

// TestConcurrentCallsShareAScenario checks, under -race, that a scenario
// for n calls is used by exactly n of many concurrent requests.
func TestConcurrentCallsShareAScenario(t *testing.T) {
	f := newFixture(t)
	f.control(t, `{"status":500,"calls":7}`)
	body := requestBody(t, "s", "u", oracle.TierStrategy)
	var wg sync.WaitGroup
	statuses := make([]int, 20)
	for i := range statuses {
		wg.Go(func() {
			req, err := http.NewRequest(http.MethodPost, f.url+generatePath, strings.NewReader(body))
			if err != nil {
				return
			}
			req.Header.Set("x-goog-api-key", testKey)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return
			}
			resp.Body.Close()
			statuses[i] = resp.StatusCode
		})
	}
	wg.Wait()
	count := map[int]int{}
	for _, s := range statuses {
		count[s]++
	}
	if count[http.StatusInternalServerError] != 7 || count[http.StatusOK] != 13 {
		t.Errorf("statuses %v, want 7 × 500 and 13 × 200", count)
	}
	if n := len(f.fake.Calls()); n != 20 {
		t.Errorf("%d calls recorded, want 20", n)
	}
}

// A rotation: once told over /_key to accept only the new key, the fake
// refuses the old one on both endpoints as Google refuses an unknown key,
// and accepts the new one; an empty key accepts any again.
func TestAcceptOnlyOneKey(t *testing.T) {
	f := newFixture(t)
	body := requestBody(t, "system", "Should I open a bakery?", oracle.TierQuick)
	if resp, b := f.do(t, http.MethodPost, "/_key", "", `{"accepted":"new-key"}`); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("POST /_key: %d %s", resp.StatusCode, b)
	}
	for _, path := range []string{generatePath, modelPath} {
		method := http.MethodPost
		b := body
		if path == modelPath {
			method, b = http.MethodGet, ""
		}
		resp, raw := f.do(t, method, path, testKey, b)
		e := wantGoogleError(t, resp, raw, http.StatusBadRequest, "INVALID_ARGUMENT")
		if len(e.Error.Details) == 0 || e.Error.Details[0]["reason"] != "API_KEY_INVALID" {
			t.Errorf("%s with the old key: details = %v, want API_KEY_INVALID", path, e.Error.Details)
		}
		if resp, raw := f.do(t, method, path, "new-key", b); resp.StatusCode != http.StatusOK {
			t.Errorf("%s with the new key: %d %s", path, resp.StatusCode, raw)
		}
	}
	if resp, b := f.do(t, http.MethodPost, "/_key", "", `{"accepted":""}`); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("POST /_key: %d %s", resp.StatusCode, b)
	}
	if resp, raw := f.do(t, http.MethodPost, generatePath, testKey, body); resp.StatusCode != http.StatusOK {
		t.Errorf("any key again: %d %s", resp.StatusCode, raw)
	}
	if resp, _ := f.do(t, http.MethodPost, "/_key", "", `{"acepted":"x"}`); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a misspelt control: %d, want 400", resp.StatusCode)
	}
}
