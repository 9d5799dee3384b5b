package fakefacilitator

import "42sisters.ai/oracle/shared/x402"

// The reasons the fake gives. A request it cannot take (answered 400) gets
// the specification's code (section 9); the reference's Go facilitator
// says invalid_version, invalid_v2_payload and no_facilitator_for_network
// there. A payment refused (answered 200, isValid or success false) gets
// the reference facilitators' code (go/mechanisms/evm/exact/facilitator/
// errors.go of coinbase/x402; its TypeScript facilitator says a wrong value
// with invalid_exact_evm_authorization_value instead). shared/x402 holds
// the codes the service's own check shares; the rest are the fake's.
const (
	reasonInvalidVersion     = x402.ReasonInvalidVersion
	reasonInvalidPayload     = x402.ReasonInvalidPayload
	reasonInvalidRequirement = x402.ReasonInvalidPaymentRequirements
	reasonInvalidNetwork     = x402.ReasonInvalidNetwork
	reasonUnsupportedScheme  = x402.ReasonUnsupportedScheme

	reasonScheme            = "invalid_exact_evm_scheme"
	reasonNetworkMismatch   = "invalid_exact_evm_network_mismatch"
	reasonEVMPayload        = x402.ReasonMalformedExact
	reasonMissingSignature  = x402.ReasonMissingSignature
	reasonRecipientMismatch = x402.ReasonRecipientMismatch
	reasonRequiredAmount    = "invalid_exact_evm_required_amount"
	reasonValue             = x402.ReasonValueMismatch
	reasonValidBefore       = x402.ReasonValidBefore
	reasonValidAfter        = x402.ReasonValidAfter
	reasonMissingDomain     = x402.ReasonMissingEIP712Domain
	reasonSignatureFormat   = x402.ReasonSignatureFormat
	reasonSignature         = x402.ReasonInvalidSignature
	reasonUndeployedWallet  = "invalid_exact_evm_payload_undeployed_smart_wallet"
	reasonNotEIP3009        = "invalid_exact_evm_eip3009_not_supported"
	reasonTokenName         = "invalid_exact_evm_token_name_mismatch"
	reasonTokenVersion      = "invalid_exact_evm_token_version_mismatch"
	reasonNonceUsed         = x402.ReasonNonceAlreadyUsed
	reasonInsufficient      = x402.ReasonInsufficientBalance
	reasonTransactionFailed = x402.ReasonTransactionFailed
)
