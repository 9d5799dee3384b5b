package x402

import "fmt"

// Refusal reasons. The general ones are the x402 v2 specification's error
// codes (section 9); the exact-EVM ones are the reference facilitators' codes
// (go/mechanisms/evm/exact/facilitator/errors.go, which the TypeScript
// package mirrors), since those are what a client sees from /verify and
// /settle. Where the specification's list and the facilitators' constants
// spell a code differently, the facilitators' spelling is used.
const (
	ReasonInvalidVersion             = "invalid_x402_version"
	ReasonUnsupportedScheme          = "unsupported_scheme"
	ReasonInvalidNetwork             = "invalid_network"
	ReasonInvalidPayload             = "invalid_payload"
	ReasonInvalidPaymentRequirements = "invalid_payment_requirements"

	ReasonMissingEIP712Domain = "invalid_exact_evm_missing_eip712_domain"
	ReasonMalformedExact      = "invalid_exact_evm_payload"
	ReasonMissingSignature    = "invalid_exact_evm_payload_missing_signature"
	ReasonSignatureFormat     = "invalid_exact_evm_signature_format"
	ReasonInvalidSignature    = "invalid_exact_evm_signature"
	ReasonRecipientMismatch   = "invalid_exact_evm_recipient_mismatch"
	ReasonValueMismatch       = "invalid_exact_evm_payload_authorization_value_mismatch"
	ReasonValidBefore         = "invalid_exact_evm_payload_authorization_valid_before"
	ReasonValidAfter          = "invalid_exact_evm_payload_authorization_valid_after"

	// Settlement-side reasons, for facilitators (the local fake) to answer
	// with.
	ReasonNonceAlreadyUsed    = "invalid_exact_evm_nonce_already_used"
	ReasonInsufficientBalance = "invalid_exact_evm_insufficient_balance"
	ReasonTransactionFailed   = "invalid_exact_evm_transaction_failed"
)

// Malformed reports whether a refusal's reason says that the payment is no
// well-formed one: a header that does not decode, a version or scheme this
// server does not speak, a field that does not parse, no signature or one
// of the wrong shape. The other reasons refuse a well-formed payment for
// what it says (its network, asset, payee, amount, validity window or
// signer), or a replay.
func Malformed(reason string) bool {
	switch reason {
	case ReasonInvalidPayload, ReasonInvalidVersion, ReasonUnsupportedScheme, ReasonMalformedExact, ReasonMissingSignature, ReasonSignatureFormat:
		return true
	}
	return false
}

// Refusal is a payment this package refused: Reason is a protocol error code
// (one of the Reason constants), Detail says what exactly was wrong.
type Refusal struct {
	Reason string
	Detail string
	err    error
}

func (r *Refusal) Error() string {
	if r.Detail == "" {
		return "x402: payment refused: " + r.Reason
	}
	return fmt.Sprintf("x402: payment refused: %s: %s", r.Reason, r.Detail)
}

// Unwrap returns the cause, if any (ErrMalformedHeader for a header that
// did not decode).
func (r *Refusal) Unwrap() error { return r.err }
