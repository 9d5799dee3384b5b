package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"

	"42sisters.ai/oracle/shared/httpapi"
	"42sisters.ai/oracle/shared/obs"
)

// The samples in events/pages stay valid: each renders its page.
func TestSampleEvents(t *testing.T) {
	h := &Handler{Site: "42 Sisters AI", Support: "oracle@42sisters.ai", Log: obs.NewLogger(io.Discard, "ERROR")}
	files, err := filepath.Glob("../../events/pages/*.json")
	if err != nil || len(files) != 3 {
		t.Fatalf("samples %v %v", files, err)
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
		resp, err := h.Handle(context.Background(), req)
		if err != nil || resp.StatusCode != 200 || resp.Headers["Content-Security-Policy"] == "" {
			t.Fatalf("%s: %d %v", file, resp.StatusCode, err)
		}
	}
}
