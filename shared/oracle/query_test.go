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
