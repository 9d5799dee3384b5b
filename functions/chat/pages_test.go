package main

import (
	"bytes"
	"html/template"
	"testing"

	"42sisters.ai/oracle/shared/webpage"
)

// TestPagesAreWhatHTMLTemplateWrites: the chat's pages, run by tmplrun,
// are byte for byte what html/template writes from the same templates,
// its contextual escaping included: the inlined stylesheet and script
// as they are, hostile text in a problem's heading and message, the
// site's name and the support address escaped alike. So the plain
// escaping of tmplrun is all these templates need.
func TestPagesAreWhatHTMLTemplateWrites(t *testing.T) {
	reference := webpage.MustTemplates(files, "templates/*.html")
	const hostile = `<script>alert("x")</script> & &amp; ' " + <!-- --> {{.}} ` + "\x00 é"
	f := func(title string, script bool) frame {
		fr := frame{Title: title, Site: "42 Sisters <AI> & co", Support: "support+chat@42sisters.ai", Style: template.CSS(style.Text)}
		if script {
			fr.Script = template.JS(chatJS.Text)
		}
		return fr
	}
	views := []struct {
		name string
		data any
	}{
		{"chat.html", chatView{frame: f("Sisters Chat", true), Trial: 5, MaxMessage: 2000, DailyCap: 50, NearCap: NearCap, RetentionDays: 30, Price: Price}},
		{"chat.html", chatView{frame: f("Sisters Chat", true), Trial: 5, MaxMessage: 2000, DailyCap: 50, NearCap: NearCap, RetentionDays: 30, Price: Price, Subscribed: true}},
		{"problem.html", problemView{frame: f(hostile, false), Heading: hostile, Message: hostile}},
		{"problem.html", problemView{frame: f("Link expired", false), Heading: "Link expired", Message: hostile, AskAgain: true}},
		{"signin.html", signInView{frame: f("Sign in to Sisters Chat", false), Token: hostile, SessionDays: 30}},
	}
	for i, v := range views {
		ours, err := pages.Execute(v.name, v.data)
		if err != nil {
			t.Fatalf("%s: %v", v.name, err)
		}
		var theirs bytes.Buffer
		if err := reference.ExecuteTemplate(&theirs, v.name, v.data); err != nil {
			t.Fatalf("%s with html/template: %v", v.name, err)
		}
		if ours != theirs.String() {
			t.Errorf("view %d (%s) differs from html/template's:\n%s\nwant\n%s", i, v.name, ours, theirs.String())
		}
	}
}
