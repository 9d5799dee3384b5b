package testkit

import (
	"io/fs"
	"regexp"
	"sort"
	"strings"
	"testing"
	"text/template/parse"
)

// UnusedTemplates walks one template set from the templates the code
// executes (roots) through every {{template}} call. It returns the
// templates no root reaches, and the names called or executed that the set
// does not define. A template holding only definitions and space (a layout
// file) is not reported: its definitions are what must be reached.
// html/template sets share text/template's parse trees, so both work.
func UnusedTemplates(trees map[string]*parse.Tree, roots []string) (unused, undefined []string) {
	reached := map[string]bool{}
	var reach func(name string)
	var walk func(n parse.Node)
	reach = func(name string) {
		if reached[name] {
			return
		}
		tree, ok := trees[name]
		if !ok {
			undefined = append(undefined, name)
			return
		}
		reached[name] = true
		walk(tree.Root)
	}
	walk = func(n parse.Node) {
		switch n := n.(type) {
		case *parse.ListNode:
			if n != nil {
				for _, c := range n.Nodes {
					walk(c)
				}
			}
		case *parse.IfNode:
			walk(n.List)
			walk(n.ElseList)
		case *parse.RangeNode:
			walk(n.List)
			walk(n.ElseList)
		case *parse.WithNode:
			walk(n.List)
			walk(n.ElseList)
		case *parse.TemplateNode:
			reach(n.Name)
		}
	}
	for _, r := range roots {
		reach(r)
	}
	for name, tree := range trees {
		if !reached[name] && !onlySpace(tree.Root) {
			unused = append(unused, name)
		}
	}
	sort.Strings(unused)
	return unused, undefined
}

func onlySpace(l *parse.ListNode) bool {
	for _, n := range l.Nodes {
		if tn, ok := n.(*parse.TextNode); !ok || strings.TrimSpace(string(tn.Text)) != "" {
			return false
		}
	}
	return true
}

// templateComment is a Go template comment, which never renders.
var templateComment = regexp.MustCompile(`(?s)\{\{-?\s*/\*.*?\*/\s*-?\}\}`)

// TemplateTexts returns every file under root in fsys, as the customer
// could see it: Go template comments removed, everything else kept (the
// content filter's walk of the templates).
func TemplateTexts(t testing.TB, fsys fs.FS, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := fs.WalkDir(fsys, root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(fsys, path)
		if err != nil {
			return err
		}
		out[path] = templateComment.ReplaceAllString(string(b), "")
		return nil
	})
	if err != nil || len(out) == 0 {
		t.Fatalf("walked %d files under %s: %v", len(out), root, err)
	}
	return out
}
