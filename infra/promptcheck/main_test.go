package main

import (
	"bytes"
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	fakegemini "42sisters.ai/oracle/infra/fakes/fakegemini"
	"42sisters.ai/oracle/shared/gemini"
	"42sisters.ai/oracle/shared/prompt"
)

// VC-6 (GAP-H) on the fake model: the current prompt version's verdicts
// are filtered and the rate reported; a model that leaks is caught.
func TestContaminationRateOfTheCurrentPrompt(t *testing.T) {
	tests := []struct {
		name     string
		scenario string
		rate     float64
		terms    []string
	}{
		{name: "clean model", rate: 0},
		{name: "leaking model", scenario: `{"leak_terms":["CSDM"],"calls":51}`, rate: 1, terms: []string{"cat3.csdm"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(fakegemini.New(fakegemini.Options{}))
			t.Cleanup(srv.Close)
			if tc.scenario != "" {
				resp, err := srv.Client().Post(srv.URL+"/_control", "application/json", strings.NewReader(tc.scenario))
				if err != nil || resp.StatusCode != 200 {
					t.Fatalf("control: %v %v", resp, err)
				}
				resp.Body.Close()
			}
			client, err := gemini.New(context.Background(), gemini.Options{APIKey: "test-key", BaseURL: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			s, err := check(context.Background(), client, 51, &out)
			if err != nil {
				t.Fatal(err)
			}
			if s.Verdicts != 51 || s.Unreadable != 0 || s.Rate() != tc.rate {
				t.Fatalf("summary %+v (rate %v), want 51 verdicts at %v\n%s", s, s.Rate(), tc.rate, out.String())
			}
			for _, id := range tc.terms {
				if s.Terms[id] != 51 {
					t.Fatalf("%s in %d verdicts, want all", id, s.Terms[id])
				}
			}
			if !strings.Contains(out.String(), "prompt "+prompt.Version) || !strings.Contains(out.String(), "contamination rate") {
				t.Fatalf("report:\n%s", out.String())
			}
		})
	}
}

func TestCheckRefusesABadCount(t *testing.T) {
	for _, n := range []int{0, 3*len(submissions) + 1} {
		if _, err := check(context.Background(), nil, n, &bytes.Buffer{}); err == nil {
			t.Errorf("n=%d accepted", n)
		}
	}
}

// The chat's part of VC-6 on the fake model: each exchange's first reply
// is filtered and the rate reported; a model whose replies leak is caught
// even though the replier writes them again.
func TestChatContaminationRate(t *testing.T) {
	for _, tc := range []struct {
		name     string
		scenario string
		rate     float64
	}{
		{name: "clean model"},
		{name: "leaking replies", scenario: `{"leak_terms":["CSDM"],"pass":"merge","calls":1000}`, rate: 1},
		{name: "leaking notes only", scenario: `{"leak_terms":["CSDM"],"pass":"build","calls":1000}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(fakegemini.New(fakegemini.Options{}))
			t.Cleanup(srv.Close)
			if tc.scenario != "" {
				resp, err := srv.Client().Post(srv.URL+"/_control", "application/json", strings.NewReader(tc.scenario))
				if err != nil || resp.StatusCode != 200 {
					t.Fatalf("control: %v %v", resp, err)
				}
				resp.Body.Close()
			}
			client, err := gemini.New(context.Background(), gemini.Options{APIKey: "test-key", BaseURL: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			s, err := checkChat(context.Background(), client, minChatReplies, &out)
			if err != nil {
				t.Fatal(err)
			}
			if s.Replies != minChatReplies || s.Rate() != tc.rate {
				t.Fatalf("summary %+v (rate %v), want %d replies at %v\n%s", s, s.Rate(), minChatReplies, tc.rate, out.String())
			}
			if !strings.Contains(out.String(), "chat prompt "+prompt.ChatVersion) || !strings.Contains(out.String(), "chat contamination rate") {
				t.Fatalf("report:\n%s", out.String())
			}
		})
	}
	if _, err := checkChat(context.Background(), nil, len(chatMessages)+1, &bytes.Buffer{}); err == nil {
		t.Error("a count above the messages was accepted")
	}
}
