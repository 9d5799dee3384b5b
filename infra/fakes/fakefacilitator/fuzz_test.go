package fakefacilitator_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"42sisters.ai/oracle/infra/fakes/fakefacilitator"
)

// FuzzVerifyAndSettle feeds arbitrary bodies to /verify and /settle: every
// answer is the endpoint's JSON shape with a reason when refused, never a
// panic or a 5xx, and nothing settles without a signature.
func FuzzVerifyAndSettle(f *testing.F) {
	f.Add(newPayment().body(f))
	f.Add(`{"x402Version":2,"paymentPayload":{"x402Version":2,"accepted":{},"payload":{}},"paymentRequirements":{"scheme":"exact","network":"eip155:84532","payTo":"0x209693Bc6afc0C5328bA36FaF03C514EF312287C","asset":"0x036CbD53842c5426634e7929541eC2318f3dCF7e"}}`)
	f.Add(`{"paymentPayload":null}`)
	f.Add(`{"x402Version":2,"paymentPayload":{"x402Version":2,"payload":{"authorization":{"value":"-1","nonce":"0x"}}},"paymentRequirements":{"extra":{"name":7}}}`)
	f.Fuzz(func(t *testing.T, body string) {
		srv := fakefacilitator.New(fakefacilitator.Options{})
		for _, path := range []string{"/verify", "/settle"} {
			rec := httptest.NewRecorder()
			srv.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, strings.NewReader(body)))
			if rec.Code != http.StatusOK && rec.Code != http.StatusBadRequest {
				t.Fatalf("POST %s %q: status %d: %s", path, body, rec.Code, rec.Body)
			}
			var a struct {
				IsValid, Success *bool
				InvalidReason    string
				ErrorReason      string
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &a); err != nil {
				t.Fatalf("POST %s %q: not JSON: %s", path, body, rec.Body)
			}
			refused := (path == "/verify" && a.IsValid != nil && !*a.IsValid && a.InvalidReason != "") ||
				(path == "/settle" && a.Success != nil && !*a.Success && a.ErrorReason != "")
			if !refused {
				t.Fatalf("POST %s %q: %s, want a refusal with a reason (no body here is signed)", path, body, rec.Body)
			}
		}
	})
}
