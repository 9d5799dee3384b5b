package main

import (
	"42sisters.ai/oracle/shared/mail"
	"42sisters.ai/oracle/shared/oracle"
)

// The mailer's decisions, as functions of what they decide from: no I/O,
// so each is tested as a table.

// step is what a mail job calls for, given its order.
type step int

const (
	stepSend         step = iota // compose the email and send it
	stepUnknownOrder             // no such order: acknowledge
	stepNotOwed                  // the order is not in the state the email tells of: acknowledge
	stepFollowUps                // the verdict was quarantined: queue its follow-ups again
)

// next is what a mail job of kind calls for when its order is o (found
// false: there is none). Each email is owed only while the order is in
// the state it tells of; an unknown kind is sent, so that composing it
// fails loudly.
func next(kind oracle.MailKind, o oracle.Order, found bool) step {
	if !found {
		return stepUnknownOrder
	}
	if o.Status == oracle.StatusQuarantined && (kind == oracle.MailVerdict || kind == oracle.MailDivergence) {
		return stepFollowUps
	}
	owed := true
	switch kind {
	case oracle.MailVerdict:
		owed = o.Status == oracle.StatusReady && o.Verdict != ""
	case oracle.MailSilentDrop:
		owed = o.Status == oracle.StatusDropped
	case oracle.MailFailed:
		owed = o.Status == oracle.StatusFailed
	case oracle.MailReview:
		owed = o.Status == oracle.StatusHeld || o.Status == oracle.StatusQuarantined
	case oracle.MailDivergence:
		owed = o.Status == oracle.StatusReady && oracle.NotifyDivergence(o.Divergence)
	}
	if !owed {
		return stepNotOwed
	}
	return stepSend
}

// outcome is what the result of a send calls for.
type outcome int

const (
	// sent: the delivery is closed with the message id.
	sent outcome = iota
	// refused: the same message would be refused again; the delivery is
	// closed as refused, audited, and the operator decides.
	refused
	// blocked: nothing leaves the account until the operator acts, and
	// then every held email should: the claim is released, the operator
	// alerted, and the job retried (then kept on the dead-letter queue).
	blocked
	// retry: a later attempt can succeed; the claim is released and SQS
	// delivers the job again.
	retry
)

var outcomeNames = [...]string{"sent", "refused", "blocked", "retry"}

func (o outcome) String() string { return outcomeNames[o] }

// afterSend is what a send that returned err calls for. A failure the mail
// package did not classify is a refusal: retrying what is not known to
// pass would only repeat it.
func afterSend(err error) outcome {
	switch {
	case err == nil:
		return sent
	case mail.ClassOf(err) == mail.Transient:
		return retry
	case mail.ClassOf(err) == mail.Blocked:
		return blocked
	}
	return refused
}
