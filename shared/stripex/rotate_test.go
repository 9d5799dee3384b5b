package stripex_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/stripex"
)

// A key Stripe refuses (401: the operator rolled it) is read again from
// its secret in moto's Secrets Manager, at most once a minute, and the
// request is made once more with the new key; a key that did not change
// is refused as before. Every call the service makes goes through it.
func TestARolledKeyIsReadAgain(t *testing.T) {
	const oldKey, newKey = "sk_test_rolled_old_key", "sk_test_rolled_new_key"
	ops := []struct {
		name string
		call func(ctx context.Context, c *stripex.Client, r *stripex.Refunds, id, pi string) error
	}{
		{"CreateCheckoutSession", func(ctx context.Context, c *stripex.Client, _ *stripex.Refunds, _, _ string) error {
			_, err := c.CreateCheckoutSession(ctx, stripex.CheckoutRequest{Tier: oracle.TierQuick, Query: "Should I open a bakery?",
				SuccessURL: "https://42sisters.ai/oracle/result?session_id={CHECKOUT_SESSION_ID}", CancelURL: "https://42sisters.ai/"})
			return err
		}},
		{"RetrieveSession", func(ctx context.Context, c *stripex.Client, _ *stripex.Refunds, id, _ string) error {
			_, err := c.RetrieveSession(ctx, id)
			return err
		}},
		{"CompletedSessions", func(ctx context.Context, c *stripex.Client, _ *stripex.Refunds, _, _ string) error {
			n := 0
			err := c.CompletedSessions(ctx, time.Unix(0, 0), time.Now().Add(48*time.Hour), func(oracle.Session) error { n++; return nil })
			if err == nil && n != 1 {
				return errors.New("the listing did not give the paid session once")
			}
			return err
		}},
		{"Ping", func(ctx context.Context, c *stripex.Client, _ *stripex.Refunds, _, _ string) error {
			return c.Ping(ctx)
		}},
		{"RawSession", func(ctx context.Context, c *stripex.Client, _ *stripex.Refunds, id, _ string) error {
			_, err := c.RawSession(ctx, id)
			return err
		}},
		{"RefundSession", func(ctx context.Context, _ *stripex.Client, r *stripex.Refunds, id, pi string) error {
			_, err := r.RefundSession(ctx, id, pi)
			return err
		}},
	}
	for _, op := range ops {
		for _, rotated := range []bool{true, false} {
			name := op.name + "/rotated"
			if !rotated {
				name = op.name + "/not rotated"
			}
			t.Run(name, func(t *testing.T) {
				ctx := context.Background()
				f := newFakeStripe(t)
				id := f.session(t, oracle.TierQuick, f.now, paid)
				s, err := f.client.RetrieveSession(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				clock := testkit.NewClock(time.Now())
				key := testkit.RotatingSecret(t, "STRIPE_SECRET_KEY", oldKey, clock)
				c := stripex.NewWithKey(key.Value, stripex.Options{BaseURL: f.url})
				r := stripex.NewRefundsWithKey(key.Value, stripex.Options{BaseURL: f.url})
				f.fake.AcceptOnly(newKey)
				if rotated {
					key.Rotate(newKey)
				}
				clock.Add(time.Minute)
				before := len(f.fake.Calls())
				err = op.call(ctx, c, r, id, s.PaymentIntent)
				calls := f.fake.Calls()[before:]
				if !rotated {
					if !errors.Is(err, stripex.ErrAuth) || len(calls) != 1 {
						t.Fatalf("err = %v after %d calls, want ErrAuth after one", err, len(calls))
					}
					return
				}
				if err != nil {
					t.Fatalf("after the roll: %v", err)
				}
				if len(calls) != 2 || calls[0].Status != http.StatusUnauthorized || calls[1].Status != http.StatusOK {
					t.Fatalf("calls %+v, want a 401 and then a success", calls)
				}
			})
		}
	}
}
