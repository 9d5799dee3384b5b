package prompt

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"42sisters.ai/oracle/shared/oracle"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current prompts")

// golden renders everything a tier sends the model for exampleQuery: the
// version, both messages exactly, the settings and the response schema. A
// change to any of it shows in review as a diff of testdata/.
func golden(t *testing.T, tier oracle.Tier) []byte {
	t.Helper()
	p, err := Build(tier, exampleQuery)
	if err != nil {
		t.Fatal(err)
	}
	schema, err := json.MarshalIndent(Schema(tier), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	b.WriteString("version " + p.Version + "\n")
	b.WriteString("===== system\n" + p.System)
	b.WriteString("===== user\n" + p.User)
	fmt.Fprintf(&b, "===== settings\ntemperature %v, topP %v, topK %v, candidateCount %d, seed %d, responseMimeType %s\n",
		Temperature, TopP, TopK, CandidateCount, Seed, ResponseMIMEType)
	b.WriteString("===== schema\n")
	b.Write(schema)
	b.WriteString("\n")
	b.WriteString("===== correction after a reply the content filter would repair or hold\n")
	b.WriteString(Unpublishable([]string{"Gamma", "E8"}))
	b.WriteString("===== the same, when the filter read them only through a disguise\n")
	b.WriteString(Unpublishable(nil))
	if tier != oracle.TierQuick {
		b.WriteString("===== correction after a contradiction\n")
		b.WriteString(Contradiction(oracle.VerdictGreen, oracle.VerdictRed, oracle.Dimensions[:3], len(oracle.Dimensions)))
	}
	return b.Bytes()
}

func TestGoldenPrompts(t *testing.T) {
	for _, tier := range oracle.Tiers() {
		path := filepath.Join("testdata", string(tier)+".golden")
		got := golden(t, tier)
		want, err := os.ReadFile(path)
		if *update {
			// The golden's first line is its version: a changed prompt under
			// an unchanged Version would let two different prompts share a name.
			if err == nil && !bytes.Equal(got, want) && bytes.Equal(firstLine(got), firstLine(want)) {
				t.Fatalf("%s: the prompt changed but Version did not: bump Version, then update", path)
			}
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%v (run go test ./shared/prompt -update to create it)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from the prompt Build makes; if the change is meant, bump Version and run go test ./shared/prompt -update", path)
		}
	}
}

func firstLine(b []byte) []byte {
	line, _, _ := bytes.Cut(b, []byte("\n"))
	return line
}
