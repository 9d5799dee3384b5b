package fakefacilitator_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"42sisters.ai/oracle/shared/x402"
)

// The service's facilitator client against the fake: each of the fake's
// answers reaches it as what it is, a payment, a refusal, or an answer
// lost.
func TestTheServicesClientReadsEveryAnswer(t *testing.T) {
	n, _ := x402.LookupNetwork(x402.NetworkBaseSepolia)
	req := x402.Requirement(n, 50000, payTo, 5*time.Minute)
	pay := func(t *testing.T, seed byte) x402.PaymentPayload {
		t.Helper()
		p, err := x402.NewPayment(key(t, 1), req, &x402.ResourceInfo{URL: "http://localhost:3000/x402/query"}, fixedNow, bytes.NewReader(bytes.Repeat([]byte{seed}, 32)))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		name, control string
		// paid: the settle succeeds; reason: it is refused so; lost: its
		// answer is lost. moved: the money moved in any case.
		paid   bool
		reason string
		lost   bool
		moved  bool
	}{
		{name: "settled", paid: true, moved: true},
		{name: "refused", control: `{"settle":"refuse"}`, reason: "invalid_exact_evm_transaction_failed"},
		{name: "lost", control: `{"settle":"lose"}`, lost: true, moved: true},
		{name: "down", control: `{"down":true}`, lost: true},
		{name: "poor", control: `{"balances":{"` + x402.AddressOf(key(t, 1).PubKey()) + `":"0"}}`, reason: "invalid_exact_evm_insufficient_balance"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			f.control(t, `{"balances":{"`+payTo+`":"0"}}`)
			client := &x402.Facilitator{URL: f.url}
			ctx := context.Background()
			if c.name != "down" {
				s, err := client.Supported(ctx)
				if err != nil || !s.Supports(2, x402.SchemeExact, x402.NetworkBaseSepolia) || !s.Supports(2, x402.SchemeExact, x402.NetworkBase) {
					t.Fatalf("Supported: %+v %v", s, err)
				}
			}
			p := pay(t, 7)
			if c.control != "" {
				f.control(t, c.control)
			}
			if _, err := client.Supported(ctx); c.name == "down" && !errors.Is(err, x402.ErrAnswerLost) {
				t.Errorf("Supported while down: %v, want ErrAnswerLost", err)
			}
			v, err := client.Verify(ctx, p, req)
			switch {
			case c.name == "down":
				if !errors.Is(err, x402.ErrAnswerLost) {
					t.Errorf("Verify while down: %+v %v, want ErrAnswerLost", v, err)
				}
			case c.reason == "invalid_exact_evm_insufficient_balance":
				if err != nil || v.IsValid || v.InvalidReason != c.reason {
					t.Errorf("Verify: %+v %v, want %s", v, err, c.reason)
				}
			default:
				if err != nil || !v.IsValid || !x402.SameAddress(v.Payer, p.Payload.Authorization.From) {
					t.Errorf("Verify: %+v %v, want valid", v, err)
				}
			}
			s, err := client.Settle(ctx, p, req)
			switch {
			case c.lost:
				if !errors.Is(err, x402.ErrAnswerLost) {
					t.Errorf("Settle: %+v %v, want ErrAnswerLost", s, err)
				}
			case c.paid:
				if err != nil || !s.Success || !txPattern.MatchString(s.Transaction) || s.Network != x402.NetworkBaseSepolia {
					t.Errorf("Settle: %+v %v, want success", s, err)
				}
			default:
				if err != nil || s.Success || s.ErrorReason != c.reason {
					t.Errorf("Settle: %+v %v, want refused %s", s, err, c.reason)
				}
			}
			want := "0"
			if c.moved {
				want = "50000"
			}
			if got := f.fake.Balance(payTo); got != want {
				t.Errorf("payTo has %s, want %s", got, want)
			}
			// Retried with the same payment, as after a lost answer: a
			// payment that moved cannot move again.
			f.control(t, `{"settle":"ok","down":false}`)
			s, err = client.Settle(ctx, p, req)
			if c.moved && (err != nil || s.Success || s.ErrorReason != x402.ReasonNonceAlreadyUsed) {
				t.Errorf("the retry: %+v %v, want refused %s", s, err, x402.ReasonNonceAlreadyUsed)
			}
		})
	}
}

// A client that gives up on a slow settlement has paid all the same.
func TestAClientTimingOutOnASlowSettlement(t *testing.T) {
	f := newFixture(t)
	f.control(t, `{"settle":"slow","slow_ms":60000,"balances":{"`+payTo+`":"0"}}`)
	ctx, cancel := context.WithCancel(context.Background())
	f.hold = func(hctx context.Context) error {
		cancel() // the client's deadline passes while the fake waits
		<-hctx.Done()
		return hctx.Err()
	}
	n, _ := x402.LookupNetwork(x402.NetworkBaseSepolia)
	req := x402.Requirement(n, 50000, payTo, 5*time.Minute)
	p, err := x402.NewPayment(key(t, 1), req, nil, fixedNow, bytes.NewReader(make([]byte, 32)))
	if err != nil {
		t.Fatal(err)
	}
	client := &x402.Facilitator{URL: f.url, HTTP: &http.Client{}}
	if s, err := client.Settle(ctx, p, req); !errors.Is(err, x402.ErrAnswerLost) {
		t.Errorf("Settle: %+v %v, want ErrAnswerLost", s, err)
	}
	f.srv.Close() // waits for the fake's handler to end
	if got := f.fake.Balance(payTo); got != "50000" {
		t.Errorf("payTo has %s, want 50000", got)
	}
}
