package fakefacilitator

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math/big"
	"strings"
)

const (
	version      = 2
	schemeExact  = "exact"
	signatureLen = 65

	// DefaultFaucet is the balance an address starts with, in USDC's
	// atomic units: 10 USDC, what Circle's testnet faucet gives.
	DefaultFaucet = 10_000_000

	// SignerAddress is the fake's own address, the one it would pay gas
	// from, listed by /supported as a facilitator lists its signers.
	SignerAddress = "0x0000000000000000000000000000000000fac402"
)

// network is a chain the fake serves and the USDC contract on it.
type network struct {
	chainID int64
	asset   string // lower case
	name    string // the contract's EIP-712 domain
	version string
}

// networks are the chains the fake serves, with USDC as deployed there.
var networks = map[string]network{
	"eip155:8453":  {chainID: 8453, asset: "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913", name: "USD Coin", version: "2"},
	"eip155:84532": {chainID: 84532, asset: "0x036cbd53842c5426634e7929541ec2318f3dcf7e", name: "USDC", version: "2"},
}

// nonceKey names an authorization as EIP-3009 does: per token contract,
// signer and nonce.
type nonceKey struct{ asset, from, nonce string }

// errNoRecovery stands in for shared/x402's recovery until it is merged.
var errNoRecovery = errors.New("signature recovery is not available")

// recoverSigner returns the address whose key signed a's
// TransferWithAuthorization under t's EIP-712 domain.
func recoverSigner(t *transfer, a *authorization, sig []byte) (string, error) {
	_, _, _ = t, a, sig
	return "", errNoRecovery
}

// onChain checks what transferWithAuthorization would find on the chain,
// in the order the reference's facilitator diagnoses a failed simulation:
// the contract, the nonce, the domain, the balance. The caller holds s.mu.
func (s *Server) onChain(t *transfer) *refusal {
	n := networks[t.network]
	switch {
	case t.asset != n.asset:
		return refuse(reasonNotEIP3009, t.from, "no EIP-3009 token at %s on %s", t.asset, t.network)
	case s.used[t.key()]:
		return refuse(reasonNonceUsed, t.from, "authorization %s of %s is used", t.nonce, t.from)
	case t.name != n.name:
		return refuse(reasonTokenName, t.from, "the token's EIP-712 name is %q, not %q", n.name, t.name)
	case t.version != n.version:
		return refuse(reasonTokenVersion, t.from, "the token's EIP-712 version is %q, not %q", n.version, t.version)
	case s.balance(t.from).Cmp(t.value) < 0:
		return refuse(reasonInsufficient, t.from, "balance %s is below %s", s.balance(t.from), t.value)
	}
	return nil
}

// balance returns addr's balance, giving an address not seen before the
// faucet amount. The caller holds s.mu.
func (s *Server) balance(addr string) *big.Int {
	k := strings.ToLower(addr)
	b, ok := s.ledger[k]
	if !ok {
		b = new(big.Int).Set(s.faucet)
		s.ledger[k] = b
	}
	return b
}

// transfer executes t: the nonce is used, the money moves. The caller holds
// s.mu and has checked t with onChain.
func (s *Server) transfer(t *transfer) {
	s.used[t.key()] = true
	from := s.balance(t.from)
	from.Sub(from, t.value)
	to := s.balance(t.to)
	to.Add(to, t.value)
}

// txHash returns a transaction hash for t never given before: 0x and 64
// hex digits. The caller holds s.mu.
func (s *Server) txHash(t *transfer) string {
	s.sequence++
	h := sha256.New()
	var seq [8]byte
	binary.BigEndian.PutUint64(seq[:], s.sequence)
	h.Write(seq[:])
	h.Write([]byte(t.network + "|" + t.asset + "|" + strings.ToLower(t.from) + "|" + t.nonce))
	return "0x" + hex.EncodeToString(h.Sum(nil))
}
