// Package tmplrun executes templates written in text/template's language
// without text/template's executor, for the Lambda functions that render
// customer-facing texts and also call AWS.
//
// text/template evaluates a field by asking reflection for a method of that
// name first (reflect.Value.MethodByName). A binary that can reach such a
// call makes the linker keep every exported method of every type stored in
// an interface: in the mailer, all of the S3 client's operations among
// them, about 6 MB of its bootstrap (docs/performance.md). This executor
// reads struct fields and map keys only, never methods, so the linker can
// drop what no code calls.
//
// Templates are parsed by text/template (its parser uses no reflection) and
// run here. The language understood is the part the letters use: text,
// comments, actions printing a pipeline, if/else, with/else, range over a
// slice or array (with $i and $v), template calls, variables, field chains,
// literals, and the functions given to New, which take and return values
// (a second result, an error, fails the run). Anything else (a method
// call, a builtin such as printf, break or continue) is refused by New, so
// a template that cannot run is a build defect every test catches.
//
// In HTML mode every printed value is escaped as html/template escapes text
// in an element or a quoted attribute, but for html/template's HTML, CSS
// and JS, content the code marks as safe, printed as it is. Unlike
// html/template it does not read the markup around an action: a template
// must print values only in element text and quoted attributes whose
// value needs no more than that (a URL attribute only with a URL the code
// has checked), and typed CSS and JS only inside a style or script
// element. The tests of the templates run here (the letters, the chat's
// pages) compare every one with html/template's rendering.
package tmplrun

import (
	"bytes"
	"errors"
	"fmt"
	htmltemplate "html/template"
	"io"
	"reflect"
	"strings"
	"text/template"
	"text/template/parse"
)

// Set is a parsed set of templates, ready to run. It is safe for concurrent
// use.
type Set struct {
	trees map[string]*parse.Tree
	funcs map[string]reflect.Value
	html  bool
}

// New takes the templates of t (parsed with funcs, as text/template.Funcs
// was given them) and checks that each uses only what the Set can run.
// html escapes every printed value for HTML.
func New(t *template.Template, funcs map[string]any, html bool) (*Set, error) {
	s := &Set{trees: map[string]*parse.Tree{}, funcs: map[string]reflect.Value{}, html: html}
	for name, f := range funcs {
		v := reflect.ValueOf(f)
		ft := v.Type()
		if ft.Kind() != reflect.Func || ft.IsVariadic() || ft.NumOut() == 0 || ft.NumOut() > 2 || (ft.NumOut() == 2 && ft.Out(1) != errorType) {
			return nil, fmt.Errorf("tmplrun: function %s: want func(args...) value or (value, error)", name)
		}
		s.funcs[name] = v
	}
	for _, tt := range t.Templates() {
		if tt.Tree == nil || tt.Tree.Root == nil {
			continue
		}
		s.trees[tt.Name()] = tt.Tree
	}
	for name, tree := range s.trees {
		if err := s.check(tree.Root); err != nil {
			return nil, fmt.Errorf("tmplrun: template %s: %w", name, err)
		}
	}
	return s, nil
}

var errorType = reflect.TypeFor[error]()

// check refuses what Execute cannot run.
func (s *Set) check(n parse.Node) error {
	switch n := n.(type) {
	case nil:
		return nil
	case *parse.ListNode:
		if n == nil {
			return nil
		}
		for _, c := range n.Nodes {
			if err := s.check(c); err != nil {
				return err
			}
		}
	case *parse.TextNode, *parse.CommentNode:
	case *parse.ActionNode:
		return s.check(n.Pipe)
	case *parse.IfNode:
		return s.checkBranch(&n.BranchNode)
	case *parse.WithNode:
		return s.checkBranch(&n.BranchNode)
	case *parse.RangeNode:
		return s.checkBranch(&n.BranchNode)
	case *parse.TemplateNode:
		if _, ok := s.trees[n.Name]; !ok {
			return fmt.Errorf("no template %q", n.Name)
		}
		return s.check(n.Pipe)
	case *parse.PipeNode:
		if n == nil {
			return nil
		}
		for _, c := range n.Cmds {
			for _, a := range c.Args {
				if err := s.check(a); err != nil {
					return err
				}
			}
		}
	case *parse.IdentifierNode:
		if _, ok := s.funcs[n.Ident]; !ok {
			return fmt.Errorf("function %q is not one of the set's", n.Ident)
		}
	case *parse.FieldNode, *parse.VariableNode, *parse.DotNode, *parse.StringNode, *parse.NumberNode, *parse.BoolNode, *parse.NilNode:
	case *parse.ChainNode:
		return s.check(n.Node)
	default:
		return fmt.Errorf("%s is not supported", n)
	}
	return nil
}

func (s *Set) checkBranch(b *parse.BranchNode) error {
	for _, n := range []parse.Node{b.Pipe, b.List, b.ElseList} {
		if err := s.check(n); err != nil {
			return err
		}
	}
	return nil
}

// Execute runs the template name with data as its dot and returns what it
// wrote.
func (s *Set) Execute(name string, data any) (string, error) {
	tree, ok := s.trees[name]
	if !ok {
		return "", fmt.Errorf("tmplrun: no template %q", name)
	}
	var b bytes.Buffer
	st := &state{set: s, w: &b, name: name}
	dot := reflect.ValueOf(data)
	st.vars = []variable{{"$", dot}}
	if err := st.walk(dot, tree.Root); err != nil {
		return "", fmt.Errorf("tmplrun: %s: %w", st.name, err)
	}
	return b.String(), nil
}

type variable struct {
	name  string
	value reflect.Value
}

type state struct {
	set  *Set
	w    io.Writer
	name string
	vars []variable
}

func (st *state) walk(dot reflect.Value, n parse.Node) error {
	switch n := n.(type) {
	case *parse.ListNode:
		for _, c := range n.Nodes {
			if err := st.walk(dot, c); err != nil {
				return err
			}
		}
	case *parse.TextNode:
		_, err := st.w.Write(n.Text)
		return err
	case *parse.CommentNode:
	case *parse.ActionNode:
		v, err := st.pipe(dot, n.Pipe)
		if err != nil || len(n.Pipe.Decl) > 0 {
			return err
		}
		return st.print(v)
	case *parse.IfNode:
		return st.branch(dot, &n.BranchNode, false)
	case *parse.WithNode:
		return st.branch(dot, &n.BranchNode, true)
	case *parse.RangeNode:
		return st.rangeOver(dot, n)
	case *parse.TemplateNode:
		next := reflect.Value{}
		if n.Pipe != nil {
			v, err := st.pipe(dot, n.Pipe)
			if err != nil {
				return err
			}
			next = v
		}
		inner := &state{set: st.set, w: st.w, name: n.Name, vars: []variable{{"$", next}}}
		return inner.walk(next, st.set.trees[n.Name].Root)
	default:
		return fmt.Errorf("%s is not supported", n)
	}
	return nil
}

func (st *state) branch(dot reflect.Value, b *parse.BranchNode, with bool) error {
	mark := len(st.vars)
	defer func() { st.vars = st.vars[:mark] }()
	v, err := st.pipe(dot, b.Pipe)
	if err != nil {
		return err
	}
	if truth(v) {
		if with {
			dot = v
		}
		return st.walk(dot, b.List)
	}
	if b.ElseList != nil {
		return st.walk(dot, b.ElseList)
	}
	return nil
}

func (st *state) rangeOver(dot reflect.Value, r *parse.RangeNode) error {
	mark := len(st.vars)
	defer func() { st.vars = st.vars[:mark] }()
	// The declarations are the range's own: the pipeline is evaluated
	// without them.
	decl := r.Pipe.Decl
	pipe := *r.Pipe
	pipe.Decl = nil
	v, err := st.pipe(dot, &pipe)
	if err != nil {
		return err
	}
	v = indirect(v)
	if v.IsValid() && v.Kind() != reflect.Slice && v.Kind() != reflect.Array {
		return fmt.Errorf("range over %s, want a slice or an array", v.Type())
	}
	if !v.IsValid() || v.Len() == 0 {
		if r.ElseList != nil {
			return st.walk(dot, r.ElseList)
		}
		return nil
	}
	for i := 0; i < v.Len(); i++ {
		elem := v.Index(i)
		st.vars = st.vars[:mark]
		switch len(decl) {
		case 1:
			st.vars = append(st.vars, variable{decl[0].Ident[0], elem})
		case 2:
			st.vars = append(st.vars, variable{decl[0].Ident[0], reflect.ValueOf(i)}, variable{decl[1].Ident[0], elem})
		}
		if err := st.walk(elem, r.List); err != nil {
			return err
		}
	}
	return nil
}

// pipe evaluates a pipeline: each command's result is the last argument of
// the next.
func (st *state) pipe(dot reflect.Value, p *parse.PipeNode) (reflect.Value, error) {
	var v reflect.Value
	for i, c := range p.Cmds {
		var final *reflect.Value
		if i > 0 {
			final = &v
		}
		var err error
		if v, err = st.command(dot, c, final); err != nil {
			return reflect.Value{}, err
		}
	}
	for _, d := range p.Decl {
		if p.IsAssign {
			if err := st.assign(d.Ident[0], v); err != nil {
				return reflect.Value{}, err
			}
			continue
		}
		st.vars = append(st.vars, variable{d.Ident[0], v})
	}
	return v, nil
}

func (st *state) assign(name string, v reflect.Value) error {
	for i := len(st.vars) - 1; i >= 0; i-- {
		if st.vars[i].name == name {
			st.vars[i].value = v
			return nil
		}
	}
	return fmt.Errorf("undefined variable %s", name)
}

func (st *state) command(dot reflect.Value, c *parse.CommandNode, final *reflect.Value) (reflect.Value, error) {
	first := c.Args[0]
	if id, ok := first.(*parse.IdentifierNode); ok {
		return st.call(dot, id.Ident, c.Args[1:], final)
	}
	if len(c.Args) > 1 || final != nil {
		return reflect.Value{}, fmt.Errorf("%s takes no arguments", first)
	}
	return st.arg(dot, first)
}

func (st *state) call(dot reflect.Value, name string, args []parse.Node, final *reflect.Value) (reflect.Value, error) {
	fn := st.set.funcs[name]
	ft := fn.Type()
	in := make([]reflect.Value, 0, len(args)+1)
	for _, a := range args {
		v, err := st.arg(dot, a)
		if err != nil {
			return reflect.Value{}, err
		}
		in = append(in, v)
	}
	if final != nil {
		in = append(in, *final)
	}
	if len(in) != ft.NumIn() {
		return reflect.Value{}, fmt.Errorf("%s takes %d arguments, got %d", name, ft.NumIn(), len(in))
	}
	for i, v := range in {
		want := ft.In(i)
		v = indirectInterface(v)
		switch {
		case !v.IsValid():
			return reflect.Value{}, fmt.Errorf("%s: argument %d is missing", name, i+1)
		case v.Type().AssignableTo(want):
		case v.Type().ConvertibleTo(want) && v.Kind() == want.Kind():
			v = v.Convert(want)
		default:
			return reflect.Value{}, fmt.Errorf("%s: argument %d is %s, want %s", name, i+1, v.Type(), want)
		}
		in[i] = v
	}
	out := fn.Call(in)
	if len(out) == 2 && !out[1].IsNil() {
		return reflect.Value{}, fmt.Errorf("%s: %w", name, out[1].Interface().(error))
	}
	return out[0], nil
}

func (st *state) arg(dot reflect.Value, n parse.Node) (reflect.Value, error) {
	switch n := n.(type) {
	case *parse.DotNode:
		return dot, nil
	case *parse.FieldNode:
		return fields(dot, n.Ident)
	case *parse.VariableNode:
		v, err := st.variable(n.Ident[0])
		if err != nil {
			return reflect.Value{}, err
		}
		return fields(v, n.Ident[1:])
	case *parse.ChainNode:
		v, err := st.arg(dot, n.Node)
		if err != nil {
			return reflect.Value{}, err
		}
		return fields(v, n.Field)
	case *parse.PipeNode:
		mark := len(st.vars)
		defer func() { st.vars = st.vars[:mark] }()
		return st.pipe(dot, n)
	case *parse.StringNode:
		return reflect.ValueOf(n.Text), nil
	case *parse.BoolNode:
		return reflect.ValueOf(n.True), nil
	case *parse.NumberNode:
		switch {
		case n.IsInt:
			return reflect.ValueOf(int(n.Int64)), nil
		case n.IsFloat:
			return reflect.ValueOf(n.Float64), nil
		}
		return reflect.Value{}, fmt.Errorf("number %s is not supported", n.Text)
	case *parse.NilNode:
		return reflect.Value{}, nil
	case *parse.IdentifierNode:
		return st.call(dot, n.Ident, nil, nil)
	}
	return reflect.Value{}, fmt.Errorf("%s is not supported", n)
}

func (st *state) variable(name string) (reflect.Value, error) {
	for i := len(st.vars) - 1; i >= 0; i-- {
		if st.vars[i].name == name {
			return st.vars[i].value, nil
		}
	}
	return reflect.Value{}, fmt.Errorf("undefined variable %s", name)
}

// fields follows a chain of field names through structs (and pointers to
// them) and maps with string keys. Methods are never looked up.
func fields(v reflect.Value, names []string) (reflect.Value, error) {
	for _, name := range names {
		v = indirect(v)
		if !v.IsValid() {
			return reflect.Value{}, fmt.Errorf("field %s of nothing", name)
		}
		switch v.Kind() {
		case reflect.Struct:
			f, ok := v.Type().FieldByName(name)
			if !ok || !f.IsExported() {
				return reflect.Value{}, fmt.Errorf("%s has no field %s", v.Type(), name)
			}
			v = v.FieldByIndex(f.Index)
		case reflect.Map:
			if v.Type().Key().Kind() != reflect.String {
				return reflect.Value{}, fmt.Errorf("field %s of %s, whose keys are not strings", name, v.Type())
			}
			// A missing key is no value, printed "<no value>" as
			// text/template prints it.
			v = v.MapIndex(reflect.ValueOf(name).Convert(v.Type().Key()))
		default:
			return reflect.Value{}, fmt.Errorf("field %s of %s", name, v.Type())
		}
	}
	return v, nil
}

// indirect follows pointers and interfaces; a nil one is the invalid Value.
func indirect(v reflect.Value) reflect.Value {
	for v.IsValid() && (v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface) {
		if v.IsNil() {
			return reflect.Value{}
		}
		v = v.Elem()
	}
	return v
}

func indirectInterface(v reflect.Value) reflect.Value {
	if v.IsValid() && v.Kind() == reflect.Interface && !v.IsNil() {
		return v.Elem()
	}
	return v
}

// truth is text/template's: false, 0, an empty string, slice or map, and a
// nil pointer or interface are false.
func truth(v reflect.Value) bool {
	if !v.IsValid() {
		return false
	}
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() > 0
	case reflect.Bool:
		return v.Bool()
	case reflect.Complex64, reflect.Complex128:
		return v.Complex() != 0
	case reflect.Chan, reflect.Func, reflect.Pointer, reflect.Interface:
		return !v.IsNil()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int() != 0
	case reflect.Float32, reflect.Float64:
		return v.Float() != 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return v.Uint() != 0
	case reflect.Struct:
		return true
	}
	return false
}

// print writes v as text/template prints it (fmt's default format; nothing
// for a nil value), escaped in HTML mode.
func (st *state) print(v reflect.Value) error {
	v = indirectInterface(v)
	s := "<no value>"
	if v.IsValid() {
		if v.Kind() == reflect.Pointer {
			if v = indirect(v); !v.IsValid() {
				return errors.New("a nil pointer printed")
			}
		}
		x := v.Interface()
		switch x := x.(type) {
		case htmltemplate.HTML, htmltemplate.CSS, htmltemplate.JS:
			// Content the code marked as safe, as html/template trusts it
			// in its own context (an inlined stylesheet, a script).
			if st.set.html {
				_, err := fmt.Fprint(st.w, x)
				return err
			}
		}
		s = fmt.Sprint(x)
	}
	if st.set.html {
		s = htmlEscaper.Replace(s)
	}
	_, err := io.WriteString(st.w, s)
	return err
}

// htmlEscaper escapes as html/template escapes text and quoted attribute
// values (its htmlReplacementTable).
var htmlEscaper = strings.NewReplacer(
	"\x00", "\uFFFD",
	`"`, "&#34;",
	"&", "&amp;",
	"'", "&#39;",
	"+", "&#43;",
	"<", "&lt;",
	">", "&gt;",
)

// Trees returns the set's templates by name (the unnamed container of a
// parsed set excluded), for tests that check which are used.
func (s *Set) Trees() map[string]*parse.Tree {
	trees := make(map[string]*parse.Tree, len(s.trees))
	for name, t := range s.trees {
		if name != "" {
			trees[name] = t
		}
	}
	return trees
}
