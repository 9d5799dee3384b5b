package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"42sisters.ai/oracle/shared/httpapi"
)

// The samples in events/chat stay valid, each answered as its name says.
func TestSampleEvents(t *testing.T) {
	x := newHarness(t)
	x.h.Origin = "http://localhost:3000" // make run's site
	want := map[string]int{
		"page.json":                 200,
		"signin-request.json":       202,
		"signin-link-invalid.json":  400,
		"message-signed-out.json":   401,
		"message-cross-origin.json": 403,
		// The sign-in page's button posted from another site; the
		// erasure without a session.
		"signin-button-cross-site.json": 403,
		"account-erase-signed-out.json": 401,
	}
	files, err := filepath.Glob("../../events/chat/*.json")
	if err != nil || len(files) != len(want) {
		t.Fatalf("samples %v %v, want %d", files, err, len(want))
	}
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var req httpapi.Request
		if err := json.Unmarshal(b, &req); err != nil {
			t.Fatal(err)
		}
		resp, err := x.h.Handle(context.Background(), req)
		if err != nil || resp.StatusCode != want[filepath.Base(file)] {
			t.Errorf("%s: %d %v, want %d", file, resp.StatusCode, err, want[filepath.Base(file)])
		}
	}
}
