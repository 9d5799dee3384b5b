package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"42sisters.ai/oracle/shared/prompt"
	"42sisters.ai/oracle/shared/sosfilter"
)

// minVerdicts is the size of the check VC-6 asks for: 50 verdicts.
const minVerdicts = 50

// Checks is the file of recorded contamination checks, oldest first.
type Checks struct {
	Checks []Check `json:"checks"`
}

// Check is one passing run of the contamination check against the real
// model: which prompt it measured, and what it found.
type Check struct {
	Version       string    `json:"version"`     // prompt.Version
	Fingerprint   string    `json:"fingerprint"` // prompt.Fingerprint
	FilterVersion string    `json:"filter_version"`
	Model         string    `json:"model"`
	Verdicts      int       `json:"verdicts"`
	Replaced      int       `json:"replaced"`
	Quarantined   int       `json:"quarantined"`
	Unreadable    int       `json:"unreadable"`
	Rate          float64   `json:"rate"`
	MaxRate       float64   `json:"max_rate"`
	CheckedAt     time.Time `json:"checked_at"`
	// The chat's part: prompt.ChatVersion and its replies.
	ChatVersion     string  `json:"chat_version,omitempty"`
	ChatReplies     int     `json:"chat_replies,omitempty"`
	ChatReplaced    int     `json:"chat_replaced,omitempty"`
	ChatQuarantined int     `json:"chat_quarantined,omitempty"`
	ChatRate        float64 `json:"chat_rate,omitempty"`
}

// record adds a passing run to the file at path (created if missing),
// replacing an earlier record of the same prompt.
func record(path string, s Summary, chat ChatSummary, model string, maxRate float64, now time.Time) error {
	cs, err := readChecks(path)
	if err != nil {
		return err
	}
	fp, err := prompt.Fingerprint()
	if err != nil {
		return err
	}
	filter, err := sosfilter.New()
	if err != nil {
		return err
	}
	c := Check{Version: prompt.Version, Fingerprint: fp, FilterVersion: filter.Version(), Model: model,
		Verdicts: s.Verdicts, Replaced: s.Replaced, Quarantined: s.Quarantined, Unreadable: s.Unreadable,
		Rate: s.Rate(), MaxRate: maxRate, CheckedAt: now,
		ChatVersion: prompt.ChatVersion, ChatReplies: chat.Replies, ChatReplaced: chat.Replaced, ChatQuarantined: chat.Quarantined, ChatRate: chat.Rate()}
	kept := cs.Checks[:0]
	for _, old := range cs.Checks {
		if old.Fingerprint != fp {
			kept = append(kept, old)
		}
	}
	cs.Checks = append(kept, c)
	b, err := json.MarshalIndent(cs, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// verify accepts the file at path only if it records a check of the
// current prompt (its Version, ChatVersion and Fingerprint) over at least
// 50 readable verdicts and 20 chat replies, whose rates are within its
// limit and not above the rates of the prompt checked before it (VC-6: a
// prompt change that raises the rate is rejected).
func verify(path string) error {
	cs, err := readChecks(path)
	if err != nil {
		return err
	}
	fp, err := prompt.Fingerprint()
	if err != nil {
		return err
	}
	for i, c := range cs.Checks {
		if c.Fingerprint != fp {
			continue
		}
		switch {
		case c.Version != prompt.Version:
			return fmt.Errorf("%s: the check of this prompt names version %s, not %s", path, c.Version, prompt.Version)
		case c.Verdicts < minVerdicts:
			return fmt.Errorf("%s: the check of prompt %s read %d verdicts, fewer than %d", path, c.Version, c.Verdicts, minVerdicts)
		case c.Rate > c.MaxRate:
			return fmt.Errorf("%s: the check of prompt %s found a rate of %.1f%%, above its limit", path, c.Version, 100*c.Rate)
		case i > 0 && c.Rate > cs.Checks[i-1].Rate:
			return fmt.Errorf("%s: prompt %s raised the contamination rate from %.1f%% to %.1f%%", path, c.Version, 100*cs.Checks[i-1].Rate, 100*c.Rate)
		case c.ChatVersion != prompt.ChatVersion:
			return fmt.Errorf("%s: the check of this prompt names chat version %q, not %s", path, c.ChatVersion, prompt.ChatVersion)
		case c.ChatReplies < minChatReplies:
			return fmt.Errorf("%s: the check of prompt %s read %d chat replies, fewer than %d", path, c.Version, c.ChatReplies, minChatReplies)
		case c.ChatRate > c.MaxRate:
			return fmt.Errorf("%s: the check of prompt %s found a chat rate of %.1f%%, above its limit", path, c.Version, 100*c.ChatRate)
		case i > 0 && cs.Checks[i-1].ChatReplies > 0 && c.ChatRate > cs.Checks[i-1].ChatRate:
			return fmt.Errorf("%s: prompt %s raised the chat contamination rate from %.1f%% to %.1f%%", path, c.Version, 100*cs.Checks[i-1].ChatRate, 100*c.ChatRate)
		}
		return nil
	}
	return fmt.Errorf("%s has no contamination check of prompt %s (fingerprint %s): run make prompt-check with GEMINI_API_KEY and commit the record", path, prompt.Version, fp)
}

func readChecks(path string) (Checks, error) {
	var cs Checks
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return cs, nil
	}
	if err != nil {
		return cs, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cs); err != nil {
		return cs, fmt.Errorf("%s: %w", path, err)
	}
	return cs, nil
}
