package fakefacilitator_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"42sisters.ai/oracle/infra/fakes/fakefacilitator"
)

func TestSupportedListsTheExactSchemeOnBothNetworks(t *testing.T) {
	f := newFixture(t)
	resp, b := f.do(t, http.MethodGet, "/supported", "")
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("status %d, content type %q: %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	var got struct {
		Kinds []struct {
			X402Version int    `json:"x402Version"`
			Scheme      string `json:"scheme"`
			Network     string `json:"network"`
		} `json:"kinds"`
		Extensions []string            `json:"extensions"`
		Signers    map[string][]string `json:"signers"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	networks := map[string]bool{}
	for _, k := range got.Kinds {
		if k.X402Version != 2 || k.Scheme != "exact" {
			t.Errorf("kind %+v, want version 2, scheme exact", k)
		}
		networks[k.Network] = true
	}
	if len(got.Kinds) != 2 || !networks[base] || !networks[sepolia] {
		t.Errorf("kinds %+v, want exact on %s and %s", got.Kinds, base, sepolia)
	}
	if got.Extensions == nil || len(got.Signers["eip155:*"]) != 1 {
		t.Errorf("extensions %v, signers %v: the specification requires both", got.Extensions, got.Signers)
	}
}

// Requests the reference's facilitator cannot take are a 400 in the shape
// of the endpoint's answer, with a reason, on both endpoints.
func TestRequestsTheFacilitatorCannotTake(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		name, reason string
		body         func(*payment) string
	}{
		{"not JSON", "invalid_payload", func(*payment) string { return `{"paymentPayload":` }},
		{"no payload", "invalid_payload", func(*payment) string { return `{"x402Version":2,"paymentRequirements":{}}` }},
		{"no requirements", "invalid_payment_requirements", func(p *payment) string {
			return strings.Replace(p.body(t), `"paymentRequirements"`, `"requirements"`, 1)
		}},
		{"version 1", "invalid_x402_version", func(p *payment) string { p.version = 1; return p.body(t) }},
		{"unknown network", "invalid_network", func(p *payment) string {
			p.requirements["network"] = "eip155:1"
			return p.body(t)
		}},
		{"another scheme", "unsupported_scheme", func(p *payment) string {
			p.requirements["scheme"] = "upto"
			return p.body(t)
		}},
		{"payTo not an address", "invalid_payment_requirements", func(p *payment) string {
			p.requirements["payTo"] = "0x1234"
			return p.body(t)
		}},
		{"over 64 KiB", "invalid_payload", func(p *payment) string {
			p.requirements["extra"] = map[string]any{"name": "USDC", "version": "2", "pad": strings.Repeat("x", 70<<10)}
			return p.body(t)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := c.body(newPayment())
			status, v := f.verify(t, body)
			if status != http.StatusBadRequest || *v.IsValid || v.InvalidReason != c.reason {
				t.Errorf("/verify: %d %+v, want 400 invalid %s", status, v, c.reason)
			}
			status, s := f.settle(t, body)
			if status != http.StatusBadRequest || *s.Success || s.ErrorReason != c.reason || *s.Transaction != "" {
				t.Errorf("/settle: %d %+v, want 400 unsuccessful %s without a transaction", status, s, c.reason)
			}
		})
	}
	if b := f.balances(t); len(b) != 0 {
		t.Errorf("ledger %v after refused requests, want untouched", b)
	}
}

// The checks before the signature, in the reference's order: each case
// breaks one rule of an otherwise good payment. The payment's signature is
// a placeholder that recovers nobody, so a payment that passes every rule
// before the signature is refused for its signature: the boundary cases
// show which side of a rule they fall on.
func TestPaymentsRefusedBeforeTheSignature(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		name, reason string
		change       func(*payment)
	}{
		{"the placeholder signature", "invalid_exact_evm_signature", func(*payment) {}},
		{"accepted another scheme", "invalid_exact_evm_scheme", func(p *payment) { p.accepted["scheme"] = "upto" }},
		{"accepted another network", "invalid_exact_evm_network_mismatch", func(p *payment) { p.accepted["network"] = base }},
		{"no authorization", "invalid_exact_evm_payload", func(p *payment) { p.auth = nil }},
		{"no signature", "invalid_exact_evm_payload_missing_signature", func(p *payment) { p.signature = "" }},
		{"paid to another address", "invalid_exact_evm_recipient_mismatch", func(p *payment) { p.auth["to"] = payer }},
		{"payTo in another case", "invalid_exact_evm_signature", func(p *payment) { p.auth["to"] = strings.ToLower(payTo) }},
		{"from not an address", "invalid_exact_evm_payload", func(p *payment) { p.auth["from"] = "0x12" }},
		{"value not a number", "invalid_exact_evm_payload", func(p *payment) { p.auth["value"] = "5e4" }},
		{"value negative", "invalid_exact_evm_payload", func(p *payment) { p.auth["value"] = "-50000" }},
		{"value over uint256", "invalid_exact_evm_payload", func(p *payment) { p.auth["value"] = "1" + strings.Repeat("0", 78) }},
		{"nonce of 31 bytes", "invalid_exact_evm_payload", func(p *payment) { p.auth["nonce"] = nonce1[:64] }},
		{"nonce without 0x", "invalid_exact_evm_payload", func(p *payment) { p.auth["nonce"] = nonce1[2:] }},
		{"required amount not a number", "invalid_exact_evm_required_amount", func(p *payment) { p.requirements["amount"] = "0.05" }},
		{"value one more", "invalid_exact_evm_payload_authorization_value_mismatch", func(p *payment) { p.auth["value"] = "50001" }},
		{"value one less", "invalid_exact_evm_payload_authorization_value_mismatch", func(p *payment) { p.auth["value"] = "49999" }},
		{"expired", "invalid_exact_evm_payload_authorization_valid_before", func(p *payment) { p.auth["validBefore"] = unix(fixedNow.Add(-time.Second)) }},
		{"valid 5 s more", "invalid_exact_evm_payload_authorization_valid_before", func(p *payment) { p.auth["validBefore"] = unix(fixedNow.Add(5 * time.Second)) }},
		{"valid 6 s more", "invalid_exact_evm_signature", func(p *payment) { p.auth["validBefore"] = unix(fixedNow.Add(6 * time.Second)) }},
		{"valid from 1 s ahead", "invalid_exact_evm_payload_authorization_valid_after", func(p *payment) { p.auth["validAfter"] = unix(fixedNow.Add(time.Second)) }},
		{"valid from now", "invalid_exact_evm_signature", func(p *payment) { p.auth["validAfter"] = unix(fixedNow) }},
		{"no domain name", "invalid_exact_evm_missing_eip712_domain", func(p *payment) { p.requirements["extra"] = map[string]any{"version": "2"} }},
		{"signature not hex", "invalid_exact_evm_signature_format", func(p *payment) { p.signature = "0x" + strings.Repeat("zz", 65) }},
		{"signature without 0x", "invalid_exact_evm_signature_format", func(p *payment) { p.signature = strings.Repeat("00", 65) }},
		{"signature of 64 bytes", "invalid_exact_evm_signature", func(p *payment) { p.signature = "0x" + strings.Repeat("00", 64) }},
		{"a smart wallet's signature", "invalid_exact_evm_payload_undeployed_smart_wallet", func(p *payment) { p.signature = "0x" + strings.Repeat("00", 66) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := newPayment()
			c.change(p)
			body := p.body(t)
			status, v := f.verify(t, body)
			if status != http.StatusOK || *v.IsValid || v.InvalidReason != c.reason {
				t.Errorf("/verify: %d %+v, want 200 invalid %s", status, v, c.reason)
			}
			status, s := f.settle(t, body)
			if status != http.StatusOK || *s.Success || s.ErrorReason != c.reason || *s.Transaction != "" || *s.Network != sepolia {
				t.Errorf("/settle: %d %+v, want 200 unsuccessful %s on %s without a transaction", status, s, c.reason, sepolia)
			}
		})
	}
	if b := f.balances(t); len(b) != 0 {
		t.Errorf("ledger %v after refused payments, want untouched", b)
	}
}

func TestUnknownRoutesAreNotFound(t *testing.T) {
	f := newFixture(t)
	for _, c := range []struct{ method, path string }{
		{http.MethodGet, "/"},
		{http.MethodGet, "/verify"},
		{http.MethodPost, "/supported"},
		{http.MethodGet, "/_control"},
		{http.MethodPost, "/v2/x402/settle"},
	} {
		if resp, b := f.do(t, c.method, c.path, "{}"); resp.StatusCode != http.StatusNotFound && resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("%s %s: %d %s, want 404 or 405", c.method, c.path, resp.StatusCode, b)
		}
	}
	if n := len(f.calls(t)); n != 0 {
		t.Errorf("%d calls recorded for unknown routes, want 0", n)
	}
}

// Down, the API answers 503 and the test endpoints still answer, so the
// fake can be brought back up.
func TestDownAnswers503OnTheAPIOnly(t *testing.T) {
	f := newFixture(t)
	if st := f.control(t, `{"down":true}`); !st.Down {
		t.Fatalf("state %+v, want down", st)
	}
	body := newPayment().body(t)
	for _, r := range []struct{ method, path, body string }{
		{http.MethodGet, "/supported", ""},
		{http.MethodPost, "/verify", body},
		{http.MethodPost, "/settle", body},
	} {
		if resp, b := f.do(t, r.method, r.path, r.body); resp.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("down: %s %s: %d %s, want 503", r.method, r.path, resp.StatusCode, b)
		}
	}
	calls := f.calls(t)
	if len(calls) != 3 {
		t.Fatalf("calls %+v, want 3", calls)
	}
	for _, c := range calls {
		if c.Outcome != "down" || c.Status != http.StatusServiceUnavailable {
			t.Errorf("call %+v, want outcome down, status 503", c)
		}
	}
	f.control(t, `{"down":false}`)
	if resp, b := f.do(t, http.MethodGet, "/supported", ""); resp.StatusCode != http.StatusOK {
		t.Errorf("up again: /supported %d %s", resp.StatusCode, b)
	}
}

func TestCallsRecordThePayment(t *testing.T) {
	f := newFixture(t)
	f.do(t, http.MethodGet, "/supported", "")
	p := newPayment()
	p.auth["value"] = "7"
	f.verify(t, p.body(t))
	f.settle(t, `[]`)
	old := newPayment()
	old.version = 1
	if _, s := f.settle(t, old.body(t)); *s.Network != sepolia {
		t.Errorf("a refused version's settle answer names network %q, want %s", *s.Network, sepolia)
	}

	calls := f.calls(t)
	if len(calls) != 4 {
		t.Fatalf("calls %+v, want 4", calls)
	}
	want := []fakefacilitator.Call{
		{Time: fixedNow, Path: "/supported", Outcome: "ok", Status: 200},
		{Time: fixedNow, Path: "/verify", Network: sepolia, From: payer, Nonce: nonce1, Value: "7",
			Outcome: "invalid_exact_evm_payload_authorization_value_mismatch", Status: 200},
		{Time: fixedNow, Path: "/settle", Outcome: "invalid_payload", Status: 400},
		{Time: fixedNow, Path: "/settle", Network: sepolia, From: payer, Nonce: nonce1, Value: price, Outcome: "invalid_x402_version", Status: 400},
	}
	for i, c := range calls {
		if !c.Time.Equal(want[i].Time) {
			t.Errorf("call %d time %v, want %v", i, c.Time, want[i].Time)
		}
		c.Time = want[i].Time
		if c != want[i] {
			t.Errorf("call %d = %+v, want %+v", i, c, want[i])
		}
	}
	if resp, _ := f.do(t, http.MethodDelete, "/_calls", ""); resp.StatusCode != http.StatusNoContent {
		t.Errorf("DELETE /_calls: %d", resp.StatusCode)
	}
	if n := len(f.fake.Calls()); n != 0 {
		t.Errorf("%d calls after DELETE, want 0", n)
	}
}
