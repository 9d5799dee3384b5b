// Package tools finds the external programs that some tests need (moto
// server, stripe-mock), which `make tools` installs.
package tools

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// RequireEnv, when set (make test sets it), turns a missing tool into a test
// failure instead of a skip, so CI can never pass by skipping.
const RequireEnv = "ORACLE_REQUIRE_TOOLS"

// Find returns the path of a tool: on PATH or in the repository's
// .build/tools, where `make tools` installs Go tools.
func Find(tb testing.TB, name string) string {
	tb.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	_, file, _, _ := runtime.Caller(0)
	p := filepath.Join(filepath.Dir(file), "..", "..", ".build", "tools", name)
	if _, err := os.Stat(p); err == nil {
		return p
	}
	if os.Getenv(RequireEnv) != "" {
		tb.Fatalf("%s is not installed: run make tools", name)
	}
	tb.Skipf("%s is not installed: run make tools (make test always does)", name)
	return ""
}
