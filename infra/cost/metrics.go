package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
)

// metricNames counts the metric names the service emits: the constants of
// shared/obs/names.go, where every call site takes its metric's name.
func metricNames(path string) (int, error) {
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		return 0, fmt.Errorf("the metric names: %w", err)
	}
	n := 0
	for _, d := range f.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.CONST {
			for _, spec := range g.Specs {
				n += len(spec.(*ast.ValueSpec).Names)
			}
		}
	}
	if n == 0 {
		return 0, fmt.Errorf("%s names no metric", path)
	}
	return n, nil
}
