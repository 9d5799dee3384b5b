package inbox

import (
	"strings"
)

// Skip says why a message is not acknowledged; "" when it is.
type Skip string

// Why a message gets no acknowledgement. Every message is alerted all the
// same (SPEC_ORACLE_INBOX_WATCH invariant 6): these govern the reply only.
const (
	SkipNoSender  Skip = "no_sender"     // no address to answer
	SkipListed    Skip = "skip_list"     // in the skip set
	SkipOwn       Skip = "own_address"   // the service's own address: a loop
	SkipNoReply   Skip = "no_reply"      // a no-reply sender
	SkipAutomatic Skip = "automatic"     // a bounce, an auto-reply, list mail
	SkipJunk      Skip = "spam_or_virus" // the receiving service's verdict
	SkipCooldown  Skip = "cooldown"      // acknowledged within the cooldown
	SkipDuplicate Skip = "duplicate"     // this message was handled already
)

// DefaultSkip is the spec's skip set, less the service's own address,
// which Policy.Own holds whatever it is configured to.
var DefaultSkip = []string{"noreply@stripe.com", "no-reply@stripe.com", "receipts@stripe.com"}

// noReplyPrefixes are the local parts that say nobody reads the answer,
// compared in lower case (gap G8).
var noReplyPrefixes = []string{"no-reply", "noreply", "no_reply", "do-not-reply", "donotreply"}

// Policy decides which messages are acknowledged.
type Policy struct {
	// Own are the service's own addresses, lower-case: never answered.
	Own []string
	// Skip are addresses never answered, lower-case.
	Skip []string
}

// Acknowledge reports whether m is owed the acknowledgement, or why not.
// The cooldown and the deduplication are the caller's: they need state.
func (p Policy) Acknowledge(m Message) Skip {
	local, domain, ok := strings.Cut(m.From, "@")
	switch {
	case !ok || local == "" || domain == "":
		return SkipNoSender
	case contains(p.Own, m.From):
		return SkipOwn
	case contains(p.Skip, m.From):
		return SkipListed
	case hasAnyPrefix(local, noReplyPrefixes):
		return SkipNoReply
	case m.Automatic != "":
		return SkipAutomatic
	case m.Junk != "":
		return SkipJunk
	}
	return ""
}

// ReplySubject is the acknowledgement's subject: "Re: " before the
// message's, unless it starts with "Re:" already (V9). The check ignores
// case, where the spec's is case-sensitive: Outlook writes "RE:", and
// "Re: RE:" is the double prefix V9 forbids.
func ReplySubject(subject string) string {
	subject = strings.TrimSpace(subject)
	if len(subject) >= 3 && strings.EqualFold(subject[:3], "Re:") {
		return subject
	}
	if subject == "" {
		return "Re: your message"
	}
	return "Re: " + subject
}

// Domain is the domain of an address, which alerts may show.
func Domain(addr string) string {
	_, d, _ := strings.Cut(addr, "@")
	return d
}

func contains(set []string, addr string) bool {
	for _, s := range set {
		if strings.EqualFold(s, addr) {
			return true
		}
	}
	return false
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}
