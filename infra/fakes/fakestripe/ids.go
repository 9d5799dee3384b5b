package fakestripe

import (
	"fmt"
	"io"
)

const alphanumerics = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// Id lengths after the prefix, as in real Stripe ids.
const (
	sessionIDLen = 58 // cs_test_ + 58
	objectIDLen  = 24 // evt_, pi_, re_, plink_ + 24
)

// newID returns prefix followed by n random alphanumerics read from s.rand.
// The caller holds s.mu.
func (s *Server) newID(prefix string, n int) (string, error) {
	id := make([]byte, 0, len(prefix)+n)
	id = append(id, prefix...)
	buf := make([]byte, n)
	for len(id) < cap(id) {
		if _, err := io.ReadFull(s.rand, buf); err != nil {
			return "", fmt.Errorf("read randomness for a %s id: %w", prefix, err)
		}
		for _, b := range buf {
			// Rejection sampling keeps every character equally likely:
			// 248 is the largest multiple of 62 that fits in a byte.
			if b < 248 && len(id) < cap(id) {
				id = append(id, alphanumerics[b%62])
			}
		}
	}
	return string(id), nil
}
