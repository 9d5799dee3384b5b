// Package webpage is the frame the service's HTML pages share (the order
// form, the result page, the chat): the document around every page, the
// stylesheet every page starts with, and the Content-Security-Policy that
// lets only a page's own inlined style and script run.
package webpage

import (
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"html/template"
	"io/fs"
	"net/http"
	"strings"
	text "text/template"

	"42sisters.ai/oracle/shared/httpapi"
	"42sisters.ai/oracle/shared/tmplrun"
)

//go:embed frame.html base.css
var files embed.FS

// Asset is a stylesheet or script inlined into a page, with the CSP source
// expression ('sha256-…') that allows exactly that text.
type Asset struct {
	Text   string
	Source string
}

// NewAsset is text as an asset.
func NewAsset(text string) Asset {
	sum := sha256.Sum256([]byte(text))
	return Asset{Text: text, Source: "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"}
}

// MustAsset reads name from fsys as an asset. The assets are part of the
// binary: one that is missing is a build defect every test catches.
func MustAsset(fsys fs.FS, name string) Asset {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		panic(err)
	}
	return NewAsset(string(b))
}

// MustStyle is the stylesheet of a function's pages: the shared rules,
// then the function's own from name in fsys.
func MustStyle(fsys fs.FS, name string) Asset {
	base, err := files.ReadFile("base.css")
	if err != nil {
		panic(err)
	}
	own, err := fs.ReadFile(fsys, name)
	if err != nil {
		panic(err)
	}
	return NewAsset(string(base) + "\n" + string(own))
}

// MustTemplates parses the frame ("page start", "page end") and a
// function's templates matching pattern in fsys.
func MustTemplates(fsys fs.FS, pattern string) *template.Template {
	return template.Must(template.Must(template.New("").ParseFS(files, "frame.html")).ParseFS(fsys, pattern))
}

// CSP is the Content-Security-Policy of a page styled by style and running
// script (nil for a page without one). Trusted Types with no policy make
// any HTML-parsing sink (innerHTML and the like) throw, so the pages' rule
// of inserting text only is enforced by the browser too; the API is the
// page's own origin.
func CSP(style Asset, script *Asset) string {
	directives := []string{"default-src 'none'"}
	if script != nil {
		directives = append(directives, "script-src "+script.Source)
	}
	directives = append(directives,
		"style-src "+style.Source,
		"connect-src 'self'",
		"img-src 'self' data:",
		"form-action 'self'",
		"base-uri 'none'",
		"frame-ancestors 'none'",
		"require-trusted-types-for 'script'",
		"trusted-types 'none'",
	)
	return strings.Join(directives, "; ")
}

// Response answers a page with the headers every page carries: its policy,
// no sniffing, no referrer, never cached; a 405 says what is allowed.
func Response(status int, csp, body string) httpapi.Response {
	resp := httpapi.Response{
		StatusCode: status,
		Headers: map[string]string{
			"Content-Type":            "text/html; charset=utf-8",
			"Content-Security-Policy": csp,
			"X-Content-Type-Options":  "nosniff",
			"Referrer-Policy":         "no-referrer",
			"Cache-Control":           "no-store",
		},
		Body: body,
	}
	if status == http.StatusMethodNotAllowed {
		resp.Headers["Allow"] = http.MethodGet
	}
	return resp
}

// MustPages is MustTemplates run by tmplrun instead of html/template: a
// function that also calls AWS renders its pages with it, so that
// html/template's reflection does not keep every method of the AWS
// clients in its bootstrap (package tmplrun). Its pages' tests compare
// them with MustTemplates' rendering.
func MustPages(fsys fs.FS, pattern string, funcs map[string]any) *tmplrun.Set {
	t, err := text.New("").Funcs(funcs).ParseFS(files, "frame.html")
	if err == nil {
		t, err = t.ParseFS(fsys, pattern)
	}
	if err != nil {
		panic(err)
	}
	s, err := tmplrun.New(t, funcs, true)
	if err != nil {
		panic(err)
	}
	return s
}
