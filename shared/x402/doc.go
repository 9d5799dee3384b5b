// Package x402 is the x402 protocol, version 2, as Go values: the agent rail's
// payments in USDC over HTTP 402, as the reference implementation
// (github.com/coinbase/x402: specs/x402-specification-v2.md,
// specs/transports-v2/http.md, specs/schemes/exact/scheme_exact_evm.md)
// defines them.
//
// It holds the wire types with the reference's JSON names, the header codec
// (base64 of JSON, bounded by MaxHeaderBytes before anything is decoded), the
// closed network table (Base and Base Sepolia USDC with their EIP-712
// domains), the requirement builder, the EIP-712 TransferWithAuthorization
// hash with secp256k1 signature recovery and signing, the local check a
// payment passes before anything costs money, and the facilitator client.
//
// The cryptography needs only Keccak-256 (golang.org/x/crypto/sha3) and
// secp256k1 recovery (github.com/decred/dcrd/dcrec/secp256k1/v4), so the
// package stays small enough for a Lambda bootstrap; go-ethereum is not used.
//
// Signatures are those of externally owned accounts only: 65 bytes, r‖s‖v.
// Smart-wallet signatures (ERC-1271, or ERC-6492 for a wallet not yet
// deployed) are longer and can be checked only against the chain; they are
// refused locally with ReasonSignatureFormat rather than passed to the
// facilitator, because the local check is what lets the service claim an
// authorization before any call to the facilitator, and a signature it cannot
// check would let anyone claim any payer's (from, nonce).
package x402
