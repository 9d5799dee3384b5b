package x402client_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"42sisters.ai/oracle/infra/x402client"
)

func TestConformance(t *testing.T) {
	c := x402client.New(t)
	p := &mcpPayee{t: t, outputSchema: verdictOrPaymentRequired, stop: make(chan struct{})}
	cases := []struct {
		name    string
		handler http.Handler
		failed  string // an applicable scenario that fails, "": none
	}{
		{name: "the Go SDK's stateless server", handler: p.handler()},
		// A server behind a proxy sees the proxy's address, not a loopback
		// one, so the SDK's own DNS rebinding protection is off: it must
		// check Host and Origin itself.
		{name: "one that takes any Host", handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p.handler().ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, nil)))
		}), failed: "dns-rebinding-protection"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.handler)
			defer srv.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			r, err := c.Conformance(ctx, srv.URL+"/mcp")
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Scenarios) != len(x402client.Scenarios) {
				t.Fatalf("%d scenarios, want %d", len(r.Scenarios), len(x402client.Scenarios))
			}
			for _, s := range r.Scenarios {
				t.Logf("%-30s applies %-5v passed %-5v %s", s.Name, s.Applies, s.Passed, s.Why)
			}
			err = r.Err()
			if tc.failed == "" && err != nil {
				t.Fatalf("%v\n%s", err, r.Output)
			}
			if tc.failed != "" && (err == nil || !strings.Contains(err.Error(), tc.failed)) {
				t.Errorf("got %v, want %s failing", err, tc.failed)
			}
		})
	}
}
