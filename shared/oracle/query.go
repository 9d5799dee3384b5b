package oracle

import (
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxQueryUnits is the longest query, in UTF-16 code units (the characters
// the order form and Stripe count): what a Checkout Session's metadata can
// carry (shared/stripex derives it from Stripe's caps and tests that it
// agrees). A longer query is refused with 413 before any payment.
const MaxQueryUnits = 22540

// ValidateQuery checks a customer's query before any payment is taken. The
// query itself is never altered: what the customer typed is what is judged.
func ValidateQuery(query string) error {
	if !utf8.ValidString(query) {
		return Errorf(CodeInvalid, "query must be valid UTF-8 text")
	}
	if Blank(query) {
		return Errorf(CodeInvalid, "query is empty: describe your idea or question")
	}
	if strings.ContainsRune(query, 0) {
		return Errorf(CodeInvalid, "query contains a NUL character")
	}
	if QueryUnits(query) > MaxQueryUnits {
		return Errorf(CodeTooLarge, "query is too long: at most %d characters", MaxQueryUnits)
	}
	return nil
}

// Blank reports whether s shows nothing a reader could read: only white
// space, format characters (zero-width spaces and joiners, the byte order
// mark, bidirectional controls, soft hyphens), control characters,
// combining marks with nothing to combine with, and the fillers that render
// as blanks. The order form applies the same test (order.js).
func Blank(s string) bool {
	for _, r := range s {
		switch {
		case unicode.IsSpace(r), unicode.In(r, unicode.Cf, unicode.Cc, unicode.Mn, unicode.Me):
		case r == '\u115F', r == '\u1160', r == '\u3164', r == '\uFFA0', r == '\u2800':
			// Hangul fillers and the blank Braille pattern.
		default:
			return false
		}
	}
	return true
}

// DropReason says why a paid session cannot be fulfilled. Empty means it can.
type DropReason string

// Reasons for a silent drop (SPEC_ORACLE_SILENT_DROP "Primary trigger").
const (
	DropNone         DropReason = ""
	DropTierMissing  DropReason = "tier_missing"
	DropTierInvalid  DropReason = "tier_invalid"
	DropQueryEmpty   DropReason = "query_empty"
	DropChunkMissing DropReason = "query_chunk_missing"
)

// QueryUnits is the query's length in UTF-16 code units, the "characters"
// that the order form and Stripe count.
func QueryUnits(s string) int {
	n := 0
	for _, r := range s {
		n += UnitsOf(r)
	}
	return n
}

// UnitsOf is the length of r in UTF-16 code units.
func UnitsOf(r rune) int {
	if utf16.RuneLen(r) == 2 {
		return 2
	}
	return 1
}
