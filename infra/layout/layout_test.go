// Package layout holds the tests of the repository's shape: what each folder
// may import (docs/architecture.md "Layout"), that the docs' links resolve
// and that docs/verification.md indexes every spec item with a real test.
package layout

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
)

const module = "42sisters.ai/oracle"

// TestImportRules enforces the layout rules on every non-test Go file.
func TestImportRules(t *testing.T) {
	for _, v := range importViolations(t, os.DirFS(moduleRoot(t))) {
		t.Error(v)
	}
}

// TestImportRulesCatchViolations shows each rule failing on a small tree.
func TestImportRulesCatchViolations(t *testing.T) {
	tree := fstestTree(map[string]string{
		"functions/webhook/main.go":     `import "42sisters.ai/oracle/infra/testkit"`,
		"functions/webhook/x_test.go":   `import "42sisters.ai/oracle/infra/testkit"`, // tests may
		"functions/mailer/handler.go":   `import "42sisters.ai/oracle/functions/mailer/letter"`,
		"functions/verdict/handler.go":  `import "42sisters.ai/oracle/functions/webhook"`,
		"shared/oracle/tier.go":         `import "42sisters.ai/oracle/shared/obs"`,
		"shared/store/orders.go":        `import ("42sisters.ai/oracle/shared/oracle"; "42sisters.ai/oracle/functions/generator")`,
		"shared/mail/ses.go":            `import "42sisters.ai/oracle/infra/motoserver"`,
		"infra/local/stack/stack.go":    `import "42sisters.ai/oracle/functions/webhook"`,
		"functions/mailer/letter/l.go":  `import "42sisters.ai/oracle/shared/oracle"`,
		"functions/pages/testdata/x.go": `import "42sisters.ai/oracle/infra/testkit"`,
	})
	got := strings.Join(importViolations(t, tree), "\n")
	for _, want := range []string{
		"functions/webhook/main.go imports 42sisters.ai/oracle/infra/testkit",
		"functions/verdict/handler.go imports 42sisters.ai/oracle/functions/webhook",
		"shared/oracle/tier.go imports 42sisters.ai/oracle/shared/obs",
		"shared/store/orders.go imports 42sisters.ai/oracle/functions/generator",
		"shared/mail/ses.go imports 42sisters.ai/oracle/infra/motoserver",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the check missed %q; it found:\n%s", want, got)
		}
	}
	if n := strings.Count(got, "\n") + 1; n != 5 {
		t.Errorf("%d violations, want 5 (tests, testdata, a function's own subpackage and infra may import what they import):\n%s", n, got)
	}
}

// importViolations lists each import in fsys that breaks a layout rule.
func importViolations(t *testing.T, fsys fs.FS) []string {
	t.Helper()
	var out []string
	err := fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if base := path.Base(name); name != "." && (strings.HasPrefix(base, ".") || base == "testdata") {
				return fs.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		src, err := fs.ReadFile(fsys, name)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, src, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, spec := range f.Imports {
			imp, _ := strconv.Unquote(spec.Path.Value)
			if why := broken(path.Dir(name), imp); why != "" {
				out = append(out, name+" imports "+imp+": "+why)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// broken says which rule the import imp of the package in dir breaks, if any.
func broken(dir, imp string) string {
	rel, ok := strings.CutPrefix(imp, module+"/")
	if !ok {
		return "" // the standard library or another module
	}
	top := func(p string) string { return strings.SplitN(p, "/", 2)[0] }
	function := func(p string) string { // functions/<name>
		parts := strings.SplitN(p, "/", 3)
		if len(parts) < 2 {
			return p
		}
		return parts[0] + "/" + parts[1]
	}
	switch {
	case top(dir) == "infra":
		return ""
	case dir == "shared/oracle" || strings.HasPrefix(dir, "shared/oracle/"):
		return "shared/oracle is the domain and imports nothing of the module"
	case top(rel) == "infra":
		return "production code never imports infra/"
	case top(dir) == "shared" && top(rel) == "functions":
		return "shared/ never imports a function"
	case top(dir) == "functions" && top(rel) == "functions" && function(dir) != function(rel):
		return "a function never imports another function"
	}
	return ""
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		t.Fatalf("no go.mod at %s: %v", dir, err)
	}
	return dir
}

// fstestTree is a tree of Go files, each a package clause and the given
// import declaration.
func fstestTree(files map[string]string) fs.FS {
	tree := fstest.MapFS{}
	for name, imports := range files {
		tree[name] = &fstest.MapFile{Data: []byte("package x\n\n" + imports + "\n")}
	}
	return tree
}

var linkPattern = regexp.MustCompile(`\]\(([^)#\s]+)(?:#[^)]*)?\)`)

// TestDocLinksResolve: every relative link in README.md and docs/ points at
// a file of the repository, so the docs stand on their own.
func TestDocLinksResolve(t *testing.T) {
	root := moduleRoot(t)
	docs, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	for _, doc := range append(docs, filepath.Join(root, "README.md")) {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range linkPattern.FindAllStringSubmatch(string(b), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(doc), target)); err != nil {
				rel, _ := filepath.Rel(root, doc)
				t.Errorf("%s links to %s, which does not exist", rel, target)
			}
		}
		if strings.Contains(string(b), filepath.Join("..", "shared")+"/") || strings.Contains(string(b), "ARCHITECTURE.md") {
			t.Errorf("%s points at material outside the repository (the developers' shared folder or its design file)", doc)
		}
	}
}
