package testkit

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// DocTableKeys returns the names in the first column of the table under
// "## section" of the repository's document rel (e.g. docs/operating.md):
// each row's leading `name`. Tests keep such tables equal to what the code
// or the template defines.
func DocTableKeys(tb testing.TB, rel, section string) []string {
	tb.Helper()
	_, file, _, _ := runtime.Caller(0)
	doc, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", rel))
	if err != nil {
		tb.Fatal(err)
	}
	_, table, ok := strings.Cut(string(doc), "\n## "+section+"\n")
	if !ok {
		tb.Fatalf("%s has no %s section", rel, section)
	}
	table, _, _ = strings.Cut(table, "\n## ")
	var keys []string
	for line := range strings.SplitSeq(table, "\n") {
		if rest, ok := strings.CutPrefix(line, "| `"); ok {
			name, _, _ := strings.Cut(rest, "`")
			keys = append(keys, name)
		}
	}
	return keys
}
