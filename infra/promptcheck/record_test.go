package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"42sisters.ai/oracle/shared/prompt"
)

// GAP-H: a prompt reaches production only with a recorded contamination
// check of exactly that prompt, over at least 50 verdicts, within its limit
// and no worse than the prompt before it.
func TestVerifyNeedsACheckOfTheCurrentPrompt(t *testing.T) {
	fp, err := prompt.Fingerprint()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	good := Check{Version: prompt.Version, Fingerprint: fp, Model: "gemini-2.5-flash", Verdicts: 50, Rate: 0, CheckedAt: now,
		ChatVersion: prompt.ChatVersion, ChatReplies: 20}
	older := Check{Version: "2026-01-01.1", Fingerprint: "0123456789abcdef01234567", Verdicts: 50, Rate: 0.02, MaxRate: 0.05, CheckedAt: now}
	with := func(f func(*Check)) Check { c := good; f(&c); return c }
	for _, tc := range []struct {
		name   string
		checks []Check
		ok     bool
	}{
		{"no check at all", nil, false},
		{"only an older prompt's", []Check{older}, false},
		{"this prompt's", []Check{older, good}, true},
		{"this fingerprint under another version", []Check{with(func(c *Check) { c.Version = "2026-01-01.1" })}, false},
		{"fewer than 50 verdicts", []Check{with(func(c *Check) { c.Verdicts = 49 })}, false},
		{"a rate above its limit", []Check{with(func(c *Check) { c.Rate = 0.02 })}, false},
		{"a rate above the previous prompt's", []Check{older, with(func(c *Check) { c.Rate, c.MaxRate = 0.04, 0.05 })}, false},
		{"no chat replies", []Check{with(func(c *Check) { c.ChatReplies, c.ChatVersion = 0, "" })}, false},
		{"fewer than 20 chat replies", []Check{with(func(c *Check) { c.ChatReplies = 19 })}, false},
		{"another chat version", []Check{with(func(c *Check) { c.ChatVersion = "2026-01-01.1" })}, false},
		{"a chat rate above its limit", []Check{with(func(c *Check) { c.ChatRate = 0.05 })}, false},
		{"a chat rate above the previous prompt's", []Check{with(func(c *Check) { c.Fingerprint, c.ChatRate, c.MaxRate = "x", 0.01, 0.05 }),
			with(func(c *Check) { c.ChatRate, c.MaxRate = 0.02, 0.05 })}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "checks.json")
			if tc.checks != nil {
				b, _ := json.Marshal(Checks{Checks: tc.checks})
				if err := os.WriteFile(path, b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := verify(path); (err == nil) != tc.ok {
				t.Fatalf("verify: %v, want ok %v", err, tc.ok)
			}
		})
	}
}

// A passing run records the prompt it measured, replacing an earlier record
// of the same prompt and keeping the others; verify then accepts it.
func TestRecordKeepsOneCheckPerPrompt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "checks.json")
	s := Summary{Verdicts: 50}
	for range 2 {
		if err := record(path, s, ChatSummary{Replies: 20}, "gemini-2.5-flash", 0, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	cs, err := readChecks(path)
	if err != nil || len(cs.Checks) != 1 || cs.Checks[0].Version != prompt.Version || cs.Checks[0].FilterVersion == "" {
		t.Fatalf("checks %+v, %v", cs, err)
	}
	if err := verify(path); err != nil {
		t.Fatal(err)
	}
}

// make deploy verifies the prompt's check before it builds anything, and
// make prompt-check records into the file deploy reads.
func TestDeployRequiresThePromptsCheck(t *testing.T) {
	b, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	mk := string(b)
	file := regexp.MustCompile(`(?m)^PROMPT_CHECKS := (\S+)$`).FindStringSubmatch(mk)
	if file == nil {
		t.Fatal("the Makefile names no PROMPT_CHECKS file")
	}
	if _, err := readChecks(filepath.Join("../..", file[1])); err != nil {
		t.Fatal(err)
	}
	deploy := regexp.MustCompile(`(?m)^deploy:\n\t(.*)$`).FindStringSubmatch(mk)
	if deploy == nil || !strings.Contains(deploy[1], "./infra/promptcheck -verify $(PROMPT_CHECKS)") {
		t.Fatalf("make deploy's first command is %q, want the prompt check's verification", deploy)
	}
	if !regexp.MustCompile(`(?m)^prompt-check:\n\t.*-record \$\(PROMPT_CHECKS\)`).MatchString(mk) {
		t.Fatal("make prompt-check does not record into PROMPT_CHECKS")
	}
}
