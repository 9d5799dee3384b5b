package x402

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// cdpTokenLife is how long a CDP JWT lives (the CDP SDK's default, 120 s).
const cdpTokenLife = 120 * time.Second

// CDPAuthorizer authorises requests to Coinbase's CDP facilitator with a
// fresh JWT per request, as the CDP SDK (coinbase/cdp-sdk, go/auth) makes
// it: header {alg, kid: key id, nonce: 16 random bytes in hex, typ: JWT},
// claims {sub: key id, iss: "cdp", nbf, iat, exp: +120 s, uris: ["METHOD
// host/path"]}, signed ES256 with an EC P-256 key or EdDSA with an Ed25519
// key, sent as "Authorization: Bearer <jwt>".
type CDPAuthorizer struct {
	keyID  string
	alg    string
	ec     *ecdsa.PrivateKey
	ed     ed25519.PrivateKey
	Now    func() time.Time // nil: time.Now
	Random io.Reader        // nil: crypto/rand
}

// NewCDPAuthorizer parses the API key pair as CDP issues it: the secret is
// a PEM EC private key (P-256, SEC 1 or PKCS #8; "\n" written as two
// characters is understood) or base64 of a 64-byte Ed25519 key.
func NewCDPAuthorizer(keyID, secret string) (*CDPAuthorizer, error) {
	if strings.TrimSpace(keyID) == "" {
		return nil, errors.New("x402: CDP API key id is empty")
	}
	a := &CDPAuthorizer{keyID: keyID}
	secret = strings.ReplaceAll(strings.TrimSpace(secret), `\n`, "\n")
	if block, _ := pem.Decode([]byte(secret)); block != nil {
		key, err := x509.ParseECPrivateKey(block.Bytes)
		if err != nil {
			k, err8 := x509.ParsePKCS8PrivateKey(block.Bytes)
			if err8 != nil {
				return nil, fmt.Errorf("x402: CDP API key secret: PEM but not an EC private key: %w", err)
			}
			switch k := k.(type) {
			case *ecdsa.PrivateKey:
				key = k
			case ed25519.PrivateKey:
				a.alg, a.ed = "EdDSA", k
				return a, nil
			default:
				return nil, fmt.Errorf("x402: CDP API key secret: a %T, not an EC or Ed25519 key", k)
			}
		}
		if key.Curve != elliptic.P256() {
			return nil, fmt.Errorf("x402: CDP API key secret: curve %s, ES256 needs P-256", key.Curve.Params().Name)
		}
		a.alg, a.ec = "ES256", key
		return a, nil
	}
	raw, err := base64.StdEncoding.DecodeString(secret)
	if err != nil || len(raw) != ed25519.PrivateKeySize {
		return nil, errors.New("x402: CDP API key secret is neither a PEM EC key nor base64 of a 64-byte Ed25519 key")
	}
	a.alg, a.ed = "EdDSA", ed25519.PrivateKey(raw)
	return a, nil
}

// Authorize sets a fresh bearer JWT for the request's method, host and path.
func (a *CDPAuthorizer) Authorize(r *http.Request) error {
	token, err := a.token(r.Method + " " + r.URL.Host + r.URL.Path)
	if err != nil {
		return err
	}
	r.Header.Set("Authorization", "Bearer "+token)
	return nil
}

func (a *CDPAuthorizer) token(uri string) (string, error) {
	now := time.Now
	if a.Now != nil {
		now = a.Now
	}
	random := rand.Reader
	if a.Random != nil {
		random = a.Random
	}
	var nonce [16]byte
	if _, err := io.ReadFull(random, nonce[:]); err != nil {
		return "", fmt.Errorf("x402: CDP JWT nonce: %w", err)
	}
	t := now().Unix()
	header, err := json.Marshal(map[string]string{"alg": a.alg, "kid": a.keyID, "nonce": hex.EncodeToString(nonce[:]), "typ": "JWT"})
	if err != nil {
		return "", err
	}
	claims, err := json.Marshal(map[string]any{
		"sub": a.keyID, "iss": "cdp", "nbf": t, "iat": t, "exp": t + int64(cdpTokenLife/time.Second),
		"uris": []string{uri},
	})
	if err != nil {
		return "", err
	}
	b64 := base64.RawURLEncoding
	input := b64.EncodeToString(header) + "." + b64.EncodeToString(claims)
	var sig []byte
	if a.ec != nil {
		digest := sha256.Sum256([]byte(input))
		r, s, err := ecdsa.Sign(random, a.ec, digest[:])
		if err != nil {
			return "", fmt.Errorf("x402: CDP JWT: %w", err)
		}
		// JWS wants r‖s, each 32 bytes, not DER.
		sig = make([]byte, 64)
		r.FillBytes(sig[:32])
		s.FillBytes(sig[32:])
	} else {
		sig = ed25519.Sign(a.ed, []byte(input))
	}
	return input + "." + b64.EncodeToString(sig), nil
}
