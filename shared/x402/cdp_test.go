package x402

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

const cdpKeyID = "organizations/org-1/apiKeys/key-1"

// cdpFacilitator is CDP's facilitator as far as authentication goes: it
// answers 401 unless the bearer JWT is one CDP accepts for this very
// request, signed by pub.
func cdpFacilitator(t *testing.T, pub crypto.PublicKey, now time.Time) (*httptest.Server, *[]string) {
	t.Helper()
	var mu sync.Mutex
	var nonces []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok {
			http.Error(w, "no bearer", http.StatusUnauthorized)
			return
		}
		nonce, err := checkCDPJWT(token, pub, r.Method+" "+r.Host+r.URL.Path, now)
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		mu.Lock()
		nonces = append(nonces, nonce)
		mu.Unlock()
		switch r.URL.Path {
		case "/platform/v2/x402/verify":
			_, _ = w.Write([]byte(`{"isValid":true}`))
		case "/platform/v2/x402/supported":
			_, _ = w.Write([]byte(`{"kinds":[{"x402Version":2,"scheme":"exact","network":"eip155:8453"}]}`))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &nonces
}

// checkCDPJWT verifies a JWT the way the CDP SDK writes it and returns its
// nonce.
func checkCDPJWT(token string, pub crypto.PublicKey, uri string, now time.Time) (string, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return "", errors.New("not a JWS")
	}
	var header map[string]string
	var claims struct {
		Sub  string   `json:"sub"`
		Iss  string   `json:"iss"`
		Nbf  int64    `json:"nbf"`
		Iat  int64    `json:"iat"`
		Exp  int64    `json:"exp"`
		URIs []string `json:"uris"`
	}
	for i, v := range []any{&header, &claims} {
		b, err := base64.RawURLEncoding.DecodeString(parts[i])
		if err != nil {
			return "", err
		}
		if err := json.Unmarshal(b, v); err != nil {
			return "", err
		}
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return "", err
	}
	input := []byte(parts[0] + "." + parts[1])
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		digest := sha256.Sum256(input)
		if header["alg"] != "ES256" || len(sig) != 64 ||
			!ecdsa.Verify(k, digest[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
			return "", errors.New("bad ES256 signature")
		}
	case ed25519.PublicKey:
		if header["alg"] != "EdDSA" || !ed25519.Verify(k, input, sig) {
			return "", errors.New("bad EdDSA signature")
		}
	}
	if n, err := hex.DecodeString(header["nonce"]); err != nil || len(n) != 16 {
		return "", errors.New("bad nonce")
	}
	t := now.Unix()
	switch {
	case header["kid"] != cdpKeyID || header["typ"] != "JWT":
		return "", errors.New("bad header")
	case claims.Sub != cdpKeyID || claims.Iss != "cdp":
		return "", errors.New("bad subject or issuer")
	case claims.Nbf > t || claims.Iat != claims.Nbf || claims.Exp != claims.Iat+120:
		return "", errors.New("bad lifetime")
	case !reflect.DeepEqual(claims.URIs, []string{uri}):
		return "", errors.New("uris " + strings.Join(claims.URIs, ",") + " is not " + uri)
	}
	return header["nonce"], nil
}

type cdpKey struct {
	name   string
	secret string
	pub    crypto.PublicKey
}

func cdpKeys(t *testing.T) []cdpKey {
	t.Helper()
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sec1, _ := x509.MarshalECPrivateKey(ec)
	sec1PEM := string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: sec1}))
	pkcs8, _ := x509.MarshalPKCS8PrivateKey(ec)
	pkcs8PEM := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8}))
	edPub, ed, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return []cdpKey{
		{"EC P-256, SEC 1 PEM", sec1PEM, &ec.PublicKey},
		{"EC P-256, newlines escaped as in a JSON secret", strings.ReplaceAll(sec1PEM, "\n", `\n`), &ec.PublicKey},
		{"EC P-256, PKCS #8 PEM", pkcs8PEM, &ec.PublicKey},
		{"Ed25519, base64 of 64 bytes", base64.StdEncoding.EncodeToString(ed), edPub},
	}
}

func TestCDPAuthorizerOverHTTP(t *testing.T) {
	p, req := samplePayment(t)
	for _, k := range cdpKeys(t) {
		srv, nonces := cdpFacilitator(t, k.pub, testNow)
		auth, err := NewCDPAuthorizer(cdpKeyID, k.secret)
		if err != nil {
			t.Fatalf("%s: %v", k.name, err)
		}
		auth.Now = func() time.Time { return testNow }
		f := &Facilitator{URL: srv.URL + "/platform/v2/x402", HTTP: srv.Client(), Auth: auth}
		if v, err := f.Verify(context.Background(), p, req); err != nil || !v.IsValid {
			t.Errorf("%s: verify: %+v, %v", k.name, v, err)
		}
		if s, err := f.Supported(context.Background()); err != nil || !s.Supports(2, SchemeExact, NetworkBase) {
			t.Errorf("%s: supported: %+v, %v", k.name, s, err)
		}
		if len(*nonces) != 2 || (*nonces)[0] == (*nonces)[1] {
			t.Errorf("%s: not a fresh JWT per request: %v", k.name, *nonces)
		}
	}
}

// A key the facilitator does not know is a refused credential, for the
// caller to read its secret again.
func TestCDPWrongKeyIsCredentialRefused(t *testing.T) {
	keys := cdpKeys(t)
	srv, _ := cdpFacilitator(t, keys[3].pub, testNow)
	auth, err := NewCDPAuthorizer(cdpKeyID, keys[0].secret)
	if err != nil {
		t.Fatal(err)
	}
	p, req := samplePayment(t)
	f := &Facilitator{URL: srv.URL + "/platform/v2/x402", HTTP: srv.Client(), Auth: auth}
	if _, err := f.Verify(context.Background(), p, req); !errors.Is(err, ErrCredentialRefused) {
		t.Errorf("wrong key: %v", err)
	}
}

func TestNewCDPAuthorizerRefusesOtherKeys(t *testing.T) {
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	sec1, _ := x509.MarshalECPrivateKey(p384)
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 1024)
	pkcs8, _ := x509.MarshalPKCS8PrivateKey(rsaKey)
	_, ed, _ := ed25519.GenerateKey(rand.Reader)
	cases := []struct{ name, id, secret string }{
		{"EC P-384", cdpKeyID, string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: sec1}))},
		{"RSA", cdpKeyID, string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8}))},
		{"Ed25519 seed only", cdpKeyID, base64.StdEncoding.EncodeToString(ed.Seed())},
		{"garbage", cdpKeyID, "not a key"},
		{"empty", cdpKeyID, ""},
		{"no key id", "", base64.StdEncoding.EncodeToString(ed)},
	}
	for _, c := range cases {
		if _, err := NewCDPAuthorizer(c.id, c.secret); err == nil {
			t.Errorf("%s: accepted", c.name)
		}
	}
}
