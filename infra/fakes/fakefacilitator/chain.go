package fakefacilitator

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math/big"
	"strings"

	"42sisters.ai/oracle/shared/x402"
)

const (
	signatureLen = 65

	// DefaultFaucet is the balance an address starts with, in USDC's
	// atomic units: 10 USDC, what Circle's testnet faucet gives.
	DefaultFaucet = 10_000_000

	// SignerAddress is the fake's own address, the one it would pay gas
	// from, listed by /supported as a facilitator lists its signers.
	SignerAddress = "0x0000000000000000000000000000000000fac402"
)

// networks are the chains the fake serves, each with its USDC contract.
var networks = []x402.Network{x402.NetworkBase, x402.NetworkBaseSepolia}

// nonceKey names an authorization as EIP-3009 does: per token contract,
// signer and nonce.
type nonceKey struct{ asset, from, nonce string }

// onChain checks what transferWithAuthorization would find on the chain,
// in the order the reference's facilitator diagnoses a failed simulation:
// the contract, the nonce, the domain, the balance. The caller holds s.mu.
func (s *Server) onChain(t *transfer) *refusal {
	n, _ := x402.LookupNetwork(t.network)
	switch {
	case !strings.EqualFold(t.asset, n.Asset):
		return refuse(reasonNotEIP3009, t.from, "no EIP-3009 token at %s on %s", t.asset, t.network)
	case s.used[t.key()]:
		return refuse(reasonNonceUsed, t.from, "authorization %s of %s is used", t.nonce, t.from)
	case t.name != n.AssetName:
		return refuse(reasonTokenName, t.from, "the token's EIP-712 name is %q, not %q", n.AssetName, t.name)
	case t.version != n.AssetVersion:
		return refuse(reasonTokenVersion, t.from, "the token's EIP-712 version is %q, not %q", n.AssetVersion, t.version)
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
	h.Write([]byte(string(t.network) + "|" + t.asset + "|" + strings.ToLower(t.from) + "|" + t.nonce))
	return "0x" + hex.EncodeToString(h.Sum(nil))
}
