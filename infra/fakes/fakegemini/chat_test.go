package fakegemini_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	fakegemini "42sisters.ai/oracle/infra/fakes/fakegemini"
	"42sisters.ai/oracle/shared/prompt"
	"42sisters.ai/oracle/shared/sosfilter"
)

// chatBody is a chat pass's request as the gemini client sends it: free
// text, no schema.
func chatBody(t *testing.T, system, user string) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{
		"contents":          []any{map[string]any{"role": "user", "parts": []any{map[string]any{"text": user}}}},
		"systemInstruction": map[string]any{"role": "user", "parts": []any{map[string]any{"text": system}}},
		"generationConfig":  map[string]any{"temperature": 0.7, "topP": 0.95, "candidateCount": 1, "seed": 7, "responseMimeType": "text/plain", "maxOutputTokens": 800},
	})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// chat sends a chat pass and returns its status and text.
func (f *fixture) chat(t *testing.T, pass prompt.ChatPass, user string) (int, string) {
	t.Helper()
	resp, body := f.do(t, http.MethodPost, generatePath, testKey, chatBody(t, prompt.ChatSystem(pass, false), user))
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, ""
	}
	var r response
	if err := json.Unmarshal(body, &r); err != nil || len(r.Candidates) != 1 {
		t.Fatalf("chat: %s: %v", body, err)
	}
	if r.UsageMetadata.CandidatesTokenCount == 0 || r.UsageMetadata.PromptTokenCount == 0 {
		t.Errorf("chat: no usage counted: %+v", r.UsageMetadata)
	}
	return resp.StatusCode, r.Candidates[0].Content.Parts[0].Text
}

// Each chat pass is answered in prose of its own kind, the same prompt the
// same way, and recorded with its pass and no tier; every answer passes
// the content filter untouched, so that only leak_terms put a listed word
// in a reply.
func TestChatPassesAreAnsweredInProse(t *testing.T) {
	f := newFixture(t)
	filter, err := sosfilter.New()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for i := range 60 {
		for _, pass := range prompt.ChatPasses() {
			user := fmt.Sprintf("message %d", i)
			status, text := f.chat(t, pass, user)
			if status != http.StatusOK || strings.TrimSpace(text) == "" || strings.HasPrefix(text, "{") {
				t.Fatalf("%s: %d %q", pass, status, text)
			}
			if want := fakegemini.ChatAnswer(prompt.ChatSystem(pass, false), user); text != want {
				t.Fatalf("%s: the answer %q differs from ChatAnswer %q", pass, text, want)
			}
			if r := filter.Text(text); r.Action != sosfilter.Pass {
				t.Errorf("%s: the filter %s %q (%v)", pass, r.Action, text, r.Terms())
			}
			seen[text] = true
		}
	}
	if len(seen) < 60 {
		t.Errorf("only %d different answers to 180 prompts", len(seen))
	}
	calls := f.fake.Calls()
	for i, c := range calls {
		if want := string(prompt.ChatPasses()[i%3]); c.Pass != want || c.Tier != "" {
			t.Fatalf("call %d recorded pass %q tier %q, want %q and none", i, c.Pass, c.Tier, want)
		}
	}
}

// A scenario with a pass applies only to that pass's requests, which alone
// use it up; without one it applies to every request.
func TestChatScenarioTargetsAPass(t *testing.T) {
	f := newFixture(t)
	f.control(t, `{"leak_terms":["CSDM"],"pass":"merge","calls":1}`)
	for _, pass := range []prompt.ChatPass{prompt.PassBuild, prompt.PassTest} {
		if _, text := f.chat(t, pass, "m"); strings.Contains(text, "CSDM") {
			t.Fatalf("%s leaked: %q", pass, text)
		}
	}
	if _, text := f.chat(t, prompt.PassMerge, "m"); !strings.Contains(text, "CSDM") {
		t.Fatalf("the merge did not leak: %q", text)
	}
	if _, text := f.chat(t, prompt.PassMerge, "m"); strings.Contains(text, "CSDM") {
		t.Fatalf("the scenario outlived its calls: %q", text)
	}

	f.control(t, `{"status":503,"pass":"test","calls":2}`)
	if status, _ := f.chat(t, prompt.PassBuild, "m"); status != http.StatusOK {
		t.Fatalf("build failed with %d", status)
	}
	if status, _ := f.chat(t, prompt.PassTest, "m"); status != http.StatusServiceUnavailable {
		t.Fatalf("test answered %d", status)
	}

	f.control(t, `{"status":500,"calls":1}`)
	if status, _ := f.chat(t, prompt.PassBuild, "m"); status != http.StatusInternalServerError {
		t.Fatalf("a scenario without a pass did not apply to a chat pass: %d", status)
	}
	if resp, body := f.do(t, http.MethodPost, "/_control", "", `{"pass":"other","status":500}`); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("an unknown pass was accepted: %d %s", resp.StatusCode, body)
	}
}

// The fake tells the passes apart as shared/prompt writes them: its pass
// names are the prompt's, and each stance's marker is in its own
// instructions and in no other pass's, the merge written again included.
func TestStanceMarkersFollowThePrompts(t *testing.T) {
	names := []string{fakegemini.PassBuild, fakegemini.PassTest, fakegemini.PassMerge}
	for i, pass := range prompt.ChatPasses() {
		if string(pass) != names[i] {
			t.Errorf("pass %q is %q in the fake", pass, names[i])
		}
		for _, again := range []bool{false, true} {
			system := prompt.ChatSystem(pass, again)
			for stance, marker := range fakegemini.StanceMarkers {
				if strings.Contains(system, marker) != (stance == string(pass)) {
					t.Errorf("%s (again %v): the %s marker %q found %v", pass, again, stance, marker, !(stance == string(pass)))
				}
			}
		}
	}
}
