package fakefacilitator

// The reasons the fake gives: the reference's codes
// (go/errors.go and go/mechanisms/evm/exact/facilitator/errors.go of
// coinbase/x402; its TypeScript facilitator says a wrong value with
// invalid_exact_evm_authorization_value instead, its Go one with the code below).
const (
	// A request the facilitator cannot take (answered 400), in the
	// specification's codes (section 9); the reference's Go facilitator
	// says invalid_version, invalid_v2_payload and no_facilitator_for_network.
	reasonInvalidVersion     = "invalid_x402_version"
	reasonInvalidPayload     = "invalid_payload"
	reasonInvalidRequirement = "invalid_payment_requirements"
	reasonInvalidNetwork     = "invalid_network"
	reasonUnsupportedScheme  = "unsupported_scheme"

	// A payment refused (answered 200, isValid or success false).
	reasonScheme            = "invalid_exact_evm_scheme"
	reasonNetworkMismatch   = "invalid_exact_evm_network_mismatch"
	reasonEVMPayload        = "invalid_exact_evm_payload"
	reasonMissingSignature  = "invalid_exact_evm_payload_missing_signature"
	reasonRecipientMismatch = "invalid_exact_evm_recipient_mismatch"
	reasonRequiredAmount    = "invalid_exact_evm_required_amount"
	reasonValue             = "invalid_exact_evm_payload_authorization_value_mismatch"
	reasonValidBefore       = "invalid_exact_evm_payload_authorization_valid_before"
	reasonValidAfter        = "invalid_exact_evm_payload_authorization_valid_after"
	reasonMissingDomain     = "invalid_exact_evm_missing_eip712_domain"
	reasonSignatureFormat   = "invalid_exact_evm_signature_format"
	reasonSignature         = "invalid_exact_evm_signature"
	reasonUndeployedWallet  = "invalid_exact_evm_payload_undeployed_smart_wallet"
	reasonNotEIP3009        = "invalid_exact_evm_eip3009_not_supported"
	reasonTokenName         = "invalid_exact_evm_token_name_mismatch"
	reasonTokenVersion      = "invalid_exact_evm_token_version_mismatch"
	reasonNonceUsed         = "invalid_exact_evm_nonce_already_used"
	reasonInsufficient      = "invalid_exact_evm_insufficient_balance"
	reasonTransactionFailed = "invalid_exact_evm_transaction_failed"
)
