// Package audit writes the append-only audit log (SPEC_ORACLE_AUDIT_TRAIL):
// one S3 object per record, written only if absent, validated against the
// schema first, carrying keyed hashes instead of emails and queries.
package audit

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"

	"42sisters.ai/oracle/shared/config"
	"42sisters.ai/oracle/shared/mailaddr"
)

// HashPrefix marks a keyed hash; the schema check requires it on the email
// and query fields, so plaintext can never pass as a hash.
const HashPrefix = "hmac-sha256:"

// Hasher computes keyed hashes (HMAC-SHA-256 with a secret pepper): unlike a
// bare SHA-256, they cannot be reversed by hashing a list of common emails
// (SPEC_ORACLE_AUDIT_TRAIL GAP-02).
type Hasher struct{ pepper []byte }

// minPepper is the shortest pepper accepted: 128 bits.
const minPepper = 16

// NewHasher returns a hasher keyed with pepper.
func NewHasher(pepper string) (*Hasher, error) {
	if len(pepper) < minPepper {
		return nil, errors.New("hash pepper must be at least 16 bytes")
	}
	return &Hasher{pepper: []byte(pepper)}, nil
}

// HasherFrom reads the HASH_PEPPER secret from env, recording a missing or
// short pepper as env's problem (nil is returned then).
func HasherFrom(ctx context.Context, env *config.Env) *Hasher {
	pepper := env.Secret(ctx, "HASH_PEPPER", true)
	if pepper == "" {
		return nil // missing: already env's problem
	}
	h, err := NewHasher(pepper)
	if err != nil {
		env.Invalid("HASH_PEPPER", err)
	}
	return h
}

// Hash returns the keyed hash of s: the prefix and 32 hex digits (128 bits),
// or "" for an empty s.
func (h *Hasher) Hash(s string) string {
	if s == "" {
		return ""
	}
	m := hmac.New(sha256.New, h.pepper)
	m.Write([]byte(s))
	return HashPrefix + hex.EncodeToString(m.Sum(nil)[:16])
}

// Email hashes an address in its canonical form (mailaddr.Folded), so an
// operator can find a customer's orders from the address they write in
// with, and two mailboxes never share a hash.
func (h *Hasher) Email(addr string) string {
	return h.Hash(mailaddr.Folded(addr))
}
