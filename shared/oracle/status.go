package oracle

// Status is an order's state. States change only through conditional writes
// that name the expected current state (see shared/store).
type Status string

// Order states (docs/architecture.md "Order states").
const (
	StatusAwaitingPayment Status = "AWAITING_PAYMENT" // completed, payment not yet confirmed (delayed methods)
	StatusPaymentFailed   Status = "PAYMENT_FAILED"   // the delayed payment failed: nothing is owed
	StatusPaid            Status = "PAID"             // paid and claimed: a generation job is owed
	StatusGenerating      Status = "GENERATING"
	StatusReady           Status = "READY"
	StatusDropped         Status = "DROPPED" // paid, but tier or query missing: notice and alert
	StatusHeld            Status = "HELD"    // crosscheck failed twice
	StatusQuarantined     Status = "QUARANTINED"
	StatusFailed          Status = "FAILED"
	StatusRefunded        Status = "REFUNDED" // refunded in full: by the operator's action or in Stripe's Dashboard
)

// Paid reports whether an order in this state was paid for.
func (s Status) Paid() bool {
	switch s {
	case StatusAwaitingPayment, StatusPaymentFailed, "":
		return false
	}
	return true
}

// Verdict is a verdict token.
type Verdict string

// The four verdict tokens; NULL is a valid deliverable, not an error.
const (
	VerdictGreen Verdict = "GREEN"
	VerdictAmber Verdict = "AMBER"
	VerdictRed   Verdict = "RED"
	VerdictNull  Verdict = "NULL"
)

// ParseVerdict accepts exactly one of the four tokens.
func ParseVerdict(s string) (Verdict, error) {
	switch v := Verdict(s); v {
	case VerdictGreen, VerdictAmber, VerdictRed, VerdictNull:
		return v, nil
	}
	return "", Errorf(CodeInvalid, "unknown verdict %q", Clip(s, 16))
}
