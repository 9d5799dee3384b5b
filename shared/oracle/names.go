package oracle

import (
	"strings"
)

// NameIDs returns s with every order id in it cut to its name (ShortID):
// what a text bound for a log line, an alert or a trace may say of an
// order, since a whole id opens the customer's result page. Every log line
// passes through it, most naming an order already: it scans without a
// regexp and allocates only when it cuts.
func NameIDs(s string) string {
	var b []byte
	copied := 0
	for i := 0; i < len(s); {
		n := modePrefix(s[i:])
		if n == 0 {
			i++
			continue
		}
		end := i + n
		// An id glued to the next one ends where the next begins.
		for end < len(s) && isBase62(s[end]) && modePrefix(s[end:]) == 0 {
			end++
		}
		if end-i-n > nameRandom {
			b = append(b, s[copied:i+n+nameRandom]...)
			copied = end
		}
		i = end
	}
	if b == nil {
		return s
	}
	return string(append(b, s[copied:]...))
}

// nameRandom is how many random characters a name keeps.
const nameRandom = 16

// modePrefix is the length of the mode prefix s starts with (cs_live_,
// cs_test_, x402_live_ or x402_test_), or 0.
func modePrefix(s string) int {
	for _, p := range [...]string{"cs_live_", "cs_test_", "x402_live_", "x402_test_"} {
		if strings.HasPrefix(s, p) {
			return len(p)
		}
	}
	return 0
}

func isBase62(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z'
}

// IsName reports whether s has the shape of an order's name, as alerts and
// log lines give it (an id no longer than a name is its own name): the
// mode prefix and the 16 random characters ShortID keeps.
func IsName(s string) bool {
	return alphanumeric(afterMode(s, "cs_"), 16) || alphanumeric(afterMode(s, "x402_"), 16)
}
