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
)

// MailKinds is every mail kind.
func MailKinds() []MailKind {
	return []MailKind{MailVerdict, MailSilentDrop, MailFailed, MailReview, MailDivergence}
}
