package main

import (
	"context"
	"sync"
	"time"

	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/gemini"
)

// KeyHealth remembers that the model refused the API key (GEMINI_TIMEOUT
// GAP-02D). While it does, the generator reports itself unhealthy and parks
// jobs instead of failing orders one by one; the key is tried again every
// Recheck, and Check (gemini.Client.CheckKey) reads a refused key again from
// its secret, so a key the operator fixes resumes the work without a deploy.
type KeyHealth struct {
	// Check makes a cheap authenticated call (gemini.Client.CheckKey).
	Check   func(ctx context.Context) error
	Recheck time.Duration
	Alerts  Alerter
	Now     func() time.Time

	mu       sync.Mutex
	rejected bool
	next     time.Time // when to check a refused key again
}

// Verify checks the key, at cold start and on each recheck. A refusal is a
// CRITICAL alert; any other failure (the network, Google) says nothing about
// the key and leaves the generator healthy.
func (k *KeyHealth) Verify(ctx context.Context) bool {
	err := k.Check(ctx)
	if gemini.KindOf(err) != gemini.AuthFailure {
		k.mu.Lock()
		k.rejected = false
		k.mu.Unlock()
		return true
	}
	k.Reject(k.Now())
	k.Alerts.Raise(ctx, alert.Alert{Severity: alert.Critical, Kind: alert.GeminiAuthFailure,
		Detail: "the model refused the API key on a key check; the generator is unhealthy and parks orders until a working key is in its secret (read again within a minute of the next refusal, no deploy)"})
	return false
}

// Rejected reports whether the key is known refused and, if so, until when
// jobs should wait. When a recheck is due it checks the key first.
func (k *KeyHealth) Rejected(ctx context.Context) (time.Time, bool) {
	if k == nil {
		return time.Time{}, false
	}
	k.mu.Lock()
	rejected, next := k.rejected, k.next
	k.mu.Unlock()
	if !rejected {
		return time.Time{}, false
	}
	if !k.Now().Before(next) && k.Verify(ctx) {
		return time.Time{}, false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.next, k.rejected
}

// Reject records a refusal seen at now and returns when to try again.
func (k *KeyHealth) Reject(now time.Time) time.Time {
	if k == nil {
		return now.Add(time.Minute)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.rejected, k.next = true, now.Add(k.Recheck)
	return k.next
}
