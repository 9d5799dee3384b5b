package main

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
	"testing/fstest"
)

func TestCheckRefusesBinariesAndLargeFiles(t *testing.T) {
	big := bytes.Repeat([]byte("x"), MaxSize+1)
	fsys := fstest.MapFS{
		"README.md":                       {Data: []byte("# hello\n")},
		"webhook":                         {Data: append([]byte{0x7f, 'E', 'L', 'F'}, 0, 1, 2)},
		"tool.exe":                        {Data: []byte("MZ\x90\x00")},
		"darwin/bootstrap":                {Data: []byte{0xcf, 0xfa, 0xed, 0xfe, 7}},
		"data/huge.json":                  {Data: big},
		"shared/prompt/testdata/x.golden": {Data: big},
		"empty":                           {Data: nil},
	}
	files := []string{"README.md", "webhook", "tool.exe", "darwin/bootstrap", "data/huge.json", "shared/prompt/testdata/x.golden", "empty", "deleted.go"}
	problems, err := Check(fsys, files)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(problems, "\n")
	for _, want := range []string{"webhook: a compiled binary", "tool.exe: a compiled binary", "darwin/bootstrap: a compiled binary", "data/huge.json: 1048577 bytes"} {
		if !strings.Contains(got, want) {
			t.Errorf("problems %q miss %q", got, want)
		}
	}
	if len(problems) != 4 {
		t.Errorf("%d problems, want 4 (the golden, the text and the empty file pass): %q", len(problems), got)
	}
}

// TestCommittedGoBinaryFailsTheCheck builds a real binary into a throwaway
// repository, as `go build` in the root once did, and runs the command there.
func TestCommittedGoBinaryFailsTheCheck(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	self, err := os.Executable() // this test binary: an ELF file like any build
	if err != nil {
		t.Fatal(err)
	}
	bin, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	run := func(name string, args ...string) error {
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null")
		return cmd.Run()
	}
	if err := run("git", "init", "-q"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir+"/webhook", bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := run("git", "add", "webhook"); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	out, err := exec.Command("git", "ls-files", "-z").Output()
	if err != nil {
		t.Fatal(err)
	}
	problems, err := Check(os.DirFS("."), strings.Split(strings.TrimRight(string(out), "\x00"), "\x00"))
	if err != nil || len(problems) != 1 || !strings.HasPrefix(problems[0], "webhook: a compiled binary") {
		t.Fatalf("problems %q, %v: want the committed binary", problems, err)
	}
}
