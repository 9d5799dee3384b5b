package x402

import (
	"encoding/base64"
	"errors"
	"reflect"
	"testing"
	"time"

	segjson "github.com/segmentio/encoding/json"
)

// reasons are the codes a local refusal may carry: the specification's and
// the exact-EVM facilitators' (refusal.go).
var reasons = map[string]bool{
	ReasonInvalidVersion: true, ReasonUnsupportedScheme: true, ReasonInvalidNetwork: true, ReasonInvalidPayload: true,
	ReasonInvalidPaymentRequirements: true, ReasonMissingEIP712Domain: true, ReasonMalformedExact: true,
	ReasonMissingSignature: true, ReasonSignatureFormat: true, ReasonInvalidSignature: true, ReasonRecipientMismatch: true,
	ReasonValueMismatch: true, ReasonValidBefore: true, ReasonValidAfter: true,
}

// FuzzDecodePayment runs a PAYMENT-SIGNATURE header through the decoder
// and the local check as the agent function does (decode, CheckTerms
// against the offers, CheckSigner against the match, the signer proved
// against the payment's own claim, AuthorizationID): none panics, and every
// refusal is a *Refusal whose reason is one of the protocol's. A header
// that does not decode is invalid_payload and ErrMalformedHeader. With
// segmentio's decoder, as the agent decodes it, a header decodes exactly
// as with encoding/json.
func FuzzDecodePayment(f *testing.F) {
	for _, h := range specHeaders(f)["PAYMENT-SIGNATURE"] {
		f.Add(h)
	}
	for _, n := range []Network{NetworkBase, NetworkBaseSepolia} {
		info, _ := LookupNetwork(n)
		p, err := NewPayment(testKey(1), Requirement(info, testPrice, testPayTo, time.Minute), nil, testNow, newSeeded())
		if err != nil {
			f.Fatal(err)
		}
		h, err := EncodeHeader(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(h)
	}
	for _, h := range []string{"", "x", "bm90IGpzb24=", "e30=", "e30", "W10=", "bnVsbA==", "eyJ4NDAyVmVyc2lvbiI6Mn0="} {
		f.Add(h)
	}
	// What encoding/json reads its own way: keys in any case, the last of
	// a repeated one, invalid UTF-8 as U+FFFD, numbers in an extension.
	for _, j := range []string{`{"X402VERSION":2,"Accepted":{"EXTRA":{"name":"USDC"}}}`, `{"x402Version":1,"x402Version":2}`,
		"{\"payload\":{\"signature\":\"0x\xff\"}}", `{"extensions":{"a":[1,2.5e3,-0,"\u00e9"]}}`} {
		f.Add(base64.StdEncoding.EncodeToString([]byte(j)))
	}
	for _, ext := range []string{`{"payment-identifier":{"info":{"required":false,"id":"pay_7d5d747be160e280504c"}}}`,
		`{"payment-identifier":{"info":{"id":7}}}`, `{"payment-identifier":[]}`, `{"payment-identifier":{"info":{"id":"short"}}}`} {
		f.Add(base64.StdEncoding.EncodeToString([]byte(`{"x402Version":2,"extensions":` + ext + `}`)))
	}
	accepts := offers()
	f.Fuzz(func(t *testing.T, header string) {
		p, err := DecodePaymentSignature(header)
		if fast, fastErr := DecodePaymentSignatureWith(header, segjson.Unmarshal); (err == nil) != (fastErr == nil) || err == nil && !reflect.DeepEqual(p, fast) {
			t.Fatalf("segmentio's decoder: %+v (%v); encoding/json: %+v (%v)", fast, fastErr, p, err)
		}
		if err != nil {
			var r *Refusal
			if !errors.As(err, &r) || r.Reason != ReasonInvalidPayload || !errors.Is(err, ErrMalformedHeader) {
				t.Fatalf("a header that does not decode: %v, want invalid_payload and ErrMalformedHeader", err)
			}
			return
		}
		refused := func(step string, err error) {
			var r *Refusal
			if !errors.As(err, &r) || !reasons[r.Reason] {
				t.Fatalf("%s refused with %v, not one of the protocol's reasons", step, err)
			}
		}
		// The payment identifier, the one extension read: an id of its
		// form, none, or an ErrPaymentIdentifier.
		if id, err := PaymentIdentifier(p); err != nil && !errors.Is(err, ErrPaymentIdentifier) || err == nil && id != "" && !ValidPaymentID(id) {
			t.Fatalf("payment identifier %q, %v", id, err)
		}
		// The signer proved against the client's own claim, as a refused
		// payment's record is keyed.
		if err := CheckSigner(p, p.Accepted); err != nil {
			refused("CheckSigner of the claim", err)
		}
		req, err := CheckTerms(p, accepts, testNow, testRoom)
		if err != nil {
			refused("CheckTerms", err)
			return
		}
		if err := CheckSigner(p, req); err != nil {
			refused("CheckSigner", err)
		}
		if _, err := AuthorizationID(req.Network, req.Asset, p.Payload.Authorization); err != nil {
			t.Fatalf("AuthorizationID after CheckTerms passed: %v", err)
		}
	})
}
