package runtimeapi_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"42sisters.ai/oracle/infra/local/runtimeapi"
	"42sisters.ai/oracle/infra/testkit"
)

// TestBusyWhileAnInvocationIsInFlight: a function is busy from the moment
// an environment takes an invocation until its answer has come back (here
// held on a server the handler calls, so the test knows it is in flight),
// and idle once Invoke has returned, the extension-less function having
// nothing left to do.
func TestBusyWhileAnInvocationIsInFlight(t *testing.T) {
	arrived, release := make(chan struct{}), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-release
		fmt.Fprint(w, "released")
	}))
	t.Cleanup(srv.Close)
	f := start(t, runtimeapi.Config{Instances: 1, Log: &testkit.Buffer{}})
	if f.Busy() {
		t.Fatal("busy before any invocation")
	}
	done := make(chan error, 1)
	go func() {
		_, err := f.Invoke(context.Background(), fmt.Appendf(nil, `{"do":"get","url":%q}`, srv.URL))
		done <- err
	}()
	<-arrived
	if !f.Busy() {
		t.Error("not busy while its invocation is in flight")
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if f.Busy() {
		t.Error("busy once its invocation has answered")
	}
}
