package chatreply

import (
	"fmt"
	"unicode"
	"unicode/utf8"

	"42sisters.ai/oracle/shared/oracle"
)

// Bounds of what an exchange reads.
const (
	// MaxMessageChars is the most visible characters (VisibleChars) a
	// message may have.
	MaxMessageChars = 2000
	// MaxMessageBytes bounds a message's size whatever it shows: invisible
	// characters and combining marks cost bytes and model tokens too.
	MaxMessageBytes = 16 << 10
	// MaxHistoryChars bounds the conversation the model reads with a new
	// message, in characters: the newest turns that fit, oldest dropped
	// first (Bound). Four exchanges of long messages and replies fit; the
	// prompt stays a few thousand tokens.
	MaxHistoryChars = 8000
)

// The errors of Validate, each an *oracle.Error whose code the HTTP layer
// maps (400 for the first three, 413 for ErrTooLong) and whose message a
// person may read.
var (
	ErrEmpty     = oracle.Errorf(oracle.CodeInvalid, "the message is empty: write something first")
	ErrInvisible = oracle.Errorf(oracle.CodeInvalid, "the message shows nothing: it holds only spaces or invisible characters")
	ErrNotText   = oracle.Errorf(oracle.CodeInvalid, "the message is not text: it must be UTF-8 without NUL characters")
	ErrTooLong   = oracle.Errorf(oracle.CodeTooLarge, "the message is too long: at most %d characters", MaxMessageChars)
)

// Validate refuses a message the chat does not answer: empty (ErrEmpty),
// not UTF-8 or holding a NUL (ErrNotText), showing nothing a reader could
// read (ErrInvisible: only white space, format characters such as
// zero-width spaces, control characters or lone combining marks, the test
// the order form applies to a query, oracle.Blank), or longer than
// MaxMessageChars visible characters or MaxMessageBytes bytes (ErrTooLong).
// Use errors.Is to tell them apart.
func Validate(message string) error {
	switch {
	case message == "":
		return ErrEmpty
	case !utf8.ValidString(message) || containsNUL(message):
		return ErrNotText
	case len(message) > MaxMessageBytes || VisibleChars(message) > MaxMessageChars:
		return ErrTooLong
	case oracle.Blank(message):
		return ErrInvisible
	}
	return nil
}

func containsNUL(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return true
		}
	}
	return false
}

// VisibleChars counts the characters of s a reader sees: every character,
// spaces and line breaks included, but the invisible ones (format
// characters such as zero-width joiners and the byte order mark, control
// characters other than tabs and line breaks, and combining marks, which
// sit on the character before them). The chat page counts the same way.
func VisibleChars(s string) int {
	n := 0
	for _, r := range s {
		switch {
		case r >= ' ' && r < 0x7f, r == '\n' || r == '\t' || r == '\r':
			n++
		case r < utf8.RuneSelf: // the other ASCII controls
		case unicode.In(r, unicode.Cf, unicode.Cc, unicode.Mn, unicode.Me):
		default:
			n++
		}
	}
	return n
}

// Roles of a Turn.
const (
	RolePerson = "user"   // the person's message
	RoleVoice  = "aether" // the single external voice's reply
)

// Turn is one earlier message of a conversation.
type Turn struct {
	Role string // RolePerson or RoleVoice
	Text string
}

// Bound returns the newest turns of history whose texts fit in
// MaxHistoryChars characters together, in their order: the oldest are
// dropped first, whole, and a turn that does not fit ends the count, so
// the conversation the model reads has no gap. It returns a slice of
// history.
func Bound(history []Turn) []Turn {
	total := 0
	for i := len(history) - 1; i >= 0; i-- {
		total += utf8.RuneCountInString(history[i].Text)
		if total > MaxHistoryChars {
			return history[i+1:]
		}
	}
	return history
}

// checkRoles refuses a turn of an unknown role: a caller's mistake, not the
// person's.
func checkRoles(history []Turn) error {
	for i, t := range history {
		if t.Role != RolePerson && t.Role != RoleVoice {
			return fmt.Errorf("chatreply: turn %d has the unknown role %q", i, t.Role)
		}
	}
	return nil
}
