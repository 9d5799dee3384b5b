// Command trackedfiles fails when the repository tracks a built binary or a
// file over 1 MB: what is built is rebuilt by make and SAM, and a binary in
// the history weighs on every clone for ever. Generated goldens, which may
// grow, are excepted by name. `make lint` runs it.
package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"strings"
)

// MaxSize is the largest file the repository may track.
const MaxSize = 1 << 20

// excepted are the tracked files allowed past MaxSize: generated goldens.
var excepted = []string{"*.golden"}

// magics are the first bytes of the executable formats a build leaves:
// ELF (Linux, and Go test binaries), Mach-O (32, 64 and universal) and PE.
var magics = [][]byte{
	{0x7f, 'E', 'L', 'F'},
	{0xfe, 0xed, 0xfa, 0xce}, {0xce, 0xfa, 0xed, 0xfe},
	{0xfe, 0xed, 0xfa, 0xcf}, {0xcf, 0xfa, 0xed, 0xfe},
	{0xca, 0xfe, 0xba, 0xbe},
	{'M', 'Z'},
}

func main() {
	out, err := exec.Command("git", "ls-files", "-z").Output()
	if err != nil {
		fmt.Fprintln(os.Stderr, "trackedfiles: git ls-files:", err)
		os.Exit(2)
	}
	files := strings.Split(strings.TrimRight(string(out), "\x00"), "\x00")
	problems, err := Check(os.DirFS("."), files)
	if err != nil {
		fmt.Fprintln(os.Stderr, "trackedfiles:", err)
		os.Exit(2)
	}
	for _, p := range problems {
		fmt.Fprintln(os.Stderr, p)
	}
	if len(problems) > 0 {
		fmt.Fprintln(os.Stderr, "untrack them with `git rm --cached`; built files belong in .build/")
		os.Exit(1)
	}
}

// Check returns a line for each of files (paths in fsys) that is a
// compiled binary, or larger than MaxSize and not excepted.
func Check(fsys fs.FS, files []string) ([]string, error) {
	var problems []string
	for _, name := range files {
		if name == "" {
			continue
		}
		f, err := fsys.Open(name)
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted in the work tree, not yet in the index
		}
		if err != nil {
			return nil, err
		}
		info, err := f.Stat()
		if err != nil || info.IsDir() {
			f.Close()
			if err != nil {
				return nil, err
			}
			continue
		}
		head := make([]byte, 4)
		n, err := io.ReadFull(f, head)
		f.Close()
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("read %s: %w", name, err)
		}
		switch {
		case isBinary(head[:n]):
			problems = append(problems, fmt.Sprintf("%s: a compiled binary is tracked", name))
		case info.Size() > MaxSize && !isExcepted(name):
			problems = append(problems, fmt.Sprintf("%s: %d bytes, over the %d allowed", name, info.Size(), MaxSize))
		}
	}
	return problems, nil
}

func isBinary(head []byte) bool {
	for _, m := range magics {
		if bytes.HasPrefix(head, m) {
			return true
		}
	}
	return false
}

func isExcepted(name string) bool {
	for _, pattern := range excepted {
		if ok, _ := path.Match(pattern, path.Base(name)); ok {
			return true
		}
	}
	return false
}
