package ascii

import (
	"math/rand/v2"
	"regexp"
	"strconv"
	"testing"
)

// TestRunIsTheRegexp: Run(s, min, max) answers as ^[spec]{min,max}$ does,
// for strings near the bounds, of the set's characters and others (another
// ASCII character, a letter outside ASCII, a byte of no UTF-8).
func TestRunIsTheRegexp(t *testing.T) {
	cases := []struct {
		spec     string
		min, max int
	}{
		{"A-Za-z0-9._/#:-", 1, 255},
		{"A-Za-z0-9_-", 8, 80},
		{"a-z0-9-", 0, 40},
		{"0-9a-f", 32, 32},
		{"A-Za-z ", 0, 39},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range cases {
		set := NewSet(c.spec)
		re := regexp.MustCompile(`^[` + c.spec + `]{` + strconv.Itoa(c.min) + `,` + strconv.Itoa(c.max) + `}$`)
		var in []byte
		for b := range 0x80 {
			if re.MatchString(string(rune(b))) != (set.Has(byte(b)) && c.min <= 1 && 1 <= c.max) {
				t.Errorf("%q: the character %q is in one and not the other", c.spec, rune(b))
			}
			if set.Has(byte(b)) {
				in = append(in, byte(b))
			}
		}
		for range 5000 {
			n := max(0, c.min-2+rng.IntN(c.max-c.min+5))
			b := make([]byte, n)
			for i := range b {
				b[i] = in[rng.IntN(len(in))]
			}
			s := string(b)
			if n > 0 && rng.IntN(3) == 0 {
				at := rng.IntN(n)
				s = s[:at] + []string{"!", "é", "\xff", "\n", "]"}[rng.IntN(5)] + s[at+1:]
			}
			if got, want := set.Run(s, c.min, c.max), re.MatchString(s); got != want {
				t.Fatalf("%q{%d,%d}: Run(%q) = %v, the regular expression says %v", c.spec, c.min, c.max, s, got, want)
			}
		}
	}
}

// TestNewSet: ranges, a literal - at either end, and nothing outside ASCII.
func TestNewSet(t *testing.T) {
	s := NewSet("-a-c_-")
	for _, c := range []byte("-abc_") {
		if !s.Has(c) {
			t.Errorf("%q is missing", c)
		}
	}
	for _, c := range []byte("dA`^\x80\xff") {
		if s.Has(c) {
			t.Errorf("%q is in", c)
		}
	}
	if u := NewSet("é"); u != (Set{}) {
		t.Errorf("a set of no ASCII character holds %v", u)
	}
}
