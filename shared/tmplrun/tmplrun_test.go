package tmplrun_test

import (
	"strings"
	"testing"
	"text/template"

	"42sisters.ai/oracle/shared/tmplrun"
)

type person struct {
	Name   string
	Tags   []string
	Boss   *person
	Extra  map[string]string
	hidden string
}

// Title is a method: text/template would call it for {{.Title}}; tmplrun
// never looks methods up.
func (p person) Title() string { return "Dr " + p.Name }

func set(t *testing.T, src string, html bool) (*tmplrun.Set, error) {
	t.Helper()
	funcs := template.FuncMap{
		"upper": strings.ToUpper,
		"inc":   func(i int) int { return i + 1 },
	}
	tt, err := template.New("t").Funcs(funcs).Parse(src)
	if err != nil {
		t.Fatalf("parse %q: %v", src, err)
	}
	return tmplrun.New(tt, funcs, html)
}

// Each template renders as text/template renders it.
func TestExecuteAsTextTemplate(t *testing.T) {
	data := person{Name: "Ada <&>", Tags: []string{"a", "b"}, Boss: &person{Name: "Bob"}, Extra: map[string]string{"k": "v"}}
	for _, tc := range []struct {
		src  string
		html bool
	}{
		{src: `{{.Name}} {{.Boss.Name}} {{.Extra.k}} {{.Extra.none}}|`},
		{src: `{{range $i, $t := .Tags}}{{if $i}}, {{end}}{{inc $i}}={{$t}}{{end}}`},
		{src: `{{range .Tags}}[{{.}}|{{$.Name}}]{{else}}none{{end}}`},
		{src: `{{range .Boss.Tags}}x{{else}}none{{end}}`},
		{src: `{{with .Boss}}{{.Name}}{{end}}{{with .Boss.Boss}}never{{else}}no boss{{end}}`},
		{src: `{{if .Boss.Boss}}a{{else if .Tags}}b{{else}}c{{end}}`},
		{src: `{{define "x"}}<{{.}}>{{end}}{{template "x" .Name}}{{template "x" "lit"}}`},
		{src: `{{$n := .Name}}{{upper $n}} {{.Name | upper}} {{upper (printName)}}`},
		{src: `{{- /* comment */ -}} {{.Name}} {{3}} {{true}}`},
		{src: `{{.Name}} <a title="{{.Name}}">{{.Tags}}</a>`, html: true},
	} {
		s, err := set(t, strings.ReplaceAll(tc.src, "printName", ".Name"), tc.html)
		if err != nil {
			t.Fatalf("%s: %v", tc.src, err)
		}
		got, err := s.Execute("t", data)
		if err != nil {
			t.Fatalf("%s: %v", tc.src, err)
		}
		want := textTemplate(t, strings.ReplaceAll(tc.src, "printName", ".Name"), data)
		if tc.html {
			want = strings.NewReplacer("<&>", "&lt;&amp;&gt;").Replace(want)
		}
		if got != want {
			t.Errorf("%s:\n got %q\nwant %q", tc.src, got, want)
		}
	}
}

func textTemplate(t *testing.T, src string, data any) string {
	t.Helper()
	var b strings.Builder
	tt := template.Must(template.New("t").Funcs(template.FuncMap{"upper": strings.ToUpper, "inc": func(i int) int { return i + 1 }}).Parse(src))
	if err := tt.Execute(&b, data); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// What tmplrun cannot run is refused when the set is made, not when a
// letter is sent; a method or an unexported field fails the run.
func TestWhatItRefuses(t *testing.T) {
	for _, src := range []string{
		`{{printf "%s" .Name}}`,
		`{{len .Tags}}`,
		`{{range .Tags}}{{break}}{{end}}`,
		`{{template "missing" .}}`,
	} {
		if _, err := set(t, src, false); err == nil {
			t.Errorf("New accepted %s", src)
		}
	}
	for _, src := range []string{`{{.Title}}`, `{{.hidden}}`, `{{.Name.Length}}`, `{{$.Boss.Boss.Name}}`} {
		s, err := set(t, src, false)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		if out, err := s.Execute("t", person{Name: "Ada", hidden: "x"}); err == nil {
			t.Errorf("%s ran: %q", src, out)
		}
	}
}
