package alert_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/alert"
)

// TestKindsAreDefinedOnce keeps every alert kind in kinds.go: production
// code names a kind only by its constant, so the list the operator reads
// (docs/operating.md) is the list the code raises.
func TestKindsAreDefinedOnce(t *testing.T) {
	root := moduleRoot(t)
	var found []string
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		if filepath.Dir(rel) == filepath.Join("shared", "alert") {
			return nil
		}
		found = append(found, literalKinds(t, path, rel)...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) > 0 {
		t.Errorf("alert kinds written as literals outside shared/alert (add a constant to kinds.go):\n%s", strings.Join(found, "\n"))
	}
}

// TestTheDefinedOnceCheckCanFail shows the check finds both forms a kind
// could be written in outside kinds.go.
func TestTheDefinedOnceCheckCanFail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.go")
	src := "package x\n\nimport \"42sisters.ai/oracle/shared/alert\"\n\n" +
		"var a = alert.Alert{Severity: alert.Error, Kind: \"NEW_KIND\"}\n" +
		"var k = alert.Kind(\"OTHER_KIND\")\n"
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := literalKinds(t, path, "x.go"); len(got) != 2 {
		t.Fatalf("found %q, want both literals", got)
	}
}

// TestKindsAreDistinct: the kind is the dedupe key with the session.
func TestKindsAreDistinct(t *testing.T) {
	kinds := alert.Kinds()
	seen := map[alert.Kind]bool{}
	for _, k := range kinds {
		if k == "" || seen[k] {
			t.Errorf("kind %q is empty or listed twice", k)
		}
		seen[k] = true
	}
	if !slices.Contains(kinds, alert.AuditWriteFailed) {
		t.Error("Kinds() misses AUDIT_WRITE_FAILED")
	}
}

// TestOperatingGuideListsEveryKind keeps docs/operating.md's alert table
// the list of kinds the code raises: no kind without its operator's line,
// no line for a kind that no longer exists.
func TestOperatingGuideListsEveryKind(t *testing.T) {
	listed := testkit.DocTableKeys(t, "docs/operating.md", "Alerts")
	var want []string
	for _, k := range alert.Kinds() {
		want = append(want, string(k))
	}
	slices.Sort(listed)
	slices.Sort(want)
	if !slices.Equal(listed, want) {
		t.Errorf("docs/operating.md lists the alert kinds\n  %q\nthe code defines\n  %q", listed, want)
	}
}

// literalKinds lists the string literals used as an alert.Alert's Kind or
// converted to alert.Kind in the file at path.
func literalKinds(t *testing.T, path, rel string) []string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	report := func(n ast.Node, lit *ast.BasicLit) {
		v, _ := strconv.Unquote(lit.Value)
		out = append(out, rel+":"+strconv.Itoa(fset.Position(n.Pos()).Line)+": "+v)
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CompositeLit:
			if sel, ok := n.Type.(*ast.SelectorExpr); ok && isAlert(sel.X) && sel.Sel.Name == "Alert" {
				for _, el := range n.Elts {
					if kv, ok := el.(*ast.KeyValueExpr); ok {
						if key, ok := kv.Key.(*ast.Ident); ok && key.Name == "Kind" {
							if lit, ok := kv.Value.(*ast.BasicLit); ok && lit.Kind == token.STRING {
								report(kv, lit)
							}
						}
					}
				}
			}
		case *ast.CallExpr:
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok && isAlert(sel.X) && sel.Sel.Name == "Kind" && len(n.Args) == 1 {
				if lit, ok := n.Args[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					report(n, lit)
				}
			}
		}
		return true
	})
	return out
}

func isAlert(x ast.Expr) bool {
	id, ok := x.(*ast.Ident)
	return ok && id.Name == "alert"
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test")
		}
		dir = parent
	}
}
