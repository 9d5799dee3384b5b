package x402

import (
	"encoding/base64"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
)

// specHeaders are the reference specification's own header examples
// (testdata/spec_headers.txt, copied from specs/transports-v2/http.md).
func specHeaders(t testing.TB) map[string][]string {
	t.Helper()
	b, err := os.ReadFile("testdata/spec_headers.txt")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, line := range strings.Split(string(b), "\n")[1:] {
		if name, value, ok := strings.Cut(line, ": "); ok {
			out[name] = append(out[name], value)
		}
	}
	return out
}

func TestDecodeTheSpecificationsExamples(t *testing.T) {
	h := specHeaders(t)

	req, err := DecodePaymentRequired(h[HeaderPaymentRequired][0])
	if err != nil {
		t.Fatal(err)
	}
	want := PaymentRequired{
		X402Version: 2, Error: "PAYMENT-SIGNATURE header is required",
		Resource: &ResourceInfo{URL: "https://api.example.com/premium-data", Description: "Access to premium market data", MimeType: "application/json"},
		Accepts: []PaymentRequirements{{
			Scheme: "exact", Network: "eip155:84532", Amount: "10000", Asset: "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
			PayTo: "0x209693Bc6afc0C5328bA36FaF03C514EF312287C", MaxTimeoutSeconds: 60, Extra: map[string]any{"name": "USDC", "version": "2"},
		}},
	}
	if !reflect.DeepEqual(req, want) {
		t.Errorf("PAYMENT-REQUIRED:\n got  %+v\n want %+v", req, want)
	}

	p, err := DecodePaymentSignature(h[HeaderPaymentSignature][0])
	if err != nil {
		t.Fatal(err)
	}
	wantAuth := Authorization{
		From: "0x857b06519E91e3A54538791bDbb0E22373e36b66", To: "0x209693Bc6afc0C5328bA36FaF03C514EF312287C", Value: "10000",
		ValidAfter: "1740672089", ValidBefore: "1740672154", Nonce: "0xf3746613c2d920b5fdabc0856f2aeb2d4f88ee6037b8cc5d04a71a4462f13480",
	}
	if p.X402Version != 2 || !reflect.DeepEqual(p.Accepted, want.Accepts[0]) || p.Payload.Authorization != wantAuth ||
		!strings.HasPrefix(p.Payload.Signature, "0x2d6a7588") || p.Resource == nil || p.Resource.URL != want.Resource.URL {
		t.Errorf("PAYMENT-SIGNATURE: %+v", p)
	}

	ok, err := DecodePaymentResponse(h[HeaderPaymentResponse][0])
	if err != nil || !ok.Success || ok.Network != NetworkBaseSepolia || !strings.HasPrefix(ok.Transaction, "0x1234") || ok.Payer == "" {
		t.Errorf("PAYMENT-RESPONSE success: %+v, %v", ok, err)
	}
	failed, err := DecodePaymentResponse(h[HeaderPaymentResponse][1])
	if err != nil || failed.Success || failed.ErrorReason != "insufficient_funds" || failed.Transaction != "" {
		t.Errorf("PAYMENT-RESPONSE failure: %+v, %v", failed, err)
	}
}

func TestHeaderRoundTrip(t *testing.T) {
	p, err := DecodePaymentSignature(specHeaders(t)[HeaderPaymentSignature][0])
	if err != nil {
		t.Fatal(err)
	}
	h, err := EncodeHeader(p)
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodePaymentSignature(h)
	if err != nil || !reflect.DeepEqual(back, p) {
		t.Errorf("round trip: %+v, %v", back, err)
	}
	// Standard base64 with padding, as the reference writes it.
	if _, err := base64.StdEncoding.DecodeString(h); err != nil {
		t.Errorf("not standard base64: %v", err)
	}
}

func TestDecodePaymentSignatureRefusesMalformedHeaders(t *testing.T) {
	enc := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	valid := specHeaders(t)[HeaderPaymentSignature][0]
	cases := []struct {
		name, header string
		ok           bool
	}{
		{"the spec's example", valid, true},
		{"surrounding spaces", "  " + valid + " ", true},
		{"padding dropped", strings.TrimRight(valid, "="), true},
		{"unknown fields", enc(`{"x402Version":2,"somethingNew":{"a":1},"payload":{"signature":"0x","authorization":{},"more":1}}`), true},
		{"empty", "", false},
		{"not base64", "%%%not-base64%%%", false},
		{"url-safe alphabet", strings.NewReplacer("+", "-", "/", "_").Replace(enc(`{"x402Version":2,"resource":{"url":"?>>>"}}`)), false},
		{"not JSON", enc("x402Version=2"), false},
		{"JSON of the wrong shape", enc(`{"x402Version":"2"}`), false},
		{"trailing garbage", enc(`{"x402Version":2} {}`), false},
		{"over the size bound", enc(`{"x402Version":2,"pad":"` + strings.Repeat("a", MaxHeaderBytes) + `"}`), false},
	}
	for _, c := range cases {
		_, err := DecodePaymentSignature(c.header)
		if c.ok != (err == nil) {
			t.Errorf("%s: err %v", c.name, err)
			continue
		}
		if err == nil {
			continue
		}
		var r *Refusal
		if !errors.As(err, &r) || r.Reason != ReasonInvalidPayload || !errors.Is(err, ErrMalformedHeader) {
			t.Errorf("%s: %v is not an invalid_payload refusal wrapping ErrMalformedHeader", c.name, err)
		}
	}
}

func TestSizeBoundComesBeforeDecoding(t *testing.T) {
	// Just over the bound, but valid: still refused, so nothing larger is
	// ever decoded.
	h, _ := EncodeHeader(map[string]string{"pad": strings.Repeat("a", MaxHeaderBytes)})
	for _, decode := range []func(string) error{
		func(s string) error { _, err := DecodePaymentSignature(s); return err },
		func(s string) error { _, err := DecodePaymentRequired(s); return err },
		func(s string) error { _, err := DecodePaymentResponse(s); return err },
	} {
		if err := decode(h); !errors.Is(err, ErrMalformedHeader) || !strings.Contains(err.Error(), "over the") {
			t.Errorf("oversized header: %v", err)
		}
	}
}

func BenchmarkDecodePaymentSignature(b *testing.B) {
	raw, _ := os.ReadFile("testdata/spec_headers.txt")
	var h string
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, HeaderPaymentSignature+": "); ok {
			h = v
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodePaymentSignature(h); err != nil {
			b.Fatal(err)
		}
	}
}
