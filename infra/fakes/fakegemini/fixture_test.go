package fakegemini_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	fakegemini "42sisters.ai/oracle/infra/fakes/fakegemini"
	"42sisters.ai/oracle/shared/oracle"
)

const (
	testKey      = "AIzaSy-test-key-0123456789"
	generatePath = "/v1beta/models/gemini-2.5-flash:generateContent"
)

// Response schemas as the Oracle sends them, reduced to what the fake reads.
var schemas = map[oracle.Tier]string{
	oracle.TierQuick:    `{"type":"OBJECT","properties":{"verdict":{"type":"STRING"},"summary":{"type":"STRING"}}}`,
	oracle.TierFull:     `{"type":"OBJECT","properties":{"verdict":{"type":"STRING"},"summary":{"type":"STRING"},"breakdown":{"type":"OBJECT"}}}`,
	oracle.TierStrategy: `{"type":"OBJECT","properties":{"verdict":{"type":"STRING"},"summary":{"type":"STRING"},"breakdown":{"type":"OBJECT"},"strategy":{"type":"OBJECT"}}}`,
}

var fixedNow = time.Date(2026, 4, 16, 12, 0, 0, 0, time.UTC)

type fixture struct {
	fake *fakegemini.Server
	url  string

	mu    sync.Mutex
	slept []time.Duration
}

// newFixture serves a fake whose clock is fixed and whose latency sleeps
// are recorded instead of slept.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{}
	f.fake = fakegemini.New(fakegemini.Options{
		Clock: func() time.Time { return fixedNow },
		Sleep: func(_ context.Context, d time.Duration) error {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.slept = append(f.slept, d)
			return nil
		},
	})
	srv := httptest.NewServer(f.fake)
	t.Cleanup(srv.Close)
	f.url = srv.URL
	return f
}

// do sends a request and returns the response with its body read.
func (f *fixture) do(t *testing.T, method, path, key, body string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, f.url+path, bytes.NewBufferString(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("x-goog-api-key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return resp, b
}

// control posts a scenario and fails the test unless it is accepted.
func (f *fixture) control(t *testing.T, scenario string) {
	t.Helper()
	if resp, body := f.do(t, http.MethodPost, "/_control", "", scenario); resp.StatusCode != http.StatusOK {
		t.Fatalf("control %s: status %d: %s", scenario, resp.StatusCode, body)
	}
}

// requestBody is a generateContent request as google.golang.org/genai
// sends it.
func requestBody(t *testing.T, system, user string, tier oracle.Tier) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{
		"contents":          []any{map[string]any{"role": "user", "parts": []any{map[string]any{"text": user}}}},
		"systemInstruction": map[string]any{"role": "user", "parts": []any{map[string]any{"text": system}}},
		"generationConfig": map[string]any{
			"temperature": 0, "topP": 1, "topK": 1, "candidateCount": 1, "seed": 42,
			"responseMimeType": "application/json",
			"responseSchema":   json.RawMessage(schemas[tier]),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

type response struct {
	Candidates []struct {
		Content struct {
			Role  string `json:"role"`
			Parts []struct {
				Text string `json:"text"`
			} `json:"parts"`
		} `json:"content"`
		FinishReason string `json:"finishReason"`
	} `json:"candidates"`
	PromptFeedback *struct {
		BlockReason string `json:"blockReason"`
	} `json:"promptFeedback"`
	UsageMetadata struct {
		PromptTokenCount     int `json:"promptTokenCount"`
		CandidatesTokenCount int `json:"candidatesTokenCount"`
		TotalTokenCount      int `json:"totalTokenCount"`
	} `json:"usageMetadata"`
	ModelVersion string `json:"modelVersion"`
	ResponseID   string `json:"responseId"`
}

// generate sends a verdict request that must succeed and returns the
// model's text.
func (f *fixture) generate(t *testing.T, system, user string, tier oracle.Tier) string {
	t.Helper()
	resp, body := f.do(t, http.MethodPost, generatePath, testKey, requestBody(t, system, user, tier))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("generate: status %d: %s", resp.StatusCode, body)
	}
	var r response
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("generate: decode %s: %v", body, err)
	}
	if len(r.Candidates) != 1 || len(r.Candidates[0].Content.Parts) != 1 {
		t.Fatalf("generate: want one candidate with one part, got %s", body)
	}
	return r.Candidates[0].Content.Parts[0].Text
}

type googleError struct {
	Error struct {
		Code    int              `json:"code"`
		Message string           `json:"message"`
		Status  string           `json:"status"`
		Details []map[string]any `json:"details"`
	} `json:"error"`
}

// wantGoogleError checks that a response is Google's error JSON with the
// given HTTP status and google.rpc status.
func wantGoogleError(t *testing.T, resp *http.Response, body []byte, code int, status string) googleError {
	t.Helper()
	var e googleError
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatalf("error body is not JSON: %s", body)
	}
	if resp.StatusCode != code || e.Error.Code != code || e.Error.Status != status || e.Error.Message == "" {
		t.Fatalf("got HTTP %d %+v, want %d %s with a message", resp.StatusCode, e.Error, code, status)
	}
	return e
}
