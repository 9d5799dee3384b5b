package fakefacilitator

import "42sisters.ai/oracle/shared/x402"

// maxBody bounds a /verify or /settle body: a payment is well under 4 KiB.
const maxBody = 64 << 10

// request is the body of POST /verify and POST /settle.
type request struct {
	X402Version         int                       `json:"x402Version"`
	PaymentPayload      *x402.PaymentPayload      `json:"paymentPayload"`
	PaymentRequirements *x402.PaymentRequirements `json:"paymentRequirements"`
}

// The answers are the fake's own types, written from the specification
// rather than taken from shared/x402, so that a wrong JSON name in the
// service's client shows up against the fake.

// verifyResponse is the answer to POST /verify.
type verifyResponse struct {
	IsValid        bool   `json:"isValid"`
	InvalidReason  string `json:"invalidReason,omitempty"`
	InvalidMessage string `json:"invalidMessage,omitempty"`
	Payer          string `json:"payer,omitempty"`
}

// settleResponse is the answer to POST /settle. Amount is no field of the
// specification's: the fake sends it only when told to (Control.Answer),
// as a facilitator that reports what it moved does.
type settleResponse struct {
	Success      bool   `json:"success"`
	ErrorReason  string `json:"errorReason,omitempty"`
	ErrorMessage string `json:"errorMessage,omitempty"`
	Payer        string `json:"payer,omitempty"`
	Transaction  string `json:"transaction"`
	Network      string `json:"network"`
	Amount       string `json:"amount,omitempty"`
}

// supportedKind and supportedResponse are the answer to GET /supported.
type supportedKind struct {
	X402Version int    `json:"x402Version"`
	Scheme      string `json:"scheme"`
	Network     string `json:"network"`
}

type supportedResponse struct {
	Kinds      []supportedKind     `json:"kinds"`
	Extensions []string            `json:"extensions"`
	Signers    map[string][]string `json:"signers"`
}
