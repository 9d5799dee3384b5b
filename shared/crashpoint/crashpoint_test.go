package crashpoint

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// In Lambda (no Variable) Reach is a nil check: nothing is asked, nothing
// allocated.
func TestReachDoesNothingInLambda(t *testing.T) {
	if a := fromEnv(func(k string) string {
		if k == "AWS_LAMBDA_RUNTIME_API" {
			return "127.0.0.1:9001"
		}
		return ""
	}); a != nil {
		t.Fatalf("announcer %+v without %s, want none", a, Variable)
	}
	if local != nil {
		t.Fatalf("the test process has an announcer: %+v", local)
	}
	ctx := context.Background()
	if n := testing.AllocsPerRun(100, func() { Reach(ctx, MailerSent) }); n != 0 {
		t.Errorf("Reach allocates %v times per call in Lambda, want 0", n)
	}
}

// Under the local Runtime API each point is posted to the process's own
// endpoint, and Reach returns once it is answered.
func TestReachAsksTheLocalRuntime(t *testing.T) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Method+" "+r.URL.Path)
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	env := map[string]string{Variable: "on", "AWS_LAMBDA_RUNTIME_API": strings.TrimPrefix(srv.URL, "http://")}
	a := fromEnv(func(k string) string { return env[k] })
	if a == nil {
		t.Fatal("no announcer under the local Runtime API")
	}
	for _, p := range Points() {
		a.reach(context.Background(), p)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != len(Points()) {
		t.Fatalf("posted %q, want one post per point", got)
	}
	for i, p := range Points() {
		if want := "POST " + Path + string(p); got[i] != want {
			t.Errorf("post %d = %q, want %q", i, got[i], want)
		}
	}
}

// A local runtime that does not answer leaves the function going on.
func TestReachGoesOnWhenTheRuntimeIsGone(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	addr := strings.TrimPrefix(srv.URL, "http://")
	srv.Close()
	env := map[string]string{Variable: "on", "AWS_LAMBDA_RUNTIME_API": addr}
	a := fromEnv(func(k string) string { return env[k] })
	a.reach(context.Background(), GeneratorLeased)
}
