package mailaddr

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCanonical(t *testing.T) {
	cases := []struct {
		name, in, want string
		err            error
	}{
		{"plain", "kate@gmail.com", "kate@gmail.com", nil},
		{"upper case in ASCII", " Kate@GMAIL.Com ", "kate@gmail.com", nil},
		{"dotted capital I in the domain (Go lowers it to i)", "kate@gmaİl.com", "", ErrLookalike},
		{"dotted capital I, upper case domain", "KATE@GMAİL.COM", "", ErrLookalike},
		{"Kelvin sign in the local part", "\u212Aate@gmail.com", "", ErrLocalNotASCII},
		{"any letter beyond ASCII in the local part", "zoë@example.com", "", ErrLocalNotASCII},
		{"Kelvin sign in the domain maps to k both ways", "kate@\u212Aate.com", "kate@kate.com", nil},
		{"internationalised domain", "user@bücher.de", "user@xn--bcher-kva.de", nil},
		{"internationalised domain, upper case", "user@BÜCHER.DE", "user@xn--bcher-kva.de", nil},
		{"the same domain in punycode", "user@XN--BCHER-KVA.de", "user@xn--bcher-kva.de", nil},
		{"full-width letters map to ASCII", "a@ｇｍａｉｌ.com", "a@gmail.com", nil},
		{"dotless i is its own domain", "kate@gmaıl.com", "kate@xn--gmal-nza.com", nil},
		{"a +tag is kept", "Kate+News@gmail.com", "kate+news@gmail.com", nil},
		{"no local part", "@example.com", "", ErrInvalid},
		{"no domain", "kate@", "", ErrInvalid},
		{"two @", "a@b@example.com", "", ErrInvalid},
		{"empty label", "a@example..com", "", ErrInvalid},
		{"one label", "a@localhost", "", ErrInvalid},
		{"leading hyphen", "a@-x.com", "", ErrInvalid},
		{"label over 63", "a@" + strings.Repeat("x", 64) + ".com", "", ErrInvalid},
		{"local part over 64", strings.Repeat("x", 65) + "@example.com", "", ErrInvalid},
		{"not UTF-8", "a@ex\xffample.com", "", ErrInvalid},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Canonical(c.in)
			if !errors.Is(err, c.err) || got != c.want {
				t.Fatalf("Canonical(%q) = %q, %v; want %q, %v", c.in, got, err, c.want, c.err)
			}
		})
	}
}

// The attack of issue 38: a look-alike of a person's address must never
// name their account. Every accepted form of it either is refused or has a
// key of its own.
func TestALookalikeNeverNamesAnotherAccount(t *testing.T) {
	victim, err := Canonical("kate@gmail.com")
	if err != nil {
		t.Fatal(err)
	}
	for _, lookalike := range []string{"kate@gmaİl.com", "\u212Aate@gmail.com", "kate@gmaıl.com", "kate@gmaİl.com"} {
		if c, err := Canonical(lookalike); err == nil && c == victim {
			t.Errorf("%q canonicalises to the victim's %q", lookalike, victim)
		}
		if Folded(lookalike) == victim {
			t.Errorf("%q folds to the victim's %q", lookalike, victim)
		}
	}
}

func TestFolded(t *testing.T) {
	cases := map[string]string{
		" Kate@Example.COM ": "kate@example.com",
		"user@BÜCHER.de":     "user@xn--bcher-kva.de",
		// No canonical form: ASCII letters lowered, nothing else mapped.
		"Zoë@Example.com": "zoë@example.com",
		"KATE@GMAİL.COM":  "kate@gmaİl.com",
	}
	for in, want := range cases {
		if got := Folded(in); got != want {
			t.Errorf("Folded(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTrialIdentity(t *testing.T) {
	cases := map[string]string{
		"kate@example.com":            "kate@example.com",
		"kate+1@example.com":          "kate@example.com",
		"kate+a+b@example.com":        "kate@example.com",
		"k.a.t.e@example.com":         "k.a.t.e@example.com",
		"k.a.t.e+x@gmail.com":         "kate@gmail.com",
		"ka.te@googlemail.com":        "kate@gmail.com",
		"+only@example.com":           "+only@example.com",
		"first.last@xn--bcher-kva.de": "first.last@xn--bcher-kva.de",
	}
	for in, want := range cases {
		if got := TrialIdentity(in); got != want {
			t.Errorf("TrialIdentity(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzCanonical: whatever is typed, a canonical form is ASCII, lower case,
// a fixed point, and its trial identity one too.
func FuzzCanonical(f *testing.F) {
	for _, s := range []string{"kate@gmail.com", "kate@gmaİl.com", "\u212Aate@gmail.com", "user@bücher.de",
		"a@ｇｍａｉｌ.com", "k.a.t.e+x@googlemail.com", "a@b", "@", "a@xn--.com", "a@xn--gmail-bgd.com"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := Canonical(s)
		if err != nil {
			if c != "" {
				t.Fatalf("Canonical(%q) = %q with %v", s, c, err)
			}
			if f := Folded(s); utf8.ValidString(s) && f != lowerASCII(strings.TrimSpace(s)) {
				t.Fatalf("Folded(%q) = %q, not its ASCII lower case", s, f)
			}
			return
		}
		for i := 0; i < len(c); i++ {
			if c[i] >= utf8.RuneSelf || ('A' <= c[i] && c[i] <= 'Z') {
				t.Fatalf("Canonical(%q) = %q: not lower-case ASCII", s, c)
			}
		}
		if again, err := Canonical(c); err != nil || again != c {
			t.Fatalf("Canonical(%q) = %q, but Canonical(%q) = %q, %v", s, c, c, again, err)
		}
		if id := TrialIdentity(c); TrialIdentity(id) != id {
			t.Fatalf("TrialIdentity(%q) = %q is not a fixed point", c, id)
		}
	})
}
