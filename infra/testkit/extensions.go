package testkit

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// ExtensionsAPI is Lambda's Extensions API as an internal extension uses
// it (shared/tracing's), in the test's process: it registers one
// extension, unless Refuse is set, and holds each of its requests for the
// next event until Invoke starts an invocation. Note, when set, is told
// "register" and "next" as they happen.
type ExtensionsAPI struct {
	*httptest.Server
	Refuse bool
	Note   func(event string)

	invokes chan string
	nexts   chan struct{}
	done    chan struct{}
}

// NewExtensionsAPI starts the API; it stops with the test.
func NewExtensionsAPI(tb testing.TB) *ExtensionsAPI {
	api := &ExtensionsAPI{invokes: make(chan string), nexts: make(chan struct{}, 8), done: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /2020-01-01/extension/register", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if api.Refuse || r.Header.Get("Lambda-Extension-Name") == "" || !strings.Contains(string(body), `"INVOKE"`) {
			http.Error(w, `{"errorType":"Extension.InvalidState"}`, http.StatusForbidden)
			return
		}
		api.note("register")
		w.Header().Set("Lambda-Extension-Identifier", "ext-1")
		_, _ = w.Write([]byte(`{"functionName":"test"}`))
	})
	mux.HandleFunc("GET /2020-01-01/extension/event/next", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Lambda-Extension-Identifier") != "ext-1" {
			http.Error(w, "unknown extension", http.StatusForbidden)
			return
		}
		api.note("next")
		api.nexts <- struct{}{}
		select {
		case id := <-api.invokes:
			_, _ = w.Write([]byte(`{"eventType":"INVOKE","requestId":"` + id + `","deadlineMs":0}`))
		case <-r.Context().Done():
		case <-api.done:
		}
	})
	api.Server = httptest.NewServer(mux)
	tb.Cleanup(api.Close)
	tb.Cleanup(func() { close(api.done) }) // first: the extension's last wait ends
	return api
}

func (api *ExtensionsAPI) note(event string) {
	if api.Note != nil {
		api.Note(event)
	}
}

// Addr is the API's host:port, as AWS_LAMBDA_RUNTIME_API gives it.
func (api *ExtensionsAPI) Addr() string { return strings.TrimPrefix(api.URL, "http://") }

// Invoke starts invocation id: the extension's waiting request for its
// next event is answered with its INVOKE.
func (api *ExtensionsAPI) Invoke(tb testing.TB, id string) {
	tb.Helper()
	select {
	case api.invokes <- id:
	case <-time.After(10 * time.Second):
		tb.Fatalf("%s: the extension is not waiting for an event", id)
	}
}

// WaitNext waits until the extension asks for its next event: its init,
// or its work on the invocation before, is done.
func (api *ExtensionsAPI) WaitNext(tb testing.TB) {
	tb.Helper()
	select {
	case <-api.nexts:
	case <-time.After(10 * time.Second):
		tb.Fatal("the extension never asked for its next event")
	}
}
