package layout

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// specItems is how many invariants, verification criteria, failure modes and
// gaps the thirteen product specs hold; docs/verification.md has a row for
// each. A spec that changes changes this number with its rows.
const specItems = 388

var (
	testName = regexp.MustCompile("`((?:Test|Fuzz|Benchmark)[A-Za-z0-9_]+)")
	testFunc = regexp.MustCompile(`(?m)^func ((?:Test|Fuzz|Benchmark)[A-Za-z0-9_]+)\(`)
	statuses = []string{"tested:", "decided:", "not built yet:"}
)

// TestVerificationIndexIsComplete keeps docs/verification.md the index of
// every spec item: a row per item with a status, and every test it names
// real, so a renamed or deleted test cannot leave a row claiming a proof.
func TestVerificationIndexIsComplete(t *testing.T) {
	root := moduleRoot(t)
	rows, named := verificationRows(t, filepath.Join(root, "docs", "verification.md"))
	if len(rows) != specItems {
		t.Errorf("docs/verification.md has %d spec item rows, want %d", len(rows), specItems)
	}
	for _, r := range rows {
		if !hasStatus(r.status) {
			t.Errorf("%s %s: status %q does not start with one of %q", r.spec, r.id, r.status, statuses)
		}
		if strings.HasPrefix(r.status, "tested:") && !testName.MatchString(r.status) {
			t.Errorf("%s %s: tested, but names no test", r.spec, r.id)
		}
	}
	have := existingTests(t, root)
	for name := range named {
		if !have[name] {
			t.Errorf("docs/verification.md names %s, which no _test.go file defines", name)
		}
	}
}

// TestVerificationCheckCatchesGhostsAndMissingStatus shows the check above
// can fail: a row without a status and a test that does not exist are found.
func TestVerificationCheckCatchesGhostsAndMissingStatus(t *testing.T) {
	doc := filepath.Join(t.TempDir(), "verification.md")
	text := "## SPEC_ORACLE_X: x\n\n| item | what it asks | status |\n| --- | --- | --- |\n" +
		"| INV-1 | a | tested: `TestThatDoesNotExist` (x) |\n| VC-1 | b | maybe |\n"
	if err := os.WriteFile(doc, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	rows, named := verificationRows(t, doc)
	if len(rows) != 2 || hasStatus(rows[1].status) || !hasStatus(rows[0].status) {
		t.Fatalf("rows %+v: want two, the second without a status", rows)
	}
	if have := existingTests(t, moduleRoot(t)); have["TestThatDoesNotExist"] || !named["TestThatDoesNotExist"] {
		t.Fatalf("the ghost test was not caught: named %v", named)
	}
}

type row struct{ spec, id, status string }

// verificationRows reads the table rows under each "## SPEC_ORACLE_" heading
// and every test name the document mentions anywhere.
func verificationRows(t *testing.T, path string) ([]row, map[string]bool) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []row
	named := map[string]bool{}
	spec := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		for _, m := range testName.FindAllStringSubmatch(line, -1) {
			named[m[1]] = true
		}
		switch {
		case strings.HasPrefix(line, "## "):
			spec = ""
			if name, _, _ := strings.Cut(strings.TrimPrefix(line, "## "), ":"); strings.HasPrefix(name, "SPEC_ORACLE_") {
				spec = name
			}
		case spec != "" && strings.HasPrefix(line, "|"):
			cells := strings.Split(strings.Trim(line, "| "), " | ")
			id := strings.TrimSpace(cells[0])
			if id == "item" || strings.HasPrefix(id, "---") {
				continue
			}
			rows = append(rows, row{spec: spec, id: id, status: strings.TrimSpace(cells[len(cells)-1])})
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rows, named
}

func hasStatus(s string) bool {
	for _, p := range statuses {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// existingTests is every test, fuzz target and benchmark the module defines.
func existingTests(t *testing.T, root string) map[string]bool {
	t.Helper()
	have := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range testFunc.FindAllSubmatch(b, -1) {
			have[string(m[1])] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return have
}
