package letter

import (
	"io/fs"
	"regexp"
	"testing"

	"42sisters.ai/oracle/shared/sosfilter"
)

var templateComment = regexp.MustCompile(`(?s)\{\{-?\s*/\*.*?\*/\s*-?\}\}`)

// Every email the mailer can send passes gate 2 as it is built from its
// template: each verdict sample and each notice, and every template file as
// written (SPEC_ORACLE_SOS_FILTER, issue 5's static check).
func TestEveryLetterPassesTheContentFilter(t *testing.T) {
	f, err := sosfilter.New()
	if err != nil {
		t.Fatal(err)
	}
	samples, err := Samples()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range samples {
		if rep := f.Mail(s.Subject, s.Text, s.HTML, ""); rep.Action != sosfilter.Pass {
			t.Errorf("%s: %s %v", s.Name, rep.Action, rep.Terms())
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
