package main

import (
	"io/fs"
	"regexp"
	"testing"

	"42sisters.ai/oracle/shared/sosfilter"
)

var templateComment = regexp.MustCompile(`(?s)\{\{-?\s*/\*.*?\*/\s*-?\}\}`)

// Every word the pages can show a customer passes the content filter
// (SPEC_ORACLE_SOS_FILTER, issue 5's static check): each rendered page as
// HTML, and every template and asset file as written, hidden states and
// script included.
func TestEveryPageTextPassesTheContentFilter(t *testing.T) {
	f, err := sosfilter.New()
	if err != nil {
		t.Fatal(err)
	}
	pages, err := renderAll()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pages {
		if rep := f.Mail("", "", p.Body, ""); rep.Action != sosfilter.Pass {
			t.Errorf("%s: %s %v", p.Name, rep.Action, rep.Terms())
		}
	}
	n := 0
	err = fs.WalkDir(files, "templates", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := files.ReadFile(path)
		if err != nil {
			return err
		}
		n++
		// Template comments never render; everything else may.
		if r := f.Text(templateComment.ReplaceAllString(string(b), ""), ""); r.Action != sosfilter.Pass {
			t.Errorf("%s: %s %v", path, r.Action, r.Terms())
		}
		return nil
	})
	if err != nil || n == 0 {
		t.Fatalf("walked %d files: %v", n, err)
	}
}
