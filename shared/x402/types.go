package x402

// Version is the x402 protocol version this package speaks.
const Version = 2

// SchemeExact is the only payment scheme offered: a transfer of exactly the
// price, authorised by an EIP-3009 TransferWithAuthorization signature.
const SchemeExact = "exact"

// The HTTP transport's headers, each carrying base64 of a JSON object.
const (
	HeaderPaymentRequired  = "PAYMENT-REQUIRED"  // server → client: PaymentRequired
	HeaderPaymentSignature = "PAYMENT-SIGNATURE" // client → server: PaymentPayload
	HeaderPaymentResponse  = "PAYMENT-RESPONSE"  // server → client: SettleResponse
)

// ResourceInfo describes the paid resource. ServiceName, Tags and IconURL
// are for catalogues (the official schema: a name and each of at most five
// tags 1 to 32 printable ASCII characters, the icon's URL at most 2048).
type ResourceInfo struct {
	URL         string   `json:"url"`
	Description string   `json:"description,omitempty"`
	MimeType    string   `json:"mimeType,omitempty"`
	ServiceName string   `json:"serviceName,omitempty"`
	Tags        []string `json:"tags,omitempty"`
	IconURL     string   `json:"iconUrl,omitempty"`
}

// PaymentRequirements is one way to pay that the server accepts. Extra holds
// the scheme's details; for exact on EVM, "name" and "version" are the
// token's EIP-712 domain. It stays a map so that keys this package does not
// know survive a round trip to the facilitator.
type PaymentRequirements struct {
	Scheme            string         `json:"scheme"`
	Network           Network        `json:"network"`
	Asset             string         `json:"asset"`
	Amount            string         `json:"amount"`
	PayTo             string         `json:"payTo"`
	MaxTimeoutSeconds int            `json:"maxTimeoutSeconds"`
	Extra             map[string]any `json:"extra,omitempty"`
}

// PaymentRequired is the body of a 402 answer and of its PAYMENT-REQUIRED
// header.
type PaymentRequired struct {
	X402Version int                   `json:"x402Version"`
	Error       string                `json:"error,omitempty"`
	Resource    *ResourceInfo         `json:"resource,omitempty"`
	Accepts     []PaymentRequirements `json:"accepts"`
	Extensions  map[string]any        `json:"extensions,omitempty"`
}

// Authorization is EIP-3009's TransferWithAuthorization message, every field
// a string as on the wire: addresses in hex, amounts and times in decimal, the
// nonce as 32 bytes of hex.
type Authorization struct {
	From        string `json:"from"`
	To          string `json:"to"`
	Value       string `json:"value"`
	ValidAfter  string `json:"validAfter"`
	ValidBefore string `json:"validBefore"`
	Nonce       string `json:"nonce"`
}

// ExactPayload is the exact scheme's payload on EVM (EIP-3009).
type ExactPayload struct {
	Signature     string        `json:"signature"`
	Authorization Authorization `json:"authorization"`
}

// PaymentPayload is what a client sends in PAYMENT-SIGNATURE: the requirement
// it accepted and its signed authorization.
type PaymentPayload struct {
	X402Version int                 `json:"x402Version"`
	Resource    *ResourceInfo       `json:"resource,omitempty"`
	Accepted    PaymentRequirements `json:"accepted"`
	Payload     ExactPayload        `json:"payload"`
	Extensions  map[string]any      `json:"extensions,omitempty"`
}

// VerifyResponse is a facilitator's answer to /verify.
type VerifyResponse struct {
	IsValid        bool   `json:"isValid"`
	InvalidReason  string `json:"invalidReason,omitempty"`
	InvalidMessage string `json:"invalidMessage,omitempty"`
	Payer          string `json:"payer,omitempty"`
}

// SettleResponse is a facilitator's answer to /settle and the body of the
// PAYMENT-RESPONSE header. Transaction is empty when the settlement failed.
type SettleResponse struct {
	Success      bool    `json:"success"`
	ErrorReason  string  `json:"errorReason,omitempty"`
	ErrorMessage string  `json:"errorMessage,omitempty"`
	Payer        string  `json:"payer,omitempty"`
	Transaction  string  `json:"transaction"`
	Network      Network `json:"network"`
	Amount       string  `json:"amount,omitempty"`
}

// SupportedKind is one (version, scheme, network) a facilitator handles.
type SupportedKind struct {
	X402Version int            `json:"x402Version"`
	Scheme      string         `json:"scheme"`
	Network     Network        `json:"network"`
	Extra       map[string]any `json:"extra,omitempty"`
}

// SupportedResponse is a facilitator's answer to /supported. Signers maps a
// CAIP-2 pattern ("eip155:*") to the facilitator's addresses.
type SupportedResponse struct {
	Kinds      []SupportedKind     `json:"kinds"`
	Extensions []string            `json:"extensions"`
	Signers    map[string][]string `json:"signers"`
}

// Supports reports whether the facilitator lists the version, scheme and
// network.
func (s SupportedResponse) Supports(version int, scheme string, n Network) bool {
	for _, k := range s.Kinds {
		if k.X402Version == version && k.Scheme == scheme && k.Network == n {
			return true
		}
	}
	return false
}
