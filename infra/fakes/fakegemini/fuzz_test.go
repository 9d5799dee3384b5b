package fakegemini_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	fakegemini "42sisters.ai/oracle/infra/fakes/fakegemini"
)

// FuzzGenerateContent feeds arbitrary paths and bodies to the fake: every
// answer must be JSON, a success or Google's error, never a panic or a 5xx.
func FuzzGenerateContent(f *testing.F) {
	f.Add(generatePath, `{"contents":[{"parts":[{"text":"Should I open a bakery?"}]}]}`)
	f.Add(generatePath, `{"contents":[{"role":"user","parts":[{"text":"x"}]}],"systemInstruction":{"parts":[{"text":"s"}]},"generationConfig":{"temperature":0,"topK":1,"candidateCount":1,"seed":7,"responseMimeType":"application/json","responseSchema":{"properties":{"strategy":{}}}}}`)
	f.Add(generatePath, `{"contents":[{"parts":[{"text":"\u0000\ud800"}]}],"generationConfig":{"responseMimeType":"application/json","responseJsonSchema":{"properties":null}}}`)
	f.Add("/v1beta/models/:generateContent", `{}`)
	f.Add("/_control", `{"leak_terms":["Φ"],"calls":3}`)
	f.Fuzz(func(t *testing.T, path, body string) {
		if !strings.HasPrefix(path, "/") {
			t.Skip("an HTTP request path starts with /")
		}
		srv := fakegemini.New(fakegemini.Options{})
		req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
		req.URL.Path = path
		req.Header.Set("x-goog-api-key", testKey)
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("POST %q %q: status %d: %s", path, body, rec.Code, rec.Body)
		}
		if rec.Code == http.StatusMovedPermanently || rec.Code == http.StatusTemporaryRedirect {
			return // ServeMux redirects an unclean path such as /a/../b
		}
		if !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("POST %q %q: invalid JSON: %s", path, body, rec.Body)
		}
	})
}
