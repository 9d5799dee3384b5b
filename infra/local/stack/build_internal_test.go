package stack

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"42sisters.ai/oracle/infra/sam"
	"42sisters.ai/oracle/infra/testkit"
)

// The stack builds every function in one go build, so that Go compiles
// each package they share once (a go build per function compiled the AWS
// SDK once per function), and says so while it works; two functions from
// different directories of one name, which one go build would write to one
// binary, are refused before anything is built. The go command the stack
// runs is the real one behind a script that records its arguments.
func TestBuildIsOneGoBuild(t *testing.T) {
	realGo, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	shim := t.TempDir()
	calls := filepath.Join(shim, "calls")
	script := "#!/bin/sh\nprintf '%s\\n' \"$*\" >>\"$GO_CALLS\"\nexec \"$REAL_GO\" \"$@\"\n"
	if err := os.WriteFile(filepath.Join(shim, "go"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", shim+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("REAL_GO", realGo)
	t.Setenv("GO_CALLS", calls)

	for _, tc := range []struct {
		name string
		// fns are logical ids and CodeUris.
		fns     [][2]string
		wantGo  []string // the go commands run, DIR standing for the output directory
		wantBin map[string]string
		wantErr string
	}{
		{
			name:    "three functions from two packages",
			fns:     [][2]string{{"AFunction", "fns/a/"}, {"BFunction", "fns/b/"}, {"AgainFunction", "fns/a"}},
			wantGo:  []string{"build -o DIR/ ./fns/a ./fns/b"},
			wantBin: map[string]string{"AFunction": "a", "BFunction": "b", "AgainFunction": "a"},
		},
		{
			name:    "two packages of one name",
			fns:     [][2]string{{"OneFunction", "x/one/"}, {"OtherFunction", "y/one/"}},
			wantErr: "would both build to",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			mod := map[string]string{"go.mod": "module example.test/fns\n\ngo 1.26\n"}
			var fns []sam.Function
			for _, f := range tc.fns {
				fns = append(fns, sam.Function{LogicalID: f[0], CodeURI: f[1]})
				mod[filepath.Join(f[1], "main.go")] = "package main\n\nfunc main() {}\n"
			}
			for name, text := range mod {
				if err := os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(root, name), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_ = os.Remove(calls)
			logs := &testkit.Buffer{}
			o := Options{Root: root, BuildDir: filepath.Join(root, ".build"), Log: logs}
			bins, err := build(context.Background(), &o, fns)
			dir := filepath.Join(o.BuildDir, "functions")
			ran, _ := os.ReadFile(calls)
			gotGo := strings.Split(strings.ReplaceAll(strings.TrimSpace(string(ran)), dir, "DIR"), "\n")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("build: %v, want an error saying %q", err, tc.wantErr)
				}
				if len(ran) != 0 {
					t.Errorf("go ran %q before the refusal, want nothing built", gotGo)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(gotGo, "\n") != strings.Join(tc.wantGo, "\n") {
				t.Errorf("go ran\n  %s\nwant\n  %s", strings.Join(gotGo, "\n  "), strings.Join(tc.wantGo, "\n  "))
			}
			for id, name := range tc.wantBin {
				want := filepath.Join(dir, name)
				if bins[id] != want {
					t.Errorf("%s's bootstrap is %q, want %q", id, bins[id], want)
				}
				if fi, err := os.Stat(bins[id]); err != nil || fi.Mode()&0o111 == 0 {
					t.Errorf("%s's bootstrap %s is not an executable: %v", id, bins[id], err)
				}
			}
			if len(bins) != len(tc.wantBin) {
				t.Errorf("bootstraps %v, want one for each of %v", bins, tc.wantBin)
			}
			n := len(tc.fns)
			for _, line := range []string{fmt.Sprintf("building %d function(s) in one go build", n), fmt.Sprintf("built %d function(s) in ", n)} {
				if !strings.Contains(logs.String(), "[stack] "+line) {
					t.Errorf("the stack's log lacks %q:\n%s", line, logs)
				}
			}
		})
	}
}
