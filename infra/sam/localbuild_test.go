package sam

import (
	"strings"
	"testing"
)

// TestLocalCommandBuildsAsTheFunctions: make run and make invoke build the
// local stack's command with cgo off, as the stack builds the functions
// (infra/local/stack's build): with cgo on, net and every package above it
// (the AWS SDK among them) compile differently, and a first make run
// compiled them twice, once for the command and once for the functions.
func TestLocalCommandBuildsAsTheFunctions(t *testing.T) {
	const want = "CGO_ENABLED=0 go build -o .build/local ./infra/local"
	for _, target := range [][]string{{"run"}, {"invoke", "FN=WebhookFunction", "EVENT=e.json"}} {
		got := makeDryRun(t, target...)
		if !strings.Contains(got, want) {
			t.Errorf("make %s does not run %q; it runs:\n%s", target[0], want, got)
		}
		if strings.Count(got, "go build ") != 1 {
			t.Errorf("make %s runs more than one go build before the stack's own:\n%s", target[0], got)
		}
	}
}
