package x402

import (
	"encoding/json"
	"errors"
	"fmt"
)

// The extensions' keys in PaymentRequired.extensions and
// PaymentPayload.extensions (specs/extensions/).
const (
	// ExtensionBazaar describes the resource for discovery: info (how to
	// call it, what it answers) and the JSON Schema that validates info.
	ExtensionBazaar = "bazaar"
	// ExtensionPaymentIdentifier carries the client's idempotency key,
	// info.id, in a payment.
	ExtensionPaymentIdentifier = "payment-identifier"
)

// The payment identifier's limits (payment_identifier.md "id Format"; the
// official package's PAYMENT_ID_MIN_LENGTH, _MAX_LENGTH and _PATTERN).
const (
	PaymentIDMinLength = 16
	PaymentIDMaxLength = 128
)

// Extension is an extension's declaration: its data and the JSON Schema
// (Draft 2020-12) that validates the data.
type Extension struct {
	Info   any            `json:"info"`
	Schema map[string]any `json:"schema"`
}

// PaymentIdentifierDeclaration is the payment-identifier extension a 402
// advertises: the schema is the official package's, word for word, so that
// a client validating its echo against either finds them the same.
func PaymentIdentifierDeclaration(required bool) Extension {
	return Extension{
		Info: map[string]any{"required": required},
		Schema: map[string]any{
			"$schema": "https://json-schema.org/draft/2020-12/schema",
			"type":    "object",
			"properties": map[string]any{
				"required": map[string]any{"type": "boolean"},
				"id": map[string]any{"type": "string", "minLength": PaymentIDMinLength, "maxLength": PaymentIDMaxLength,
					"pattern": "^[a-zA-Z0-9_-]+$"},
			},
			"required": []any{"required"},
		},
	}
}

// ErrPaymentIdentifier is wrapped by PaymentIdentifier's refusals.
var ErrPaymentIdentifier = errors.New("x402: invalid payment identifier")

// PaymentIdentifier is the idempotency key a payment carries in
// extensions["payment-identifier"].info.id: "" when it carries none (no
// extension, or the declaration echoed without an id). An id that is there
// but is not 16 to 128 of [A-Za-z0-9_-] is an error: a client that meant
// to be idempotent must not be charged as if it had not asked.
func PaymentIdentifier(p PaymentPayload) (string, error) {
	ext, ok := p.Extensions[ExtensionPaymentIdentifier]
	if !ok || ext == nil {
		return "", nil
	}
	// The extension decoded as generic JSON; read it again as its shape.
	raw, err := json.Marshal(ext)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrPaymentIdentifier, err)
	}
	var e struct {
		Info *struct {
			ID *json.RawMessage `json:"id"`
		} `json:"info"`
	}
	if err := json.Unmarshal(raw, &e); err != nil {
		return "", fmt.Errorf("%w: extensions[%q] is not an object with info", ErrPaymentIdentifier, ExtensionPaymentIdentifier)
	}
	if e.Info == nil || e.Info.ID == nil {
		return "", nil
	}
	var id string
	if err := json.Unmarshal(*e.Info.ID, &id); err != nil {
		return "", fmt.Errorf("%w: info.id must be a string", ErrPaymentIdentifier)
	}
	if !ValidPaymentID(id) {
		return "", fmt.Errorf("%w: info.id must be %d to %d characters of A-Z, a-z, 0-9, _ and -", ErrPaymentIdentifier, PaymentIDMinLength, PaymentIDMaxLength)
	}
	return id, nil
}

// ValidPaymentID reports whether id is a payment identifier's form.
func ValidPaymentID(id string) bool {
	if len(id) < PaymentIDMinLength || len(id) > PaymentIDMaxLength {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// WithPaymentIdentifier returns p's extensions with the payment
// identifier id added, as a client adds it to the declaration it echoes.
func WithPaymentIdentifier(p PaymentPayload, id string) PaymentPayload {
	ext := make(map[string]any, len(p.Extensions)+1)
	for k, v := range p.Extensions {
		ext[k] = v
	}
	d := PaymentIdentifierDeclaration(false)
	d.Info = map[string]any{"required": false, "id": id}
	ext[ExtensionPaymentIdentifier] = d
	p.Extensions = ext
	return p
}
