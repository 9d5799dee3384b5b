// Package echotest builds the echo test Lambda (infra/local/testdata/echo)
// that the local stack's tests run behind the Runtime API.
package echotest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// build compiles the echo Lambda into dir and returns the binary's path.
func build(dir string) (string, error) {
	_, file, _, _ := runtime.Caller(0)
	src := filepath.Join(filepath.Dir(file), "..", "..", "testdata", "echo")
	bin := filepath.Join(dir, "bootstrap")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build echo lambda: %w\n%s", err, out)
	}
	return bin, nil
}

// Main builds the echo Lambda into a temporary directory, stores its path in
// *bin, runs the tests and removes the directory; a TestMain returns its
// exit code.
func Main(m *testing.M, bin *string) int {
	dir, err := os.MkdirTemp("", "echo-lambda-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if *bin, err = build(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}
