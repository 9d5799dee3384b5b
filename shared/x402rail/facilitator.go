package x402rail

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"42sisters.ai/oracle/shared/secret"
	"42sisters.ai/oracle/shared/tracing"
	"42sisters.ai/oracle/shared/x402"
)

// Facilitator is the facilitator's client with its API key (none for a
// facilitator that needs none), read again when the facilitator refuses
// it: a key the operator rotates takes effect without a deploy.
type Facilitator struct {
	url  string
	http *http.Client
	key  *secret.Value

	mu     sync.Mutex
	keyFor string // the key the cached client was made with
	client *x402.Facilitator
}

// NewFacilitator is the client of the facilitator at url, through client
// (nil: one with x402's default timeout, 30 s), with key (nil or empty:
// none).
func NewFacilitator(url string, client *http.Client, key *secret.Value) *Facilitator {
	// Each call is a span of the agent's request's trace: /verify and
	// /settle are most of the time an agent waits for its answer.
	traced := &http.Client{Timeout: 30 * time.Second}
	if client != nil {
		c := *client
		traced = &c
	}
	traced.Transport = tracing.Transport("facilitator", traced.Transport)
	return &Facilitator{url: url, http: traced, key: key}
}

// Verify is x402.Facilitator.Verify with the current key.
func (k *Facilitator) Verify(ctx context.Context, p x402.PaymentPayload, r x402.PaymentRequirements) (x402.VerifyResponse, error) {
	return withKey(ctx, k, func(f *x402.Facilitator) (x402.VerifyResponse, error) { return f.Verify(ctx, p, r) })
}

// Settle is x402.Facilitator.Settle with the current key.
func (k *Facilitator) Settle(ctx context.Context, p x402.PaymentPayload, r x402.PaymentRequirements) (x402.SettleResponse, error) {
	return withKey(ctx, k, func(f *x402.Facilitator) (x402.SettleResponse, error) { return f.Settle(ctx, p, r) })
}

// Supported is x402.Facilitator.Supported with the current key.
func (k *Facilitator) Supported(ctx context.Context) (x402.SupportedResponse, error) {
	return withKey(ctx, k, func(f *x402.Facilitator) (x402.SupportedResponse, error) { return f.Supported(ctx) })
}

// withKey makes the call with the current key and, when the facilitator
// refuses it and the secret holds another, once more with that one. A
// refused credential never moved money, so the retry is safe for /settle.
func withKey[T any](ctx context.Context, k *Facilitator, call func(*x402.Facilitator) (T, error)) (T, error) {
	used := k.key.Get()
	f, err := k.facilitator(used)
	if err != nil {
		var zero T
		return zero, err
	}
	res, err := call(f)
	if !errors.Is(err, x402.ErrCredentialRefused) || k.key == nil {
		return res, err
	}
	fresh, ok := k.key.Renew(ctx, used)
	if !ok {
		return res, err
	}
	if f, err = k.facilitator(fresh); err != nil {
		var zero T
		return zero, err
	}
	return call(f)
}

// facilitator is the client for key, made once per key.
func (k *Facilitator) facilitator(key string) (*x402.Facilitator, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.client != nil && k.keyFor == key {
		return k.client, nil
	}
	f := &x402.Facilitator{URL: k.url, HTTP: k.http}
	if key != "" {
		a, err := Authorizer(key)
		if err != nil {
			return nil, err
		}
		f.Auth = a
	}
	k.client, k.keyFor = f, key
	return f, nil
}
