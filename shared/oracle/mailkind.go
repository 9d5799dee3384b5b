package oracle

// MailKind names one email an order can owe its customer. Each kind is sent
// at most once per order.
type MailKind string

// The mail kinds.
const (
	MailVerdict    MailKind = "verdict"     // the verdict
	MailSilentDrop MailKind = "silent_drop" // the payment arrived without a usable tier or query: please reply with your question
	MailFailed     MailKind = "failed"      // no verdict within the parking budget: the refund notice
	MailReview     MailKind = "review"      // the verdict is held or quarantined for review
	MailDivergence MailKind = "divergence"  // a regenerated verdict differs significantly from the one emailed
	MailRefund     MailKind = "refund"      // the payment was refunded in full
)

// MailAutoresponse is the support inbox's acknowledgement of a message the
// customer wrote: owed to a message, not to an order, so it is not one of
// MailKinds.
const MailAutoresponse MailKind = "autoresponse"

// The chat's mail kinds: owed to a chat account (named by its keyed hash),
// not to an order, so not among MailKinds either.
const (
	// MailChatSignIn: a sign-in link, minted when the email is sent.
	MailChatSignIn MailKind = "chat_signin"
	// MailChatPaymentFailed: a subscription's renewal failed; once per
	// failed invoice.
	MailChatPaymentFailed MailKind = "chat_payment_failed"
)

// ChatMail reports whether kind is one of the chat's mail kinds.
func ChatMail(kind MailKind) bool { return kind == MailChatSignIn || kind == MailChatPaymentFailed }

// MailKinds is every mail kind an order owes.
func MailKinds() []MailKind {
	return []MailKind{MailVerdict, MailSilentDrop, MailFailed, MailReview, MailDivergence, MailRefund}
}

// MailState is how far one email of an order got. The mailer sets the
// first states at send time; SES's delivery events move a sent email on.
type MailState string

// The mail states.
const (
	// MailSent: the transport accepted the message.
	MailSent MailState = "sent"
	// MailDelivered: the recipient's mail server accepted it (SES's
	// Delivery event).
	MailDelivered MailState = "delivered"
	// MailBounced: the recipient's server refused it for good (a permanent
	// bounce).
	MailBounced MailState = "bounced"
	// MailComplained: the recipient marked it as spam; the address is on
	// the suppression list.
	MailComplained MailState = "complained"
	// MailUndeliverable: it could not be sent: refused for good (an address
	// that cannot be encoded, a rejected message) or failed on every attempt
	// of the retry schedule. A dead-letter record says why.
	MailUndeliverable MailState = "undeliverable"
	// MailSuppressed: not sent, because the address complained before.
	MailSuppressed MailState = "suppressed"
)

// Undelivered reports whether the email is known not to have reached its
// recipient, which the result page then says.
func (s MailState) Undelivered() bool {
	return s == MailBounced || s == MailUndeliverable || s == MailSuppressed
}
