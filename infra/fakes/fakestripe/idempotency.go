package fakestripe

import (
	"errors"
	"time"
)

// Idempotency keys are kept as Stripe keeps them, for 24 hours, and at most
// maxIdempotencyKeys of them, the oldest forgotten first, so that a fake
// left running (stripe-go sends a fresh key with every POST) stays small.
// A key reused after it is forgotten makes a new request, as on Stripe once
// the original is pruned.
const (
	idempotencyTTL     = 24 * time.Hour
	maxIdempotencyKeys = 1000
)

// idempotentResult is a stored answer to a POST with an Idempotency-Key.
type idempotentResult struct {
	scope     string // the API key and the idempotency key
	request   string // method, path and parameters, to detect key reuse
	requestID string // the Request-Id of the call that made the answer
	status    int
	body      []byte
	at        time.Time
}

// idempotencyStore holds the answers, oldest first. The caller holds
// Server.mu.
type idempotencyStore struct {
	byScope map[string]*idempotentResult
	order   []*idempotentResult // insertion order, the same entries as byScope
}

func newIdempotencyStore() *idempotencyStore {
	return &idempotencyStore{byScope: make(map[string]*idempotentResult)}
}

// get returns the answer kept for scope, if it is not yet forgotten.
func (st *idempotencyStore) get(scope string, now time.Time) (*idempotentResult, bool) {
	st.prune(now)
	res, ok := st.byScope[scope]
	return res, ok
}

// put keeps res, whose scope get has just missed.
func (st *idempotencyStore) put(res *idempotentResult) {
	st.byScope[res.scope] = res
	st.order = append(st.order, res)
	for len(st.order) > maxIdempotencyKeys {
		st.drop()
	}
}

// prune forgets the answers at least idempotencyTTL old.
func (st *idempotencyStore) prune(now time.Time) {
	for len(st.order) > 0 && now.Sub(st.order[0].at) >= idempotencyTTL {
		st.drop()
	}
}

// drop forgets the oldest answer.
func (st *idempotencyStore) drop() {
	delete(st.byScope, st.order[0].scope)
	st.order[0] = nil
	st.order = st.order[1:]
}

// executedError is an error an endpoint found while executing, after its
// parameters were valid: a charge already refunded, an unknown object.
// Stripe keeps such an answer for the idempotency key, as it keeps a
// success, while a refusal of the parameters themselves is not kept and
// may be retried with the same key.
type executedError struct{ err error }

func (e *executedError) Error() string { return e.err.Error() }
func (e *executedError) Unwrap() error { return e.err }

// executed marks err as found while the endpoint executed; nil stays nil.
func executed(err error) error {
	if err == nil {
		return nil
	}
	return &executedError{err}
}

// keptForKey reports whether an endpoint's answer with err is kept for the
// idempotency key: a success, or an error found while executing.
func keptForKey(err error) bool {
	var ex *executedError
	return err == nil || errors.As(err, &ex)
}
