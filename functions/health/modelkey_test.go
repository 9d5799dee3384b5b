package main

import (
	"context"
	"net/http/httptest"
	"testing"

	fakegemini "42sisters.ai/oracle/infra/fakes/fakegemini"
	"42sisters.ai/oracle/shared/geminikey"
	"42sisters.ai/oracle/shared/health"
	"42sisters.ai/oracle/shared/secret"
)

// TestTheModelKeyIsChecked: the health job checks the Gemini key with one
// plain HTTP call (the fake Gemini, over HTTP). Accepted, the check passes;
// refused, it is critical; a model that does not answer is a warning only,
// since an outage is the circuit's to judge.
func TestTheModelKeyIsChecked(t *testing.T) {
	srv := httptest.NewServer(fakegemini.New(fakegemini.Options{}))
	defer srv.Close()
	down := httptest.NewServer(nil)
	down.Close()
	for _, tc := range []struct {
		name string
		key  string
		url  string
		want health.Status
	}{
		{"accepted", "AIzaSy-test-key-0123456789", srv.URL, health.OK},
		{"refused", fakegemini.InvalidKey, srv.URL, health.Critical},
		{"no answer", "AIzaSy-test-key-0123456789", down.URL, health.Warn},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, err := geminikey.New(geminikey.Options{Key: secret.Static(tc.key), BaseURL: tc.url})
			if err != nil {
				t.Fatal(err)
			}
			status, detail, err := modelKeyCheck(k).Run(context.Background(), &health.Record{})
			if err != nil || status != tc.want {
				t.Fatalf("model_key = %s (%q), %v; want %s", status, detail, err, tc.want)
			}
		})
	}
}
