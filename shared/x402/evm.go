package x402

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/decred/dcrd/dcrec/secp256k1/v4/ecdsa"
	"golang.org/x/crypto/sha3"
)

// EIP-712 type hashes of the domain and of EIP-3009's message.
var (
	domainTypeHash   = keccak([]byte("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)"))
	transferTypeHash = keccak([]byte("TransferWithAuthorization(address from,address to,uint256 value," +
		"uint256 validAfter,uint256 validBefore,bytes32 nonce)"))
	maxUint256 = new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 256), big.NewInt(1))
)

// errSignatureFormat marks a signature that is not 65 bytes of hex with a
// usable v and a low s, as opposed to one that recovers someone else.
var errSignatureFormat = errors.New("signature format")

func keccak(parts ...[]byte) [32]byte {
	h := sha3.NewLegacyKeccak256()
	for _, p := range parts {
		h.Write(p)
	}
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// TypedDataHash is the EIP-712 digest of the authorization under n's USDC
// domain {name, version, chainId, verifyingContract}: the hash the payer
// signs and the token contract checks.
func TypedDataHash(n NetworkInfo, a Authorization) ([32]byte, error) {
	contract, err := parseAddress(n.Asset)
	if err != nil {
		return [32]byte{}, fmt.Errorf("x402: domain contract: %w", err)
	}
	if n.AssetName == "" || n.AssetVersion == "" || n.ChainID <= 0 {
		return [32]byte{}, errors.New("x402: domain needs a name, a version and a chain id")
	}
	from, err := parseAddress(a.From)
	if err != nil {
		return [32]byte{}, fmt.Errorf("x402: authorization from: %w", err)
	}
	to, err := parseAddress(a.To)
	if err != nil {
		return [32]byte{}, fmt.Errorf("x402: authorization to: %w", err)
	}
	var words [3][32]byte
	for i, f := range []struct{ name, v string }{{"value", a.Value}, {"validAfter", a.ValidAfter}, {"validBefore", a.ValidBefore}} {
		u, err := parseUint256(f.v)
		if err != nil {
			return [32]byte{}, fmt.Errorf("x402: authorization %s: %w", f.name, err)
		}
		u.FillBytes(words[i][:])
	}
	nonce, err := parseNonce(a.Nonce)
	if err != nil {
		return [32]byte{}, fmt.Errorf("x402: authorization nonce: %w", err)
	}

	var chain [32]byte
	big.NewInt(n.ChainID).FillBytes(chain[:])
	name, version := keccak([]byte(n.AssetName)), keccak([]byte(n.AssetVersion))
	domain := keccak(domainTypeHash[:], name[:], version[:], chain[:], pad(contract))
	message := keccak(transferTypeHash[:], pad(from), pad(to), words[0][:], words[1][:], words[2][:], nonce[:])
	return keccak([]byte{0x19, 0x01}, domain[:], message[:]), nil
}

// RecoverSigner is the EIP-55 address whose key made signature (65 bytes of
// hex, r‖s‖v, v 27/28 or 0/1) over the authorization in n's domain. It
// refuses a high s, as the USDC contract's ECRecover does.
func RecoverSigner(n NetworkInfo, a Authorization, signature string) (string, error) {
	digest, err := TypedDataHash(n, a)
	if err != nil {
		return "", err
	}
	return recoverDigest(digest, signature)
}

func recoverDigest(digest [32]byte, signature string) (string, error) {
	compact, err := compactSignature(signature)
	if err != nil {
		return "", err
	}
	pub, _, err := ecdsa.RecoverCompact(compact[:], digest[:])
	if err != nil {
		return "", fmt.Errorf("x402: signature does not recover: %w", err)
	}
	return AddressOf(pub), nil
}

// compactSignature reads a 65-byte r‖s‖v signature in hex as the compact
// form the recovery takes (v first, 27 or 28), refusing what the USDC
// contract's ECRecover refuses: another length, another v, a high s.
func compactSignature(signature string) ([65]byte, error) {
	var compact [65]byte
	sig, err := decodeHex(signature)
	if err != nil {
		return compact, fmt.Errorf("x402: %w: %w", errSignatureFormat, err)
	}
	if len(sig) != 65 {
		return compact, fmt.Errorf("x402: %w: %d bytes, not 65", errSignatureFormat, len(sig))
	}
	v := sig[64]
	if v >= 27 {
		v -= 27
	}
	if v > 1 {
		return compact, fmt.Errorf("x402: %w: v is %d, not 27 or 28", errSignatureFormat, sig[64])
	}
	var s secp256k1.ModNScalar
	if overflow := s.SetByteSlice(sig[32:64]); overflow || s.IsOverHalfOrder() {
		return compact, fmt.Errorf("x402: %w: s is in the upper half of the order (malleable)", errSignatureFormat)
	}
	compact[0] = 27 + v
	copy(compact[1:], sig[:64])
	return compact, nil
}

// AddressOf is the EIP-55 Ethereum address of a public key.
func AddressOf(pub *secp256k1.PublicKey) string {
	h := keccak(pub.SerializeUncompressed()[1:])
	var a [20]byte
	copy(a[:], h[12:])
	return checksum(a)
}

// SignAuthorization signs the authorization in n's domain as an Ethereum
// wallet does (RFC 6979, low s, v 27/28) and returns 0x-prefixed hex. It
// serves tests, the smoke test and the local facilitator.
func SignAuthorization(key *secp256k1.PrivateKey, n NetworkInfo, a Authorization) (string, error) {
	digest, err := TypedDataHash(n, a)
	if err != nil {
		return "", err
	}
	compact := ecdsa.SignCompact(key, digest[:], false)
	v := compact[0] - 27
	if v > 1 {
		// The random point's x overflowed the order: Ethereum's v cannot say
		// so (odds about 2^-128).
		return "", errors.New("x402: signature needs a recovery id Ethereum cannot carry")
	}
	sig := make([]byte, 65)
	copy(sig, compact[1:])
	sig[64] = 27 + v
	return "0x" + hex.EncodeToString(sig), nil
}

// clientValidAfterSkew is how far back the reference's clients date
// validAfter (now - 600 s), so that a payer's clock running ahead still pays.
const clientValidAfterSkew = 10 * time.Minute

// NewPayment is what an x402 client sends to pay req: an authorization from
// key's address to req.PayTo of exactly req.Amount, valid from now - 10 min
// to now + req.MaxTimeoutSeconds, with a 32-byte nonce read from random, as
// the reference's TypeScript client (createEIP3009Payload) makes it.
func NewPayment(key *secp256k1.PrivateKey, req PaymentRequirements, resource *ResourceInfo, now time.Time, random io.Reader) (PaymentPayload, error) {
	domain, ok := domainOf(req)
	if !ok {
		return PaymentPayload{}, fmt.Errorf("x402: cannot pay on %q: unknown network or no EIP-712 domain in extra", req.Network)
	}
	to, err := ChecksumAddress(req.PayTo)
	if err != nil {
		return PaymentPayload{}, fmt.Errorf("x402: payTo: %w", err)
	}
	var nonce [32]byte
	if _, err := io.ReadFull(random, nonce[:]); err != nil {
		return PaymentPayload{}, fmt.Errorf("x402: nonce: %w", err)
	}
	a := Authorization{
		From:        AddressOf(key.PubKey()),
		To:          to,
		Value:       req.Amount,
		ValidAfter:  strconv.FormatInt(now.Add(-clientValidAfterSkew).Unix(), 10),
		ValidBefore: strconv.FormatInt(now.Unix()+int64(req.MaxTimeoutSeconds), 10),
		Nonce:       "0x" + hex.EncodeToString(nonce[:]),
	}
	sig, err := SignAuthorization(key, domain, a)
	if err != nil {
		return PaymentPayload{}, err
	}
	return PaymentPayload{
		X402Version: Version,
		Resource:    resource,
		Accepted:    req,
		Payload:     ExactPayload{Signature: sig, Authorization: a},
	}, nil
}

// ChecksumAddress returns an Ethereum address (0x and 40 hex digits, any
// case) in its EIP-55 form.
func ChecksumAddress(s string) (string, error) {
	a, err := parseAddress(s)
	if err != nil {
		return "", err
	}
	return checksum(a), nil
}

// SameAddress reports whether two strings are the same valid address,
// whatever their case.
func SameAddress(a, b string) bool {
	x, err1 := parseAddress(a)
	y, err2 := parseAddress(b)
	return err1 == nil && err2 == nil && x == y
}

func checksum(a [20]byte) string {
	lower := hex.EncodeToString(a[:])
	h := keccak([]byte(lower))
	out := []byte("0x" + lower)
	for i := 0; i < 40; i++ {
		nibble := h[i/2] >> 4
		if i%2 == 1 {
			nibble = h[i/2] & 0x0f
		}
		if c := out[2+i]; c >= 'a' && nibble >= 8 {
			out[2+i] = c - 'a' + 'A'
		}
	}
	return string(out)
}

func parseAddress(s string) ([20]byte, error) {
	var a [20]byte
	if len(s) != 42 || !has0x(s) {
		return a, fmt.Errorf("%q is not an address (0x and 40 hex digits)", clip(s))
	}
	if _, err := hex.Decode(a[:], []byte(s[2:])); err != nil {
		return a, fmt.Errorf("%q is not an address: %w", clip(s), err)
	}
	return a, nil
}

func parseNonce(s string) ([32]byte, error) {
	var n [32]byte
	if len(s) != 66 || !has0x(s) {
		return n, fmt.Errorf("%q is not 32 bytes of hex", clip(s))
	}
	if _, err := hex.Decode(n[:], []byte(s[2:])); err != nil {
		return n, fmt.Errorf("%q is not 32 bytes of hex: %w", clip(s), err)
	}
	return n, nil
}

// parseUint256 reads a decimal uint256, as Solidity and BigInt read it.
func parseUint256(s string) (*big.Int, error) {
	if s == "" || len(s) > 78 || strings.TrimLeft(s, "0123456789") != "" {
		return nil, fmt.Errorf("%q is not a decimal uint256", clip(s))
	}
	u, ok := new(big.Int).SetString(s, 10)
	if !ok || u.Cmp(maxUint256) > 0 {
		return nil, fmt.Errorf("%q is not a decimal uint256", clip(s))
	}
	return u, nil
}

func decodeHex(s string) ([]byte, error) {
	if !has0x(s) {
		return nil, errors.New("not 0x-prefixed hex")
	}
	return hex.DecodeString(s[2:])
}

func has0x(s string) bool { return len(s) >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') }

func pad(a [20]byte) []byte {
	var w [32]byte
	copy(w[12:], a[:])
	return w[:]
}

// clip keeps untrusted text short in error messages.
func clip(s string) string {
	if len(s) <= 80 {
		return s
	}
	return s[:80] + "…"
}
