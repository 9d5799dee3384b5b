package fakestripe

import (
	"fmt"
	"testing"
	"time"
)

func TestIdempotencyStoreIsBounded(t *testing.T) {
	t0 := time.Unix(1_763_700_000, 0)
	put := func(st *idempotencyStore, scope string, at time.Time) {
		if _, ok := st.get(scope, at); ok {
			t.Fatalf("put %s: already kept", scope)
		}
		st.put(&idempotentResult{scope: scope, at: at})
	}
	tests := []struct {
		name  string
		fill  func(st *idempotencyStore)
		scope string
		at    time.Time
		kept  bool
	}{
		{"a fresh key is kept", func(st *idempotencyStore) { put(st, "k", t0) }, "k", t0.Add(idempotencyTTL - time.Second), true},
		{"a key 24 h old is forgotten", func(st *idempotencyStore) { put(st, "k", t0) }, "k", t0.Add(idempotencyTTL), false},
		{"only the old keys are forgotten", func(st *idempotencyStore) {
			put(st, "old", t0)
			put(st, "new", t0.Add(time.Hour))
		}, "new", t0.Add(idempotencyTTL), true},
		{"the oldest key goes past the bound", func(st *idempotencyStore) {
			for i := range maxIdempotencyKeys + 1 {
				put(st, fmt.Sprint(i), t0)
			}
		}, "0", t0, false},
		{"the newer keys stay within the bound", func(st *idempotencyStore) {
			for i := range maxIdempotencyKeys + 1 {
				put(st, fmt.Sprint(i), t0)
			}
		}, "1", t0, true},
		{"a forgotten key can be kept again", func(st *idempotencyStore) {
			put(st, "k", t0)
			put(st, "k", t0.Add(idempotencyTTL))
		}, "k", t0.Add(idempotencyTTL), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := newIdempotencyStore()
			tt.fill(st)
			if _, ok := st.get(tt.scope, tt.at); ok != tt.kept {
				t.Errorf("get(%q) kept = %v, want %v", tt.scope, ok, tt.kept)
			}
			if len(st.order) != len(st.byScope) || len(st.order) > maxIdempotencyKeys {
				t.Errorf("%d in order, %d by scope; want equal and at most %d", len(st.order), len(st.byScope), maxIdempotencyKeys)
			}
		})
	}
}
