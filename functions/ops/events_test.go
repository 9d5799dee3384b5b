package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryActionHasASampleEvent: each action has a sample under
// events/ops/ (named for it), and every sample is a request the function
// reads whole, for an action it has.
func TestEveryActionHasASampleEvent(t *testing.T) {
	files, err := filepath.Glob("../../events/ops/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no sample events: %v", err)
	}
	sampled := map[string]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		var r Request
		if err := dec.Decode(&r); err != nil {
			t.Errorf("%s is no request: %v", f, err)
			continue
		}
		if _, ok := actions[r.Action]; !ok {
			t.Errorf("%s names the action %q, which does not exist", f, r.Action)
		}
		if name := strings.TrimSuffix(filepath.Base(f), ".json"); !strings.HasPrefix(name, r.Action) {
			t.Errorf("%s is named for another action than %q", f, r.Action)
		}
		if a := actions[r.Action]; a.changes && (r.AuthorisedBy == "" || r.Reason == "") {
			t.Errorf("%s changes something without authorised_by and reason", f)
		}
		sampled[r.Action] = true
	}
	for _, name := range Actions() {
		if !sampled[name] {
			t.Errorf("the action %s has no sample under events/ops/", name)
		}
	}
}
