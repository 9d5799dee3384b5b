package testkit

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"42sisters.ai/oracle/shared/sosfilter"
)

// StringLiterals returns every string literal but struct tags in the
// non-test Go files of dir, keyed by position: the texts a handler can answer with, for tests
// that check all of them at once (the content filter's static check).
func StringLiterals(t testing.TB, dir string) map[string]string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	out := map[string]string{}
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if field, ok := n.(*ast.Field); ok && field.Tag != nil {
				return false // a struct tag names a field for an encoder; no one reads it
			}
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			if s, err := strconv.Unquote(lit.Value); err == nil {
				out[fset.Position(lit.Pos()).String()] = s
			}
			return true
		})
	}
	if len(out) == 0 {
		t.Fatalf("no string literals in %s", dir)
	}
	return out
}

// LiteralsPassTheFilter fails t for every string literal of dir that the
// content filter would not pass unchanged: the static check that no text
// a function can answer with carries internal vocabulary.
func LiteralsPassTheFilter(t *testing.T, dir string) {
	t.Helper()
	f, err := sosfilter.New()
	if err != nil {
		t.Fatal(err)
	}
	for pos, s := range StringLiterals(t, dir) {
		if r := f.Text(s); r.Action != sosfilter.Pass {
			t.Errorf("%s: %q: %s %v", pos, s, r.Action, r.Terms())
		}
	}
}
