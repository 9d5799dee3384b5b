package fakefacilitator

import "encoding/json"

// maxBody bounds a /verify or /settle body: a payment is well under 4 KiB.
const maxBody = 64 << 10

// request is the body of POST /verify and POST /settle.
type request struct {
	X402Version         int                  `json:"x402Version"`
	PaymentPayload      *paymentPayload      `json:"paymentPayload"`
	PaymentRequirements *paymentRequirements `json:"paymentRequirements"`
}

type paymentRequirements struct {
	Scheme            string         `json:"scheme"`
	Network           string         `json:"network"`
	Asset             string         `json:"asset"`
	Amount            string         `json:"amount"`
	PayTo             string         `json:"payTo"`
	MaxTimeoutSeconds int            `json:"maxTimeoutSeconds"`
	Extra             map[string]any `json:"extra,omitempty"`
}

type paymentPayload struct {
	X402Version int                 `json:"x402Version"`
	Accepted    paymentRequirements `json:"accepted"`
	// Payload is read as the exact EVM payload once the scheme is known.
	Payload json.RawMessage `json:"payload"`
}

// exactPayload is the payload of the exact scheme's EIP-3009 method.
type exactPayload struct {
	Signature     string         `json:"signature"`
	Authorization *authorization `json:"authorization"`
}

type authorization struct {
	From        string `json:"from"`
	To          string `json:"to"`
	Value       string `json:"value"`
	ValidAfter  string `json:"validAfter"`
	ValidBefore string `json:"validBefore"`
	Nonce       string `json:"nonce"`
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

// settleResponse is the answer to POST /settle.
type settleResponse struct {
	Success      bool   `json:"success"`
	ErrorReason  string `json:"errorReason,omitempty"`
	ErrorMessage string `json:"errorMessage,omitempty"`
	Payer        string `json:"payer,omitempty"`
	Transaction  string `json:"transaction"`
	Network      string `json:"network"`
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

// authorizationOf returns p's EIP-3009 authorization, nil when it has none.
func authorizationOf(p *paymentPayload) *authorization {
	var ep exactPayload
	if json.Unmarshal(p.Payload, &ep) != nil {
		return nil
	}
	return ep.Authorization
}
