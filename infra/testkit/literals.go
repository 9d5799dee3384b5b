package testkit

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
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
