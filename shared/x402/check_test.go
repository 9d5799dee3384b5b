package x402

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
)

const (
	testPayTo  = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C"
	testRoom   = 30 * time.Second
	testPrice  = 50000
	strangerTo = "0x1111111111111111111111111111111111111111"
)

var testNow = time.Unix(1764200000, 0)

// testKey is a fixed payer key, so that every run signs the same bytes.
func testKey(seed byte) *secp256k1.PrivateKey {
	return secp256k1.PrivKeyFromBytes(bytes.Repeat([]byte{seed}, 32))
}

// seeded is a deterministic source of nonces.
type seeded struct{ r *rand.ChaCha8 }

func (s seeded) Read(p []byte) (int, error) { return s.r.Read(p) }

func newSeeded() seeded { return seeded{rand.NewChaCha8([32]byte{7})} }

func offers() []PaymentRequirements {
	var out []PaymentRequirements
	for _, n := range []Network{NetworkBaseSepolia, NetworkBase} {
		info, _ := LookupNetwork(n)
		out = append(out, Requirement(info, testPrice, testPayTo, 60*time.Second))
	}
	return out
}

// shop is a paid resource over real HTTP, as the agent function will be: no
// header, a 402 with PAYMENT-REQUIRED; a header that does not decode, a 400;
// a payment the local check refuses, a 402 whose error is the reason; else
// 200. Only a signature by another key may pass CheckTerms and be refused
// by CheckSigner: every other refusal costs no recovery, and the agent
// function writes nothing before it.
func shop(t *testing.T, accepts []PaymentRequirements) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		required := func(reason string) {
			h, err := EncodeHeader(PaymentRequired{X402Version: Version, Error: reason, Resource: &ResourceInfo{URL: r.URL.String()}, Accepts: accepts})
			if err != nil {
				t.Error(err)
			}
			w.Header().Set(HeaderPaymentRequired, h)
			w.WriteHeader(http.StatusPaymentRequired)
		}
		h := r.Header.Get(HeaderPaymentSignature)
		if h == "" {
			required("PAYMENT-SIGNATURE header is required")
			return
		}
		p, err := DecodePaymentSignature(h)
		var refusal *Refusal
		if errors.As(err, &refusal) {
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": refusal.Reason})
			return
		}
		req, err := CheckTerms(p, accepts, testNow, testRoom)
		if err == nil {
			err = CheckSigner(p, req)
			if errors.As(err, &refusal) && refusal.Reason != ReasonInvalidSignature {
				t.Errorf("CheckSigner refused what CheckTerms let through: %v", err)
			}
		}
		if errors.As(err, &refusal) {
			required(refusal.Reason)
			return
		}
		if err != nil {
			t.Errorf("the check returned %v, not a *Refusal", err)
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		_ = json.NewEncoder(w).Encode(req)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// pay asks the shop for its price over HTTP, signs a payment for network with
// key, lets tamper change it, and sends it. It returns the status and the
// refusal reason (the 402's error or the 400's).
func pay(t *testing.T, url string, network Network, key *secp256k1.PrivateKey, tamper func(*PaymentPayload)) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	required, err := DecodePaymentRequired(resp.Header.Get(HeaderPaymentRequired))
	if resp.StatusCode != http.StatusPaymentRequired || err != nil {
		t.Fatalf("unpaid request: %d, %v", resp.StatusCode, err)
	}
	var offer PaymentRequirements
	for _, a := range required.Accepts {
		if a.Network == network {
			offer = a
		}
	}
	if _, ok := LookupNetwork(network); !ok {
		offer = required.Accepts[0]
	}
	p, err := NewPayment(key, offer, required.Resource, testNow, newSeeded())
	if err != nil {
		t.Fatal(err)
	}
	if tamper != nil {
		tamper(&p)
	}
	h, err := EncodeHeader(p)
	if err != nil {
		t.Fatal(err)
	}
	return send(t, url, h)
}

func send(t *testing.T, url, header string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"query":"x"}`))
	req.Header.Set(HeaderPaymentSignature, header)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusPaymentRequired:
		pr, err := DecodePaymentRequired(resp.Header.Get(HeaderPaymentRequired))
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, pr.Error
	case http.StatusBadRequest:
		var body map[string]string
		_ = json.NewDecoder(resp.Body).Decode(&body)
		return resp.StatusCode, body["error"]
	}
	return resp.StatusCode, ""
}

// resign signs the (tampered) authorization again with key under the domain
// of p's network, as a dishonest client would.
func resign(key *secp256k1.PrivateKey, p *PaymentPayload, domain func(*NetworkInfo)) {
	n, _ := LookupNetwork(p.Accepted.Network)
	if n.Network == "" {
		n, _ = LookupNetwork(NetworkBaseSepolia)
	}
	if domain != nil {
		domain(&n)
	}
	sig, err := SignAuthorization(key, n, p.Payload.Authorization)
	if err != nil {
		panic(err)
	}
	p.Payload.Signature = sig
}

func TestCheckOverHTTP(t *testing.T) {
	url := shop(t, offers()).URL
	key, other := testKey(1), testKey(2)
	unix := func(d time.Duration) string { return strconv.FormatInt(testNow.Add(d).Unix(), 10) }
	auth := func(f func(a *Authorization)) func(*PaymentPayload) {
		return func(p *PaymentPayload) { f(&p.Payload.Authorization); resign(key, p, nil) }
	}
	cases := []struct {
		name    string
		network Network
		tamper  func(*PaymentPayload)
		status  int
		reason  string
	}{
		{"honest payment, testnet", NetworkBaseSepolia, nil, 200, ""},
		{"honest payment, mainnet", NetworkBase, nil, 200, ""},
		{"addresses in lower case", NetworkBase, func(p *PaymentPayload) {
			p.Accepted.PayTo, p.Accepted.Asset = strings.ToLower(p.Accepted.PayTo), strings.ToLower(p.Accepted.Asset)
			p.Payload.Authorization.To = strings.ToLower(p.Payload.Authorization.To)
			p.Payload.Authorization.From = strings.ToLower(p.Payload.Authorization.From)
		}, 200, ""},
		{"v as 0/1", NetworkBase, func(p *PaymentPayload) {
			b, _ := hex.DecodeString(p.Payload.Signature[2:])
			b[64] -= 27
			p.Payload.Signature = "0x" + hex.EncodeToString(b)
		}, 200, ""},
		{"valid from this very second", NetworkBase, auth(func(a *Authorization) { a.ValidAfter = unix(0) }), 200, ""},
		{"valid for exactly the settlement room", NetworkBase, auth(func(a *Authorization) { a.ValidBefore = unix(testRoom) }), 200, ""},

		{"version 1", NetworkBase, func(p *PaymentPayload) { p.X402Version = 1 }, 402, ReasonInvalidVersion},
		{"another scheme", NetworkBase, func(p *PaymentPayload) { p.Accepted.Scheme = "upto" }, 402, ReasonUnsupportedScheme},
		{"a network not offered", "eip155:1", func(p *PaymentPayload) { p.Accepted.Network = "eip155:1" }, 402, ReasonInvalidNetwork},
		{"another asset", NetworkBase, func(p *PaymentPayload) { p.Accepted.Asset = strangerTo }, 402, ReasonInvalidPaymentRequirements},
		{"accepted payTo redirected", NetworkBase, func(p *PaymentPayload) {
			p.Accepted.PayTo, p.Payload.Authorization.To = strangerTo, strangerTo
			resign(key, p, nil)
		}, 402, ReasonRecipientMismatch},
		{"accepted payTo altered, authorization still to us", NetworkBase, func(p *PaymentPayload) { p.Accepted.PayTo = strangerTo }, 402, ReasonRecipientMismatch},
		{"accepted amount altered, authorization the price", NetworkBase, func(p *PaymentPayload) { p.Accepted.Amount = "1" }, 402, ReasonValueMismatch},
		{"authorization to someone else", NetworkBase, auth(func(a *Authorization) { a.To = strangerTo }), 402, ReasonRecipientMismatch},
		{"amount tampered in both places", NetworkBase, func(p *PaymentPayload) {
			p.Accepted.Amount, p.Payload.Authorization.Value = "1", "1"
			resign(key, p, nil)
		}, 402, ReasonValueMismatch},
		{"value less than the price", NetworkBase, auth(func(a *Authorization) { a.Value = "49999" }), 402, ReasonValueMismatch},
		{"value more than the price", NetworkBase, auth(func(a *Authorization) { a.Value = "50001" }), 402, ReasonValueMismatch},
		{"not yet valid", NetworkBase, auth(func(a *Authorization) { a.ValidAfter = unix(time.Second) }), 402, ReasonValidAfter},
		{"expired", NetworkBase, auth(func(a *Authorization) { a.ValidBefore = unix(-time.Second) }), 402, ReasonValidBefore},
		{"expires during settlement", NetworkBase, auth(func(a *Authorization) { a.ValidBefore = unix(testRoom - time.Second) }), 402, ReasonValidBefore},
		{"nonce of 31 bytes", NetworkBase, func(p *PaymentPayload) { p.Payload.Authorization.Nonce = p.Payload.Authorization.Nonce[:64] }, 402, ReasonMalformedExact},
		{"nonce not hex", NetworkBase, func(p *PaymentPayload) { p.Payload.Authorization.Nonce = "0x" + strings.Repeat("zz", 32) }, 402, ReasonMalformedExact},
		{"from not an address", NetworkBase, func(p *PaymentPayload) { p.Payload.Authorization.From = "merchant" }, 402, ReasonMalformedExact},
		{"value negative", NetworkBase, func(p *PaymentPayload) { p.Payload.Authorization.Value = "-50000" }, 402, ReasonMalformedExact},
		{"value in hex", NetworkBase, func(p *PaymentPayload) { p.Payload.Authorization.Value = "0xc350" }, 402, ReasonMalformedExact},
		{"validBefore over uint256", NetworkBase, func(p *PaymentPayload) { p.Payload.Authorization.ValidBefore = maxUint256.String() + "0" }, 402, ReasonMalformedExact},
		{"no signature", NetworkBase, func(p *PaymentPayload) { p.Payload.Signature = "" }, 402, ReasonMissingSignature},
		{"smart-wallet signature", NetworkBase, func(p *PaymentPayload) { p.Payload.Signature += strings.Repeat("64", 32) }, 402, ReasonSignatureFormat},
		{"signed by someone else", NetworkBase, func(p *PaymentPayload) { resign(other, p, nil) }, 402, ReasonInvalidSignature},
		{"signed under testnet's domain name on mainnet", NetworkBase, func(p *PaymentPayload) {
			resign(key, p, func(n *NetworkInfo) { n.AssetName = "USDC" })
		}, 402, ReasonInvalidSignature},
		{"signed for the other chain", NetworkBase, func(p *PaymentPayload) {
			resign(key, p, func(n *NetworkInfo) { n.ChainID = 84532 })
		}, 402, ReasonInvalidSignature},
		{"nonce changed after signing", NetworkBase, func(p *PaymentPayload) {
			p.Payload.Authorization.Nonce = "0x" + strings.Repeat("ab", 32)
		}, 402, ReasonInvalidSignature},
		{"from claims another payer", NetworkBase, func(p *PaymentPayload) {
			p.Payload.Authorization.From = AddressOf(other.PubKey())
		}, 402, ReasonInvalidSignature},
	}
	for _, c := range cases {
		status, reason := pay(t, url, c.network, key, c.tamper)
		if status != c.status || reason != c.reason {
			t.Errorf("%s: %d %q, want %d %q", c.name, status, reason, c.status, c.reason)
		}
	}

	if status, reason := send(t, url, "not base64 at all!"); status != 400 || reason != ReasonInvalidPayload {
		t.Errorf("garbage header: %d %q", status, reason)
	}
}

// A payment made by viem, not by this package, passes.
func TestCheckAcceptsViemsSignature(t *testing.T) {
	v := loadViem(t).Vectors[3]
	n, _ := LookupNetwork(v.Network)
	req := Requirement(n, 1, v.Authorization.To, 60*time.Second)
	p := PaymentPayload{X402Version: 2, Accepted: req, Payload: ExactPayload{Signature: v.Signature, Authorization: v.Authorization}}
	if _, err := CheckTerms(p, nil, testNow, testRoom); err == nil {
		t.Fatal("checked against no offers")
	}
	got, err := CheckTerms(p, []PaymentRequirements{req}, testNow, testRoom)
	if err == nil {
		err = CheckSigner(p, got)
	}
	if err != nil || got.Amount != "1" {
		t.Fatalf("viem's payment refused: %v", err)
	}
}

func TestRefusalIsFoundByErrorsAs(t *testing.T) {
	_, err := CheckTerms(PaymentPayload{X402Version: 1}, offers(), testNow, testRoom)
	wrapped := errors.Join(errors.New("agent: paid request"), err)
	var r *Refusal
	if !errors.As(wrapped, &r) || r.Reason != ReasonInvalidVersion || !strings.Contains(err.Error(), ReasonInvalidVersion) {
		t.Errorf("%v", err)
	}
}

func BenchmarkCheck(b *testing.B) {
	accepts := offers()
	p, err := NewPayment(testKey(1), accepts[1], nil, testNow, newSeeded())
	if err != nil {
		b.Fatal(err)
	}
	h, _ := EncodeHeader(p)
	b.ReportAllocs()
	for b.Loop() {
		p, err := DecodePaymentSignature(h)
		if err != nil {
			b.Fatal(err)
		}
		req, err := CheckTerms(p, accepts, testNow, testRoom)
		if err == nil {
			err = CheckSigner(p, req)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
}

func TestAuthorizationIDIgnoresSpelling(t *testing.T) {
	p, err := NewPayment(testKey(1), offers()[1], nil, testNow, newSeeded())
	if err != nil {
		t.Fatal(err)
	}
	a := p.Payload.Authorization
	id, err := AuthorizationID(p.Accepted.Network, p.Accepted.Asset, a)
	if err != nil {
		t.Fatal(err)
	}
	if id != strings.ToLower(id) || !strings.HasPrefix(id, "eip155:8453/0x833589fcd6edb6e08f4c7c32d4f71b54bda02913/") {
		t.Errorf("id %s", id)
	}
	// Claims already stored are keyed on this spelling.
	contract, _ := parseAddress(p.Accepted.Asset)
	from, _ := parseAddress(a.From)
	nonce, _ := parseNonce(a.Nonce)
	if want := fmt.Sprintf("%s/0x%x/0x%x/0x%x", p.Accepted.Network, contract, from, nonce); id != want {
		t.Errorf("id %s, claims are keyed %s", id, want)
	}
	upper := func(s string) string { return "0x" + strings.ToUpper(s[2:]) }
	other := a
	other.Nonce = "0x" + strings.Repeat("00", 32)
	cases := []struct {
		name  string
		n     Network
		asset string
		a     Authorization
		same  bool
	}{
		{"spelled in upper case", p.Accepted.Network, strings.ToLower(p.Accepted.Asset), Authorization{From: upper(a.From), Nonce: upper(a.Nonce), Value: "1"}, true},
		{"another nonce", p.Accepted.Network, p.Accepted.Asset, other, false},
		{"another network", NetworkBaseSepolia, p.Accepted.Asset, a, false},
	}
	for _, c := range cases {
		got, err := AuthorizationID(c.n, c.asset, c.a)
		if err != nil || (got == id) != c.same {
			t.Errorf("%s: %s (%v) vs %s", c.name, got, err, id)
		}
	}
	if _, err := AuthorizationID(NetworkBase, p.Accepted.Asset, Authorization{From: a.From, Nonce: "0x12"}); err == nil {
		t.Error("short nonce named")
	}
}
