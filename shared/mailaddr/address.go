// Package mailaddr gives an email address its one canonical form, used
// wherever an address is a key (an account, a trial, a rate limit, an audit
// hash) or a destination (the mailer): two strings that reach one mailbox
// are one address, and two mailboxes never share one.
package mailaddr

import (
	"errors"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// Why an address has no canonical form. None quotes the address.
var (
	// ErrInvalid: not local@domain, or a domain that is not a valid
	// (internationalised) host name.
	ErrInvalid = errors.New("not a valid email address")
	// ErrLocalNotASCII: characters before the @ beyond ASCII, which email
	// without SMTPUTF8 (SES) cannot carry and whose case no one agrees on.
	ErrLocalNotASCII = errors.New("the part before the @ has characters beyond ASCII")
	// ErrLookalike: a domain whose Unicode lower case names another
	// domain than the domain itself (İ, which Go lowers to i, but IDNA maps
	// to i and a combining dot): typed so, it would reach someone else's
	// account under a simple lower-casing, or a look-alike's mailbox under
	// IDNA.
	ErrLookalike = errors.New("the domain's letters read as another domain's")
)

// profile is IDNA's lookup profile (UTS #46 mapping, IDNA 2008 rules, the
// bidi and joiner checks): the form a resolver, and so a mail server,
// gives a typed domain.
var profile = idna.Lookup

// Canonical is addr's canonical form: surrounding space trimmed, the local
// part lower-cased in ASCII (any other local part is refused), the domain
// through IDNA ToASCII (UTS #46, the lookup profile) and lower-cased. An
// address whose domain's Unicode lower case would canonicalise to another
// domain is refused (ErrLookalike): its owner is asked to type it as the
// mail provider writes it.
func Canonical(addr string) (string, error) {
	addr = strings.TrimSpace(addr)
	at := strings.LastIndexByte(addr, '@')
	if !utf8.ValidString(addr) || at <= 0 || at == len(addr)-1 {
		return "", ErrInvalid
	}
	local, domain := addr[:at], addr[at+1:]
	if strings.ContainsAny(local, "@ ") {
		return "", ErrInvalid
	}
	for i := 0; i < len(local); i++ {
		if local[i] >= utf8.RuneSelf {
			return "", ErrLocalNotASCII
		}
	}
	ascii, err := profile.ToASCII(domain)
	if err != nil || !hostName(ascii) || len(local) > maxLocal {
		return "", ErrInvalid
	}
	ascii = lowerASCII(ascii)
	if !isASCII(domain) {
		// Go's strings.ToLower uses Unicode's simple case mapping, IDNA its
		// own: where they disagree one typed domain names two.
		lowered, err := profile.ToASCII(strings.ToLower(domain))
		if err != nil || lowerASCII(lowered) != ascii {
			return "", ErrLookalike
		}
	}
	return lowerASCII(local) + "@" + ascii, nil
}

// Folded is a key for addr that never joins two addresses Canonical tells
// apart: its canonical form, or, for an address that has none (an old
// record, a customer's address as Stripe holds it), the address trimmed
// and lower-cased in ASCII only, so that no Unicode case mapping can make it
// collide with another.
func Folded(addr string) string {
	if c, err := Canonical(addr); err == nil {
		return c
	}
	return lowerASCII(strings.TrimSpace(addr))
}

// TrialIdentity is the person behind a canonical address, as far as a free
// trial is concerned: the address without its +tag, and for Gmail (whose
// addresses ignore dots before the @, under either of its domains) without
// dots and on gmail.com. Many addresses, one trial.
func TrialIdentity(canonical string) string {
	at := strings.LastIndexByte(canonical, '@')
	if at <= 0 {
		return canonical
	}
	local, domain := canonical[:at], canonical[at+1:]
	if plus := strings.IndexByte(local, '+'); plus > 0 {
		local = local[:plus]
	}
	if domain == "gmail.com" || domain == "googlemail.com" {
		local, domain = strings.ReplaceAll(local, ".", ""), "gmail.com"
	}
	return local + "@" + domain
}

// RFC 5321's limits: 64 octets before the @, 253 in a domain name, 63 in
// each of its labels.
const (
	maxLocal  = 64
	maxDomain = 253
	maxLabel  = 63
)

// hostName reports whether an ASCII domain is a host name mail can reach:
// within DNS's lengths, no empty label, at least two labels.
func hostName(domain string) bool {
	if len(domain) > maxDomain || !strings.Contains(domain, ".") {
		return false
	}
	for label := range strings.SplitSeq(domain, ".") {
		if label == "" || len(label) > maxLabel {
			return false
		}
	}
	return true
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// lowerASCII lower-cases A to Z and nothing else.
func lowerASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
