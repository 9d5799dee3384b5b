package fakegemini_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"

	fakegemini "42sisters.ai/oracle/infra/fakes/fakegemini"
	"42sisters.ai/oracle/shared/oracle"
)

const modelPath = "/v1beta/models/gemini-2.5-flash"

func TestGetModelDescribesIt(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		path, key, name, display string
	}{
		{modelPath, testKey, "models/gemini-2.5-flash", "Gemini 2.5 Flash"},
		{"/v1beta/models/gemini-2.5-flash-lite", testKey, "models/gemini-2.5-flash-lite", "Gemini 2.5 Flash Lite"},
		{modelPath + "?key=" + testKey, "", "models/gemini-2.5-flash", "Gemini 2.5 Flash"},
	}
	for _, c := range cases {
		t.Run(c.path, func(t *testing.T) {
			resp, b := f.do(t, http.MethodGet, c.path, c.key, "")
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			var m struct {
				Name                       string   `json:"name"`
				Version                    string   `json:"version"`
				DisplayName                string   `json:"displayName"`
				SupportedGenerationMethods []string `json:"supportedGenerationMethods"`
			}
			dec := json.NewDecoder(bytes.NewReader(b))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&m); err != nil {
				t.Fatalf("decode %s: %v", b, err)
			}
			if m.Name != c.name || m.Version != "001" || m.DisplayName != c.display || len(m.SupportedGenerationMethods) != 1 || m.SupportedGenerationMethods[0] != "generateContent" {
				t.Errorf("model = %+v", m)
			}
		})
	}
}

func TestGetModelChecksTheKeyAsGenerateDoes(t *testing.T) {
	f := newFixture(t)
	body := requestBody(t, "s", "u", oracle.TierQuick)
	for _, key := range []string{"", fakegemini.InvalidKey} {
		getResp, getBody := f.do(t, http.MethodGet, modelPath, key, "")
		genResp, genBody := f.do(t, http.MethodPost, generatePath, key, body)
		if getResp.StatusCode != genResp.StatusCode || !bytes.Equal(getBody, genBody) {
			t.Errorf("key %q: GET model answered %d %s; generateContent %d %s", key, getResp.StatusCode, getBody, genResp.StatusCode, genBody)
		}
	}
	resp, b := f.do(t, http.MethodGet, modelPath, fakegemini.InvalidKey, "")
	e := wantGoogleError(t, resp, b, http.StatusBadRequest, "INVALID_ARGUMENT")
	if len(e.Error.Details) == 0 || e.Error.Details[0]["reason"] != "API_KEY_INVALID" {
		t.Errorf("invalid key: details = %v, want an ErrorInfo with reason API_KEY_INVALID", e.Error.Details)
	}
	resp, b = f.do(t, http.MethodGet, modelPath, "", "")
	wantGoogleError(t, resp, b, http.StatusForbidden, "PERMISSION_DENIED")
}

func TestGetModelRefusesBadNames(t *testing.T) {
	f := newFixture(t)
	for _, path := range []string{
		"/v1beta/models/bad%20model",
		"/v1beta/models/-leading-dash",
		"/v1beta/models/gemini-2.5-flash:countTokens",
	} {
		t.Run(path, func(t *testing.T) {
			resp, b := f.do(t, http.MethodGet, path, testKey, "")
			wantGoogleError(t, resp, b, http.StatusNotFound, "NOT_FOUND")
		})
	}
}

// Describing a model is not a generateContent request: it is not recorded
// and leaves a pending scenario for the next generation.
func TestGetModelIsNeitherACallNorAScenarioUse(t *testing.T) {
	f := newFixture(t)
	f.control(t, `{"status":500}`)
	for _, key := range []string{testKey, fakegemini.InvalidKey, ""} {
		f.do(t, http.MethodGet, modelPath, key, "")
	}
	if resp, b := f.do(t, http.MethodGet, modelPath, testKey, ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("GET model under a 500 scenario: status %d: %s", resp.StatusCode, b)
	}
	if n := len(f.fake.Calls()); n != 0 {
		t.Fatalf("%d calls recorded after describing the model, want 0", n)
	}
	if _, raw := f.do(t, http.MethodGet, "/_calls", "", ""); string(raw) != "[]" {
		t.Errorf("GET /_calls = %s, want []", raw)
	}
	resp, b := f.do(t, http.MethodPost, generatePath, testKey, requestBody(t, "s", "u", oracle.TierQuick))
	wantGoogleError(t, resp, b, http.StatusInternalServerError, "INTERNAL")
	if n := len(f.fake.Calls()); n != 1 {
		t.Errorf("%d calls recorded, want the 1 generation", n)
	}
}
