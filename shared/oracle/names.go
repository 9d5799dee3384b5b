package oracle

import (
	"regexp"
	"strings"
)

// wholeID finds an order's id, or the start of one longer than its name,
// in free text: the mode prefix and more random characters than a name
// keeps.
var wholeID = regexp.MustCompile(`(?:cs_(?:live|test)_|x402_(?:live|test)_)[A-Za-z0-9]{17,}`)

// NameIDs returns s with every order id in it cut to its name (ShortID):
// what a text bound for a log line, an alert or a trace may say of an
// order, since a whole id opens the customer's result page.
func NameIDs(s string) string {
	if !strings.Contains(s, "cs_") && !strings.Contains(s, "x402_") {
		return s // the common case costs no regexp
	}
	return wholeID.ReplaceAllStringFunc(s, ShortID)
}

// namePattern is the shape of a name: the mode prefix and the 16 random
// characters ShortID keeps.
var namePattern = regexp.MustCompile(`^(?:cs_(?:live|test)_|x402_(?:live|test)_)[A-Za-z0-9]{16}$`)

// IsName reports whether s has the shape of an order's name, as alerts and
// log lines give it (an id no longer than a name is its own name).
func IsName(s string) bool { return namePattern.MatchString(s) }
