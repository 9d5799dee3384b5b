package webpage_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"testing"
	"testing/fstest"

	"42sisters.ai/oracle/shared/sosfilter"
	"42sisters.ai/oracle/shared/webpage"
)

// A page's stylesheet is the shared rules then its own, and the policy
// allows exactly that text and the page's script by their hashes.
func TestStyleAndPolicy(t *testing.T) {
	fsys := fstest.MapFS{"own.css": {Data: []byte(".own { color: red; }\n")}, "page.js": {Data: []byte("run();\n")}}
	style := webpage.MustStyle(fsys, "own.css")
	if !strings.Contains(style.Text, ":root {") || !strings.HasSuffix(style.Text, ".own { color: red; }\n") {
		t.Fatalf("the style is not the shared rules then the page's own:\n%s", style.Text)
	}
	script := webpage.MustAsset(fsys, "page.js")
	hash := func(s string) string {
		sum := sha256.Sum256([]byte(s))
		return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
	}
	csp := webpage.CSP(style, &script)
	for _, want := range []string{"default-src 'none'", "script-src " + hash("run();\n"), "style-src " + hash(style.Text), "trusted-types 'none'", "frame-ancestors 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("the policy lacks %q: %s", want, csp)
		}
	}
	if strings.Contains(webpage.CSP(style, nil), "script-src") {
		t.Error("a page without a script allows one")
	}
}

// The frame around every page, rendered, passes the content filter.
func TestFramePassesTheContentFilter(t *testing.T) {
	fsys := fstest.MapFS{"page.html": {Data: []byte(`{{template "page start" .}}<main></main>{{template "page end" .}}`)}}
	var b bytes.Buffer
	data := map[string]any{"Title": "A page", "Site": "42 Sisters AI", "Support": "support@example.com", "Style": "", "Script": ""}
	if err := webpage.MustTemplates(fsys, "*.html").ExecuteTemplate(&b, "page.html", data); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "<!DOCTYPE html>") || !strings.Contains(b.String(), "Questions? Write to") {
		t.Fatalf("the frame is not around the page:\n%s", b.String())
	}
	f, err := sosfilter.New()
	if err != nil {
		t.Fatal(err)
	}
	if rep := f.Mail("", "", b.String(), sosfilter.Own{}); rep.Action != sosfilter.Pass {
		t.Errorf("the frame: %v", rep.Action)
	}
}
