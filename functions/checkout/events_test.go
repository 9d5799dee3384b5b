package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"42sisters.ai/oracle/shared/httpapi"
)

// The samples in events/checkout stay valid.
func TestSampleEvents(t *testing.T) {
	want := map[string]int{"create-quick.json": 200, "create-strategy-referral.json": 200, "invalid-tier.json": 400, "preflight.json": 204}
	files, err := filepath.Glob("../../events/checkout/*.json")
	if err != nil || len(files) != len(want) {
		t.Fatalf("samples %v %v: every sample needs an expectation here", files, err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			f := newFixture(t, "sk_test_checkout")
			f.h.CORS.Origins = []string{"http://localhost:3000"}
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var r httpapi.Request
			if err := json.Unmarshal(b, &r); err != nil {
				t.Fatal(err)
			}
			if resp := f.call(t, r); resp.StatusCode != want[filepath.Base(file)] {
				t.Fatalf("got %d %s", resp.StatusCode, resp.Body)
			}
		})
	}
}
