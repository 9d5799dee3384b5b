package stripex_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/stripex"
)

// TestARefundIsMadeOncePerSession: the same refund asked twice is one
// refund (the idempotency key); a payment already refunded says so.
func TestARefundIsMadeOncePerSession(t *testing.T) {
	ctx := context.Background()
	f := newFakeStripe(t)
	id := f.session(t, oracle.TierFull, f.now, paid)
	s, err := f.client.RetrieveSession(ctx, id)
	if err != nil || s.PaymentIntent == "" {
		t.Fatalf("session %+v: %v", s, err)
	}
	refunds := stripex.NewRefunds(testKey, stripex.Options{BaseURL: f.url})
	first, err := refunds.RefundSession(ctx, id, s.PaymentIntent)
	if err != nil || first.Amount != oracle.TierFull.PriceCents() || first.Status != "succeeded" || first.Replayed {
		t.Fatalf("refund: %+v %v", first, err)
	}
	again, err := refunds.RefundSession(ctx, id, s.PaymentIntent)
	if err != nil || again.ID != first.ID || !again.Replayed {
		t.Fatalf("the same refund again: %+v %v, want %s", again, err, first.ID)
	}
	// Past Stripe's 24 hours of idempotency keys, a second refund is refused.
	f.mu.Lock()
	f.now = f.now.Add(25 * time.Hour)
	f.mu.Unlock()
	if _, err := refunds.RefundSession(ctx, id, s.PaymentIntent); !errors.Is(err, stripex.ErrAlreadyRefunded) {
		t.Fatalf("a refund after the key expired: %v", err)
	}
	if _, err := refunds.RefundSession(ctx, "cs_test_another", "pi_nobody"); err == nil || !strings.Contains(err.Error(), "no such payment") {
		t.Fatalf("a refund of an unknown payment: %v", err)
	}
}
