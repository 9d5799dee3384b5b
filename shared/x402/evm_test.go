package x402

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
)

// viemVector is one row of testdata/viem_vectors.json, made by viem (an
// implementation independent of this package) with testdata/viem_vectors.mjs.
type viemVector struct {
	PrivateKey string  `json:"privateKey"`
	Address    string  `json:"address"`
	Network    Network `json:"network"`
	Domain     struct {
		Name              string `json:"name"`
		Version           string `json:"version"`
		ChainID           int64  `json:"chainId"`
		VerifyingContract string `json:"verifyingContract"`
	} `json:"domain"`
	Authorization Authorization `json:"authorization"`
	Digest        string        `json:"digest"`
	Signature     string        `json:"signature"`
}

type viemFile struct {
	Vectors   []viemVector `json:"vectors"`
	Addresses []struct {
		Lower       string `json:"lower"`
		Checksummed string `json:"checksummed"`
	} `json:"addresses"`
}

func loadViem(t *testing.T) viemFile {
	t.Helper()
	b, err := os.ReadFile("testdata/viem_vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var f viemFile
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	if len(f.Vectors) == 0 || len(f.Addresses) == 0 {
		t.Fatal("no vectors")
	}
	return f
}

func keyOf(t *testing.T, h string) *secp256k1.PrivateKey {
	t.Helper()
	b, err := hex.DecodeString(strings.TrimPrefix(h, "0x"))
	if err != nil || len(b) != 32 {
		t.Fatalf("bad key %q", h)
	}
	return secp256k1.PrivKeyFromBytes(b)
}

// The vectors' domains are the network table's: a wrong domain name (the
// classic "USDC" on mainnet) makes signatures that recover to a stranger.
func TestNetworkTableMatchesViemDomains(t *testing.T) {
	for _, v := range loadViem(t).Vectors {
		n, ok := LookupNetwork(v.Network)
		if !ok {
			t.Fatalf("%s not in the table", v.Network)
		}
		if n.AssetName != v.Domain.Name || n.AssetVersion != v.Domain.Version || n.ChainID != v.Domain.ChainID || n.Asset != v.Domain.VerifyingContract {
			t.Errorf("%s: table %+v, viem domain %+v", v.Network, n, v.Domain)
		}
	}
	if _, ok := LookupNetwork("eip155:1"); ok {
		t.Error("Ethereum mainnet is not offered")
	}
}

func TestTypedDataHashRecoverAndSignAgreeWithViem(t *testing.T) {
	for i, v := range loadViem(t).Vectors {
		n, _ := LookupNetwork(v.Network)
		digest, err := TypedDataHash(n, v.Authorization)
		if err != nil {
			t.Fatalf("vector %d: %v", i, err)
		}
		if got := "0x" + hex.EncodeToString(digest[:]); got != v.Digest {
			t.Errorf("vector %d: digest %s, viem %s", i, got, v.Digest)
		}
		got, err := RecoverSigner(n, v.Authorization, v.Signature)
		if err != nil || got != v.Address {
			t.Errorf("vector %d: recovered %q (%v), viem's signer %s", i, got, err, v.Address)
		}
		key := keyOf(t, v.PrivateKey)
		if a := AddressOf(key.PubKey()); a != v.Address {
			t.Errorf("vector %d: address %s, viem %s", i, a, v.Address)
		}
		// RFC 6979 on both sides: the very same bytes.
		sig, err := SignAuthorization(key, n, v.Authorization)
		if err != nil || sig != v.Signature {
			t.Errorf("vector %d: signed %s (%v), viem %s", i, sig, err, v.Signature)
		}
	}
}

// Every field is covered by the signature: change one and the signature
// recovers someone else (or nobody).
func TestTamperedAuthorizationRecoversSomeoneElse(t *testing.T) {
	v := loadViem(t).Vectors[0]
	n, _ := LookupNetwork(v.Network)
	other := "0x1111111111111111111111111111111111111111"
	cases := map[string]func(a *Authorization, n *NetworkInfo){
		"from":          func(a *Authorization, _ *NetworkInfo) { a.From = other },
		"to":            func(a *Authorization, _ *NetworkInfo) { a.To = other },
		"value":         func(a *Authorization, _ *NetworkInfo) { a.Value = "50001" },
		"validAfter":    func(a *Authorization, _ *NetworkInfo) { a.ValidAfter = "1740672088" },
		"validBefore":   func(a *Authorization, _ *NetworkInfo) { a.ValidBefore = "1740672155" },
		"nonce":         func(a *Authorization, _ *NetworkInfo) { a.Nonce = "0x" + strings.Repeat("00", 32) },
		"domain name":   func(_ *Authorization, n *NetworkInfo) { n.AssetName = "USD Coin" },
		"domain ver":    func(_ *Authorization, n *NetworkInfo) { n.AssetVersion = "1" },
		"chain":         func(_ *Authorization, n *NetworkInfo) { n.ChainID = 8453 },
		"contract":      func(_ *Authorization, n *NetworkInfo) { n.Asset = other },
		"to, same addr": nil, // case only: the same message
	}
	for name, tamper := range cases {
		a, nn := v.Authorization, n
		if tamper == nil {
			a.To = "0x" + strings.ToUpper(a.To[2:])
		} else {
			tamper(&a, &nn)
		}
		got, err := RecoverSigner(nn, a, v.Signature)
		same := err == nil && got == v.Address
		if same != (tamper == nil) {
			t.Errorf("%s: recovered %q (%v), signer %s", name, got, err, v.Address)
		}
	}
}

func TestRecoverSignerRefusesMalformedSignatures(t *testing.T) {
	v := loadViem(t).Vectors[0]
	n, _ := LookupNetwork(v.Network)
	sig, _ := hex.DecodeString(v.Signature[2:])
	with := func(f func(b []byte) []byte) string {
		return "0x" + hex.EncodeToString(f(bytes.Clone(sig)))
	}
	// s' = N - s with the other parity recovers the same key from a bare
	// ecrecover, but USDC's ECRecover refuses it.
	var s, nMinusS secp256k1.ModNScalar
	s.SetByteSlice(sig[32:64])
	nMinusS.NegateVal(&s)
	highS := with(func(b []byte) []byte {
		nMinusS.PutBytesUnchecked(b[32:64])
		b[64] = 27 + 28 - b[64]
		return b
	})
	cases := []struct {
		name, sig string
		ok        bool
	}{
		{"as signed (v 27/28)", v.Signature, true},
		{"v as 0/1", with(func(b []byte) []byte { b[64] -= 27; return b }), true},
		{"no 0x", v.Signature[2:], false},
		{"not hex", "0x" + strings.Repeat("zz", 65), false},
		{"64 bytes", with(func(b []byte) []byte { return b[:64] }), false},
		{"smart wallet length", with(func(b []byte) []byte { return append(b, make([]byte, 32)...) }), false},
		{"v 29", with(func(b []byte) []byte { b[64] = 29; return b }), false},
		{"high s", highS, false},
		{"r zero", with(func(b []byte) []byte { clear(b[:32]); return b }), false},
		{"empty", "", false},
	}
	for _, c := range cases {
		got, err := RecoverSigner(n, v.Authorization, c.sig)
		if c.ok != (err == nil && got == v.Address) {
			t.Errorf("%s: recovered %q, %v", c.name, got, err)
		}
	}
}

func TestChecksumAddressAgreesWithViem(t *testing.T) {
	for _, a := range loadViem(t).Addresses {
		got, err := ChecksumAddress(a.Lower)
		if err != nil || got != a.Checksummed {
			t.Errorf("%s: %q (%v), viem %s", a.Lower, got, err, a.Checksummed)
		}
		if !SameAddress("0x"+strings.ToUpper(a.Lower[2:]), a.Checksummed) || SameAddress(a.Lower[2:], a.Checksummed) {
			t.Errorf("%s: SameAddress ignores case but needs the 0x", a.Lower)
		}
	}
	for _, bad := range []string{"", "0x", "0x1234", "209693bc6afc0c5328ba36faf03c514ef312287c00", "0xg09693bc6afc0c5328ba36faf03c514ef312287c", "merchant"} {
		if _, err := ChecksumAddress(bad); err == nil {
			t.Errorf("%q accepted as an address", bad)
		}
	}
}

// NewPayment makes what the reference's TypeScript client makes: with viem's
// key, nonce and clock it yields viem's authorization and signature.
func TestNewPaymentMatchesTheReferenceClient(t *testing.T) {
	f := loadViem(t)
	now := time.Unix(1764200000, 0)
	for _, i := range []int{3, 5} {
		v := f.Vectors[i]
		n, _ := LookupNetwork(v.Network)
		req := Requirement(n, 0, strings.ToLower(v.Authorization.To), 60*time.Second)
		req.Amount = v.Authorization.Value
		nonce, _ := hex.DecodeString(v.Authorization.Nonce[2:])
		res := &ResourceInfo{URL: "https://example.test/x402/query"}
		p, err := NewPayment(keyOf(t, v.PrivateKey), req, res, now, bytes.NewReader(nonce))
		if err != nil {
			t.Fatalf("vector %d: %v", i, err)
		}
		if p.Payload.Authorization != v.Authorization || p.Payload.Signature != v.Signature {
			t.Errorf("vector %d: got %+v %s\nviem %+v %s", i, p.Payload.Authorization, p.Payload.Signature, v.Authorization, v.Signature)
		}
		if p.X402Version != Version || p.Resource != res || p.Accepted.Amount != req.Amount || p.Accepted.PayTo != v.Authorization.To {
			t.Errorf("vector %d: envelope %+v", i, p)
		}
	}
	if _, err := NewPayment(keyOf(t, f.Vectors[0].PrivateKey), PaymentRequirements{Network: "eip155:1"}, nil, now, bytes.NewReader(make([]byte, 32))); err == nil {
		t.Error("paid on a network outside the table")
	}
	n, _ := LookupNetwork(NetworkBase)
	if _, err := NewPayment(keyOf(t, f.Vectors[0].PrivateKey), Requirement(n, 1, f.Vectors[0].Address, time.Minute), nil, now, bytes.NewReader(nil)); err == nil {
		t.Error("paid with no randomness for the nonce")
	}
}

func TestRequirement(t *testing.T) {
	n, _ := LookupNetwork(NetworkBaseSepolia)
	r := Requirement(n, 250000, "0x209693bc6afc0c5328ba36faf03c514ef312287c", 90*time.Second)
	want := PaymentRequirements{
		Scheme: "exact", Network: "eip155:84532", Asset: "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
		Amount: "250000", PayTo: "0x209693Bc6afc0C5328bA36FaF03C514EF312287C", MaxTimeoutSeconds: 90,
		Extra: map[string]any{"name": "USDC", "version": "2"},
	}
	got, _ := json.Marshal(r)
	exp, _ := json.Marshal(want)
	if !bytes.Equal(got, exp) {
		t.Errorf("got  %s\nwant %s", got, exp)
	}
}

func BenchmarkRecoverSigner(b *testing.B) {
	b.ReportAllocs()
	raw, _ := os.ReadFile("testdata/viem_vectors.json")
	var f viemFile
	_ = json.Unmarshal(raw, &f)
	v := f.Vectors[0]
	n, _ := LookupNetwork(v.Network)
	for b.Loop() {
		if _, err := RecoverSigner(n, v.Authorization, v.Signature); err != nil {
			b.Fatal(err)
		}
	}
}
