package fakefacilitator

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"strings"
	"time"

	"42sisters.ai/oracle/shared/x402"
)

// validBeforeRoom is how far ahead validBefore must be, as the reference
// requires: room for the transaction to be mined.
const validBeforeRoom = 6 * time.Second

// uint256Max bounds the authorization's numbers, as the ABI does.
var uint256Max = new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 256), big.NewInt(1))

// refusal is a payment or request the fake does not accept: status 200
// for a payment the rules refuse, 400 for a request it cannot take.
type refusal struct {
	status  int
	reason  string
	message string
	payer   string
}

func refuse(reason, payer, format string, args ...any) *refusal {
	return &refusal{status: http.StatusOK, reason: reason, payer: payer, message: fmt.Sprintf(format, args...)}
}

func badRequest(reason, format string, args ...any) *refusal {
	return &refusal{status: http.StatusBadRequest, reason: reason, message: fmt.Sprintf(format, args...)}
}

// transfer is a payment that passed every check not needing the ledger:
// what transferWithAuthorization would be called with.
type transfer struct {
	network x402.Network
	asset   string // lower case
	from    string // as sent, for the answers' payer
	to      string
	value   *big.Int
	nonce   string // lower case, 0x and 64 hex digits
	name    string // the EIP-712 domain the requirements name
	version string
}

// key names the authorization on the fake chain: EIP-3009 marks a nonce
// used per token contract and signer.
func (t *transfer) key() nonceKey {
	return nonceKey{asset: t.asset, from: strings.ToLower(t.from), nonce: t.nonce}
}

// decodeRequest reads a /verify or /settle body, refusing what a
// facilitator refuses before any scheme looks at it. The request is nil
// only when the body is not JSON of its shape.
func decodeRequest(body []byte) (*request, *refusal) {
	var req request
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, badRequest(reasonInvalidPayload, "the body is not a facilitator request: %v", err)
	}
	switch {
	case req.PaymentPayload == nil:
		return &req, badRequest(reasonInvalidPayload, "paymentPayload is missing")
	case req.PaymentRequirements == nil:
		return &req, badRequest(reasonInvalidRequirement, "paymentRequirements is missing")
	case req.PaymentPayload.X402Version != x402.Version:
		return &req, badRequest(reasonInvalidVersion, "unsupported version: %d", req.PaymentPayload.X402Version)
	case req.X402Version != 0 && req.X402Version != x402.Version:
		return &req, badRequest(reasonInvalidVersion, "unsupported version: %d", req.X402Version)
	}
	r := req.PaymentRequirements
	if _, ok := x402.LookupNetwork(r.Network); !ok {
		return &req, badRequest(reasonInvalidNetwork, "no facilitator for network %q", r.Network)
	}
	if r.Scheme != x402.SchemeExact {
		return &req, badRequest(reasonUnsupportedScheme, "no facilitator for scheme %q", r.Scheme)
	}
	if _, err := x402.ChecksumAddress(r.PayTo); err != nil {
		return &req, badRequest(reasonInvalidRequirement, "payTo: %v", err)
	}
	if _, err := x402.ChecksumAddress(r.Asset); err != nil {
		return &req, badRequest(reasonInvalidRequirement, "asset: %v", err)
	}
	return &req, nil
}

// check verifies a payment as the reference's Go facilitator does, in its
// order, up to and including the signature: everything but what the chain
// knows (see Server.onChain).
func check(req *request, now time.Time) (*transfer, *refusal) {
	p, r := req.PaymentPayload, req.PaymentRequirements
	if p.Accepted.Scheme != x402.SchemeExact {
		return nil, refuse(reasonScheme, "", "invalid scheme: %s", p.Accepted.Scheme)
	}
	if p.Accepted.Network != r.Network {
		return nil, refuse(reasonNetworkMismatch, "", "network mismatch: %s != %s", p.Accepted.Network, r.Network)
	}
	a := p.Payload.Authorization
	if a == (x402.Authorization{}) {
		return nil, refuse(reasonEVMPayload, "", "the payload is not an EIP-3009 authorization")
	}
	if p.Payload.Signature == "" {
		return nil, refuse(reasonMissingSignature, "", "missing signature")
	}
	if !strings.EqualFold(a.To, r.PayTo) {
		return nil, refuse(reasonRecipientMismatch, "", "recipient mismatch: %s != %s", a.To, r.PayTo)
	}
	t := &transfer{network: r.Network, asset: strings.ToLower(r.Asset), from: a.From, to: a.To}
	value, validAfter, validBefore, err := parseAuthorization(a)
	if err != nil {
		return nil, refuse(reasonEVMPayload, a.From, "%v", err)
	}
	t.value, t.nonce = value, strings.ToLower(a.Nonce)
	required, ok := parseUint256(r.Amount)
	if !ok {
		return nil, refuse(reasonRequiredAmount, "", "invalid required amount: %s", r.Amount)
	}
	if value.Cmp(required) != 0 {
		return nil, refuse(reasonValue, a.From, "authorization value mismatch: %s != %s", value, required)
	}
	unix := now.Unix()
	if validBefore.Cmp(big.NewInt(unix+int64(validBeforeRoom/time.Second))) < 0 {
		return nil, refuse(reasonValidBefore, a.From, "valid before expired: %s", validBefore)
	}
	if validAfter.Cmp(big.NewInt(unix)) > 0 {
		return nil, refuse(reasonValidAfter, a.From, "valid after in future: %s", validAfter)
	}
	t.name, _ = r.Extra["name"].(string)
	t.version, _ = r.Extra["version"].(string)
	if t.name == "" || t.version == "" {
		return nil, refuse(reasonMissingDomain, a.From, "missing EIP-712 domain name/version in requirements.extra")
	}
	sig, err := hex.DecodeString(strings.TrimPrefix(p.Payload.Signature, "0x"))
	if err != nil || !strings.HasPrefix(p.Payload.Signature, "0x") {
		return nil, refuse(reasonSignatureFormat, a.From, "the signature is not 0x-prefixed hex")
	}
	if len(sig) > signatureLen {
		// ERC-1271 or ERC-6492: only a contract could check it, and the
		// fake chain has none deployed.
		return nil, refuse(reasonUndeployedWallet, a.From, "a smart wallet signature; no contract is deployed at %s", a.From)
	}
	// The domain is the one the requirements name, as the reference's
	// facilitator recovers it; whether the token's own is the same is for
	// the chain to find (onChain).
	n, _ := x402.LookupNetwork(r.Network)
	n.Asset, n.AssetName, n.AssetVersion = r.Asset, t.name, t.version
	signer, err := x402.RecoverSigner(n, a, p.Payload.Signature)
	if err != nil || !x402.SameAddress(signer, a.From) {
		return nil, refuse(reasonSignature, a.From, "invalid signature: %s", p.Payload.Signature)
	}
	return t, nil
}

// parseAuthorization reads the authorization's numbers as uint256 and
// checks its addresses and nonce.
func parseAuthorization(a x402.Authorization) (value, validAfter, validBefore *big.Int, err error) {
	if _, err := x402.ChecksumAddress(a.From); err != nil {
		return nil, nil, nil, fmt.Errorf("from: %w", err)
	}
	if _, err := x402.ChecksumAddress(a.To); err != nil {
		return nil, nil, nil, fmt.Errorf("to: %w", err)
	}
	var ok bool
	if value, ok = parseUint256(a.Value); !ok {
		return nil, nil, nil, fmt.Errorf("invalid authorization value: %s", a.Value)
	}
	if validAfter, ok = parseUint256(a.ValidAfter); !ok {
		return nil, nil, nil, fmt.Errorf("invalid validAfter: %s", a.ValidAfter)
	}
	if validBefore, ok = parseUint256(a.ValidBefore); !ok {
		return nil, nil, nil, fmt.Errorf("invalid validBefore: %s", a.ValidBefore)
	}
	if n, err := hex.DecodeString(strings.TrimPrefix(a.Nonce, "0x")); err != nil || len(n) != 32 || !strings.HasPrefix(a.Nonce, "0x") {
		return nil, nil, nil, fmt.Errorf("invalid nonce: want 0x and 32 bytes of hex")
	}
	return value, validAfter, validBefore, nil
}

// parseUint256 reads a decimal uint256 as the chain's ABI would take it.
func parseUint256(s string) (*big.Int, bool) {
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return nil, false
	}
	n, ok := new(big.Int).SetString(s, 10)
	if !ok || n.Cmp(uint256Max) > 0 {
		return nil, false
	}
	return n, true
}
