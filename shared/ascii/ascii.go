// Package ascii checks that a string is a run of characters from a set of
// ASCII characters, of a bounded length: what ^[set]{min,max}$ says as a
// regular expression. A compiled bound writes its class out max times:
// such a pattern cost up to 0.7 ms and 3,300 allocations of every cold
// start of every function that linked it (the metrics namespace's
// {1,255}, a session id's {1,250}), where this costs nothing at start
// and one pass over the string's bytes.
package ascii

// Set is a set of ASCII characters.
type Set [2]uint64

// NewSet returns the set spec names: its characters, where x-y names the
// characters from x to y (a - first or last is itself), as in a regular
// expression's class. Bytes outside ASCII are left out.
func NewSet(spec string) Set {
	var s Set
	for i := 0; i < len(spec); i++ {
		lo, hi := spec[i], spec[i]
		if i+2 < len(spec) && spec[i+1] == '-' {
			hi = spec[i+2]
			i += 2
		}
		for c := int(lo); c <= int(hi) && c < 0x80; c++ {
			s[c>>6] |= 1 << (c & 63)
		}
	}
	return s
}

// Has reports whether c is in the set.
func (s *Set) Has(c byte) bool { return c < 0x80 && s[c>>6]&(1<<(c&63)) != 0 }

// Run reports whether str is min to max characters, each in the set.
func (s *Set) Run(str string, min, max int) bool {
	if len(str) < min || len(str) > max {
		return false
	}
	for i := 0; i < len(str); i++ {
		if !s.Has(str[i]) {
			return false
		}
	}
	return true
}
