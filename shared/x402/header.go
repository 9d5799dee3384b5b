package x402

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// MaxHeaderBytes bounds what the decoders read: a header over it is refused
// before it is decoded. An honest PAYMENT-SIGNATURE is about 1.3 KiB.
const MaxHeaderBytes = 8 << 10

// ErrMalformedHeader is wrapped by every decoding failure.
var ErrMalformedHeader = errors.New("x402: malformed header")

// EncodeHeader is the header value for v: standard base64 of its JSON.
func EncodeHeader(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("x402: encode header: %w", err)
	}
	return base64.StdEncoding.EncodeToString(b), nil
}

// DecodePaymentSignature decodes a PAYMENT-SIGNATURE header. A failure is a
// *Refusal with ReasonInvalidPayload that also matches ErrMalformedHeader.
// Unknown fields are ignored, as the reference does.
func DecodePaymentSignature(h string) (PaymentPayload, error) {
	return DecodePaymentSignatureWith(h, json.Unmarshal)
}

// DecodePaymentSignatureWith is DecodePaymentSignature with the JSON read
// by unmarshal, which must decode as encoding/json's Unmarshal does: the
// agent, which decodes a payment on every paid request's path, passes
// segmentio's decoder, which it links anyway (FuzzDecodePayment checks
// that it reads a payment exactly as encoding/json does).
func DecodePaymentSignatureWith(h string, unmarshal func([]byte, any) error) (PaymentPayload, error) {
	var p PaymentPayload
	if err := decodeHeader(h, func(b []byte) error { return unmarshal(b, &p) }); err != nil {
		return PaymentPayload{}, &Refusal{Reason: ReasonInvalidPayload, Detail: err.Error(), err: err}
	}
	return p, nil
}

// DecodePaymentRequired decodes a PAYMENT-REQUIRED header.
func DecodePaymentRequired(h string) (PaymentRequired, error) {
	var p PaymentRequired
	if err := decodeHeader(h, func(b []byte) error { return json.Unmarshal(b, &p) }); err != nil {
		return PaymentRequired{}, err
	}
	return p, nil
}

// DecodePaymentResponse decodes a PAYMENT-RESPONSE header.
func DecodePaymentResponse(h string) (SettleResponse, error) {
	var r SettleResponse
	if err := decodeHeader(h, func(b []byte) error { return json.Unmarshal(b, &r) }); err != nil {
		return SettleResponse{}, err
	}
	return r, nil
}

// decodeHeader reads h's base64 and decodes the JSON it carries with
// unmarshal.
func decodeHeader(h string, unmarshal func([]byte) error) error {
	h = strings.TrimSpace(h)
	if len(h) > MaxHeaderBytes {
		return fmt.Errorf("%w: %d bytes, over the %d allowed", ErrMalformedHeader, len(h), MaxHeaderBytes)
	}
	if h == "" {
		return fmt.Errorf("%w: empty", ErrMalformedHeader)
	}
	// The reference encodes with padding; a client that drops it is still
	// understood.
	enc := base64.StdEncoding
	if !strings.HasSuffix(h, "=") && len(h)%4 != 0 {
		enc = base64.RawStdEncoding
	}
	b, err := enc.DecodeString(h)
	if err != nil {
		return fmt.Errorf("%w: not base64: %w", ErrMalformedHeader, err)
	}
	if err := unmarshal(b); err != nil {
		return fmt.Errorf("%w: not the expected JSON: %w", ErrMalformedHeader, err)
	}
	return nil
}
