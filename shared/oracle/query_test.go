package oracle

import (
	"strings"
	"testing"
)

func TestValidateQuery(t *testing.T) {
	cases := []struct {
		name  string
		query string
		code  Code // "" means valid
	}{
		{"ordinary", "Should I open a bakery?", ""},
		{"empty", "", CodeInvalid},
		{"blank", " \n\t ", CodeInvalid},
		{"zero-width spaces and joiners", "\u200b\u200c\u200d\u2060", CodeInvalid},
		{"a byte order mark and bidirectional controls", "\ufeff\u202e\u2066\u200f", CodeInvalid},
		{"soft hyphens and no-break spaces", "\u00ad\u00a0\u3000", CodeInvalid},
		{"fillers and a blank Braille pattern", "\u3164\u115f\u2800", CodeInvalid},
		{"lone combining marks and a variation selector", "\u0301\u034f\ufe0f", CodeInvalid},
		{"control characters", "\x01\x7f", CodeInvalid},
		{"one letter among invisible ones", "\u200b\u200bx\u200b", ""},
		{"an emoji with its variation selector", "\u2764\ufe0f", ""},
		{"invalid UTF-8", "abc\xff", CodeInvalid},
		{"NUL", "a\x00b", CodeInvalid},
		{"maximum", strings.Repeat("x", MaxQueryUnits), ""},
		{"one past the maximum", strings.Repeat("x", MaxQueryUnits+1), CodeTooLarge},
		{"huge", strings.Repeat("x", 1<<20), CodeTooLarge},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := ValidateQuery(c.query)
			if c.code == "" {
				if err != nil {
					t.Fatalf("want valid, got %v", err)
				}
				return
			}
			if ErrorCode(err) != c.code {
				t.Fatalf("want %s, got %v", c.code, err)
			}
		})
	}
}
