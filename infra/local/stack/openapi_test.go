package stack_test

import (
	"net/http"
	"testing"

	"42sisters.ai/oracle/infra/local/stack"
	"42sisters.ai/oracle/infra/testkit"
)

// apiChecker checks the exchanges with the stack's API against the
// OpenAPI document the stack itself serves (GET /openapi.json), so that
// the document cannot drift from the code. The local stack's own pages
// (/_local/) are no part of the API.
func apiChecker(t *testing.T, s *stack.Stack) *testkit.OpenAPIChecker {
	t.Helper()
	status, spec, hdr := send(t, http.DefaultClient, mustRequest(t, "GET", s.APIURL+"/openapi.json"))
	if status != http.StatusOK || hdr.Get("Cache-Control") != "public, max-age=300" {
		t.Fatalf("GET /openapi.json: %d %v", status, hdr)
	}
	c := testkit.NewOpenAPIChecker(t, spec)
	c.Unchecked = []string{"/_local/"}
	return c
}

// checkedAll fails the test unless every exchange named was checked.
func checkedAll(t *testing.T, c *testkit.OpenAPIChecker, want ...string) {
	t.Helper()
	got := c.Checked()
	for _, w := range want {
		if got[w] == 0 {
			t.Errorf("no %s was checked against the OpenAPI document (checked: %v)", w, got)
		}
	}
}
