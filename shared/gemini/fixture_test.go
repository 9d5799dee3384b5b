package gemini_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"google.golang.org/genai"

	fakegemini "42sisters.ai/oracle/infra/fakes/fakegemini"
	"42sisters.ai/oracle/shared/gemini"
	"42sisters.ai/oracle/shared/oracle"
)

const (
	testKey = "AIzaSy-secret-test-key-0123456789"
	// The prompt's texts are distinctive so that a leak into an error
	// message or a log is easy to find.
	testSystem = "SYSTEM-INSTRUCTION-7f3a: you judge ideas."
	testUser   = "PROMPT-TEXT-91c2: should I open a bakery in my village?"
	testSeed   = int32(20260416)
)

// schema builds the response schema of a tier, as shared/prompt will.
func schema(tier oracle.Tier) *genai.Schema {
	str := func() *genai.Schema { return &genai.Schema{Type: genai.TypeString} }
	enum := func(values ...string) *genai.Schema {
		return &genai.Schema{Type: genai.TypeString, Format: "enum", Enum: values}
	}
	top := &genai.Schema{
		Type: genai.TypeObject,
		Properties: map[string]*genai.Schema{
			"verdict": enum("GREEN", "AMBER", "RED", "NULL"),
			"summary": str(),
		},
		Required:         []string{"verdict", "summary"},
		PropertyOrdering: []string{"verdict", "summary"},
	}
	if tier == oracle.TierQuick {
		return top
	}
	breakdown := &genai.Schema{Type: genai.TypeObject, Properties: map[string]*genai.Schema{}, Required: oracle.Dimensions, PropertyOrdering: oracle.Dimensions}
	for _, dim := range oracle.Dimensions {
		breakdown.Properties[dim] = &genai.Schema{
			Type:       genai.TypeObject,
			Properties: map[string]*genai.Schema{"verdict": enum("GREEN", "AMBER", "RED"), "analysis": str()},
			Required:   []string{"verdict", "analysis"},
		}
	}
	top.Properties["breakdown"] = breakdown
	top.Required = append(top.Required, "breakdown")
	top.PropertyOrdering = append(top.PropertyOrdering, "breakdown")
	if tier == oracle.TierFull {
		return top
	}
	top.Properties["strategy"] = &genai.Schema{
		Type: genai.TypeObject,
		Properties: map[string]*genai.Schema{
			"next_step":   str(),
			"alternative": str(),
			"tests":       {Type: genai.TypeArray, Items: str(), MinItems: genai.Ptr[int64](3), MaxItems: genai.Ptr[int64](3)},
		},
		Required: []string{"next_step", "alternative", "tests"},
	}
	top.Required = append(top.Required, "strategy")
	top.PropertyOrdering = append(top.PropertyOrdering, "strategy")
	return top
}

// request is a verdict request for a tier.
func request(tier oracle.Tier) gemini.Request {
	return gemini.Request{System: testSystem, User: testUser, Schema: schema(tier), Seed: testSeed}
}

type fixture struct {
	fake *fakegemini.Server
	url  string
}

// newFixture serves a fake Gemini over HTTP; opts configure the fake.
func newFixture(t *testing.T, opts fakegemini.Options) *fixture {
	t.Helper()
	fake := fakegemini.New(opts)
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	return &fixture{fake: fake, url: srv.URL}
}

// client returns a client of the fake with the test key and a 5 s timeout
// unless o says otherwise.
func (f *fixture) client(t *testing.T, o gemini.Options) *gemini.Client {
	t.Helper()
	if o.APIKey == "" {
		o.APIKey = testKey
	}
	if o.Timeout == 0 {
		o.Timeout = 5 * time.Second
	}
	o.BaseURL = f.url
	c, err := gemini.New(context.Background(), o)
	if err != nil {
		t.Fatalf("new client: %v", err)
	}
	return c
}

// control sets the fake's scenario for the next calls.
func (f *fixture) control(t *testing.T, scenario string) {
	t.Helper()
	resp, err := http.Post(f.url+"/_control", "application/json", strings.NewReader(scenario))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("control %s: status %d: %s", scenario, resp.StatusCode, b)
	}
}

// rawCalls returns the body of GET /_calls.
func (f *fixture) rawCalls(t *testing.T) string {
	t.Helper()
	resp, err := http.Get(f.url + "/_calls")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// parse strictly decodes a reply's text as a verdict document of the tier's
// shape.
func parse(t *testing.T, tier oracle.Tier, text string) oracle.Analysis {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(text))
	dec.DisallowUnknownFields()
	var a oracle.Analysis
	if err := dec.Decode(&a); err != nil || dec.More() {
		t.Fatalf("reply is not one verdict document (%v): %s", err, text)
	}
	if _, err := oracle.ParseVerdict(string(a.Verdict)); err != nil || a.Summary == "" {
		t.Errorf("verdict %q, summary %q", a.Verdict, a.Summary)
	}
	switch tier {
	case oracle.TierQuick:
		if a.Breakdown != nil || a.Strategy != nil {
			t.Errorf("a quick take has a breakdown or strategy: %s", text)
		}
	case oracle.TierFull, oracle.TierStrategy:
		if len(a.Breakdown) != len(oracle.Dimensions) {
			t.Errorf("breakdown has %d dimensions, want %d", len(a.Breakdown), len(oracle.Dimensions))
		}
		for _, dim := range oracle.Dimensions {
			note := a.Breakdown[dim]
			if note.Analysis == "" || (note.Verdict != oracle.VerdictGreen && note.Verdict != oracle.VerdictAmber && note.Verdict != oracle.VerdictRed) {
				t.Errorf("dimension %s = %+v", dim, note)
			}
		}
		if tier == oracle.TierFull && a.Strategy != nil {
			t.Errorf("a full breakdown has a strategy: %s", text)
		}
		if tier == oracle.TierStrategy && (a.Strategy == nil || a.Strategy.NextStep == "" || a.Strategy.Alternative == "" || len(a.Strategy.Tests) != 3) {
			t.Errorf("strategy = %+v, want a next step, an alternative and 3 tests", a.Strategy)
		}
	}
	return a
}

// sameJSON reports whether two JSON texts hold the same value.
func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		t.Fatalf("decode %s: %v", a, err)
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	ca, _ := json.Marshal(va)
	cb, _ := json.Marshal(vb)
	return bytes.Equal(ca, cb)
}
