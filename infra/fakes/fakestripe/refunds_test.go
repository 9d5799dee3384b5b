package fakestripe_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stripe/stripe-go/v76"

	fakestripe "42sisters.ai/oracle/infra/fakes/fakestripe"
	"42sisters.ai/oracle/shared/oracle"
)

// paidIntent pays a session of tier and returns its payment intent id.
func (f *fixture) paidIntent(t *testing.T, tier oracle.Tier, form url.Values) string {
	t.Helper()
	cs := f.createSession(t, tier)
	form.Set("email", "ada@example.com")
	if resp, body := f.pay(t, cs.ID, form); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("pay: status %d: %s", resp.StatusCode, body)
	}
	got, _ := f.fake.Session(cs.ID)
	return got.PaymentIntent.ID
}

func TestRefunds(t *testing.T) {
	f := newFixture(t, fakestripe.Options{})
	pi := f.paidIntent(t, oracle.TierFull, url.Values{}) // 500 cents

	// Each step runs against the state the previous steps left.
	steps := []struct {
		name   string
		params *stripe.RefundParams
		amount int64 // refunded on success
		status int   // on failure
		code   stripe.ErrorCode
		param  string
	}{
		{name: "partial", params: &stripe.RefundParams{PaymentIntent: stripe.String(pi), Amount: stripe.Int64(200), Reason: stripe.String("requested_by_customer")}, amount: 200},
		{name: "over-refund", params: &stripe.RefundParams{PaymentIntent: stripe.String(pi), Amount: stripe.Int64(301)}, status: http.StatusBadRequest, code: stripe.ErrorCodeChargeAlreadyRefunded, param: "amount"},
		{name: "zero amount", params: &stripe.RefundParams{PaymentIntent: stripe.String(pi), Amount: stripe.Int64(0)}, status: http.StatusBadRequest, code: stripe.ErrorCodeParameterInvalidInteger, param: "amount"},
		{name: "bad reason", params: &stripe.RefundParams{PaymentIntent: stripe.String(pi), Reason: stripe.String("because")}, status: http.StatusBadRequest, param: "reason"},
		{name: "rest", params: &stripe.RefundParams{PaymentIntent: stripe.String(pi)}, amount: 300},
		{name: "already refunded", params: &stripe.RefundParams{PaymentIntent: stripe.String(pi), Amount: stripe.Int64(1)}, status: http.StatusBadRequest, code: stripe.ErrorCodeChargeAlreadyRefunded},
		{name: "unknown payment intent", params: &stripe.RefundParams{PaymentIntent: stripe.String("pi_unknown")}, status: http.StatusNotFound, code: stripe.ErrorCodeResourceMissing, param: "payment_intent"},
		{name: "no payment intent", params: &stripe.RefundParams{}, status: http.StatusBadRequest, code: stripe.ErrorCodeParameterMissing, param: "payment_intent"},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			st.params.AddMetadata("order", "o-1")
			re, err := f.sc.Refunds.New(st.params)
			if st.status != 0 {
				se := stripeError(t, err, st.status, st.code)
				if se.Param != st.param {
					t.Errorf("param = %q, want %q (%s)", se.Param, st.param, se.Msg)
				}
				return
			}
			if err != nil {
				t.Fatalf("refund: %v", err)
			}
			if re.Amount != st.amount || re.Currency != oracle.Currency || re.PaymentIntent.ID != pi || re.Status != stripe.RefundStatusSucceeded ||
				re.Object != "refund" || re.Metadata["order"] != "o-1" || re.Created != f.now.Unix() {
				t.Errorf("refund = %+v", re)
			}
			got, err := f.sc.Refunds.Get(re.ID, nil)
			if err != nil || got.ID != re.ID || got.Amount != st.amount || got.Reason != re.Reason {
				t.Errorf("retrieve refund: %+v, %v", got, err)
			}
		})
	}

	_, err := f.sc.Refunds.Get("re_unknown", nil)
	stripeError(t, err, http.StatusNotFound, stripe.ErrorCodeResourceMissing)
}

func TestRefundUnsettledPayment(t *testing.T) {
	f := newFixture(t, fakestripe.Options{})
	f.setControl(t, fakestripe.Control{FailAsync: true})
	pi := f.paidIntent(t, oracle.TierQuick, url.Values{})
	_, err := f.sc.Refunds.New(&stripe.RefundParams{PaymentIntent: stripe.String(pi)})
	stripeError(t, err, http.StatusBadRequest, stripe.ErrorCodeChargeNotRefundable)
}

func TestRefundIdempotency(t *testing.T) {
	f := newFixture(t, fakestripe.Options{})
	pi := f.paidIntent(t, oracle.TierStrategy, url.Values{})
	refund := func() *stripe.Refund {
		p := &stripe.RefundParams{PaymentIntent: stripe.String(pi), Amount: stripe.Int64(1000)}
		p.SetIdempotencyKey("refund-1")
		re, err := f.sc.Refunds.New(p)
		if err != nil {
			t.Fatalf("refund: %v", err)
		}
		return re
	}
	a, b := refund(), refund()
	if a.ID != b.ID {
		t.Errorf("same idempotency key: refunds %s and %s", a.ID, b.ID)
	}
	// Only one refund was made: 1500 of 2500 remains.
	re, err := f.sc.Refunds.New(&stripe.RefundParams{PaymentIntent: stripe.String(pi)})
	if err != nil || re.Amount != 1500 {
		t.Errorf("refund of the rest = %+v, %v; want 1500", re, err)
	}
}
