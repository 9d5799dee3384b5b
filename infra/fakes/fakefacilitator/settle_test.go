package fakefacilitator_test

import (
	"context"
	"errors"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"42sisters.ai/oracle/shared/x402"
)

var txPattern = regexp.MustCompile(`^0x[0-9a-f]{64}$`)

// A payment signed as a client signs it verifies, settles once (the money
// moves from the payer to payTo), and a second settle of it is refused as
// the chain refuses a used authorization.
func TestAGoodPaymentSettlesOnce(t *testing.T) {
	for _, c := range []struct {
		name    string
		payment func(*testing.T) *payment
	}{
		{"Base Sepolia", func(t *testing.T) *payment { return newPayment().sign(t, key(t, 1)) }},
		{"Base", func(t *testing.T) *payment { return newPayment().onBase().sign(t, key(t, 1)) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			f.control(t, `{"balances":{"`+payTo+`":"0"}}`)
			p := c.payment(t)
			from := x402.AddressOf(key(t, 1).PubKey())
			network := p.requirements["network"].(string)
			body := p.body(t)

			if status, v := f.verify(t, body); status != http.StatusOK || !*v.IsValid || v.Payer != from || v.InvalidReason != "" {
				t.Fatalf("/verify: %d %+v, want valid, payer %s", status, v, from)
			}
			if got := f.fake.Balance(from); got != "10000000" {
				t.Errorf("after /verify the payer has %s, want the faucet's 10000000: verifying moves nothing", got)
			}
			status, s := f.settle(t, body)
			if status != http.StatusOK || !*s.Success || s.Payer != from || *s.Network != network || !txPattern.MatchString(*s.Transaction) || s.ErrorReason != "" {
				t.Fatalf("/settle: %d %+v, want success on %s with a transaction hash", status, s, network)
			}
			if got, want := f.fake.Balance(from), "9950000"; got != want {
				t.Errorf("payer's balance %s, want %s", got, want)
			}
			if got := f.fake.Balance(payTo); got != price {
				t.Errorf("payTo's balance %s, want %s", got, price)
			}

			status, again := f.settle(t, body)
			if status != http.StatusOK || *again.Success || again.ErrorReason != "invalid_exact_evm_nonce_already_used" || *again.Transaction != "" || again.Payer != from {
				t.Errorf("second /settle: %d %+v, want unsuccessful invalid_exact_evm_nonce_already_used", status, again)
			}
			if status, v := f.verify(t, body); status != http.StatusOK || *v.IsValid || v.InvalidReason != "invalid_exact_evm_nonce_already_used" {
				t.Errorf("/verify after settling: %d %+v, want invalid_exact_evm_nonce_already_used", status, v)
			}
			if got, want := f.fake.Balance(from), "9950000"; got != want {
				t.Errorf("payer's balance after the second settle %s, want %s", got, want)
			}

			calls := f.calls(t)
			if len(calls) != 4 || calls[1].Outcome != "settled" || calls[1].Transaction != *s.Transaction || calls[1].From != from ||
				calls[1].Nonce != nonce1 || calls[1].Status != http.StatusOK || calls[2].Outcome != "invalid_exact_evm_nonce_already_used" {
				t.Errorf("calls %+v", calls)
			}
		})
	}
}

// What the chain finds, and what a signature over other data recovers:
// each case is signed by the payer's key unless it says otherwise, and
// neither /verify nor /settle moves anything.
func TestPaymentsTheChainRefuses(t *testing.T) {
	cases := []struct {
		name, control, reason string
		payment               func(*testing.T) *payment
	}{
		{"signed by another key", "", "invalid_exact_evm_signature", func(t *testing.T) *payment {
			p := newPayment().sign(t, key(t, 2))
			p.auth["from"] = x402.AddressOf(key(t, 1).PubKey())
			return p
		}},
		{"value raised after signing", "", "invalid_exact_evm_signature", func(t *testing.T) *payment {
			p := newPayment().sign(t, key(t, 1))
			p.auth["value"], p.requirements["amount"] = "250000", "250000"
			return p
		}},
		{"validBefore moved after signing", "", "invalid_exact_evm_signature", func(t *testing.T) *payment {
			p := newPayment().sign(t, key(t, 1))
			p.auth["validBefore"] = unix(fixedNow.Add(time.Hour))
			return p
		}},
		{"nonce changed after signing", "", "invalid_exact_evm_signature", func(t *testing.T) *payment {
			p := newPayment().sign(t, key(t, 1))
			p.auth["nonce"] = "0x" + strings.Repeat("ab", 32)
			return p
		}},
		{"signed for Base, required on Base Sepolia", "", "invalid_exact_evm_signature", func(t *testing.T) *payment {
			p := newPayment().onBase().sign(t, key(t, 1))
			p.requirements = newPayment().requirements
			p.accepted = newPayment().accepted
			return p
		}},
		{"a malleable signature (high s)", "", "invalid_exact_evm_signature", func(t *testing.T) *payment {
			return highS(t, newPayment().sign(t, key(t, 1)))
		}},
		{"the requirement names Base's domain on Base Sepolia", "", "invalid_exact_evm_token_name_mismatch", func(t *testing.T) *payment {
			p := newPayment()
			p.requirements["extra"] = map[string]any{"name": "USD Coin", "version": "2"}
			p.accepted["extra"] = map[string]any{"name": "USD Coin", "version": "2"}
			return p.sign(t, key(t, 1))
		}},
		{"the client signed a wrong domain name", "", "invalid_exact_evm_signature", func(t *testing.T) *payment {
			p := newPayment()
			p.accepted["extra"] = map[string]any{"name": "USD Coin", "version": "2"}
			return p.sign(t, key(t, 1))
		}},
		{"domain version 1", "", "invalid_exact_evm_token_version_mismatch", func(t *testing.T) *payment {
			p := newPayment()
			p.requirements["extra"] = map[string]any{"name": "USDC", "version": "1"}
			p.accepted["extra"] = map[string]any{"name": "USDC", "version": "1"}
			return p.sign(t, key(t, 1))
		}},
		{"another token", "", "invalid_exact_evm_eip3009_not_supported", func(t *testing.T) *payment {
			p := newPayment()
			p.requirements["asset"], p.accepted["asset"] = baseUSDC, baseUSDC
			return p.sign(t, key(t, 1))
		}},
		{"a balance one short", `{"balances":{"` + x402.AddressOf(key(t, 1).PubKey()) + `":"49999"}}`, "invalid_exact_evm_insufficient_balance",
			func(t *testing.T) *payment { return newPayment().sign(t, key(t, 1)) }},
		{"an empty faucet", `{"faucet":"0"}`, "invalid_exact_evm_insufficient_balance",
			func(t *testing.T) *payment { return newPayment().sign(t, key(t, 1)) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			f.control(t, `{"balances":{"`+payTo+`":"0"}}`)
			if c.control != "" {
				f.control(t, c.control)
			}
			p := c.payment(t)
			body := p.body(t)
			before := f.balances(t)
			if status, v := f.verify(t, body); status != http.StatusOK || *v.IsValid || v.InvalidReason != c.reason {
				t.Errorf("/verify: %d %+v, want invalid %s", status, v, c.reason)
			}
			if status, s := f.settle(t, body); status != http.StatusOK || *s.Success || s.ErrorReason != c.reason || *s.Transaction != "" {
				t.Errorf("/settle: %d %+v, want unsuccessful %s without a transaction", status, s, c.reason)
			}
			from := p.auth["from"].(string)
			if got, want := f.fake.Balance(from), before[strings.ToLower(from)]; want != "" && got != want {
				t.Errorf("payer's balance %s, want %s", got, want)
			}
			if got := f.fake.Balance(payTo); got != "0" {
				t.Errorf("payTo's balance %s, want 0: nothing moved", got)
			}
		})
	}
}

// highS rewrites p's signature as (r, n - s, v flipped): the same key's
// signature of the same data, which ecrecover accepts and USDC refuses.
func highS(t *testing.T, p *payment) *payment {
	t.Helper()
	const order = "fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141"
	sig := p.signature[2:]
	n, s := mustBig(t, order), mustBig(t, sig[64:128])
	s.Sub(n, s)
	v := "1c"
	if sig[128:] == "1c" {
		v = "1b"
	}
	p.signature = "0x" + sig[:64] + leftPad(s.Text(16), 64) + v
	return p
}

// Each authorization settles once per token and signer: the same nonce
// from another signer, or on another token, is another authorization.
func TestANonceIsOncePerTokenAndSigner(t *testing.T) {
	f := newFixture(t)
	steps := []struct {
		name    string
		payment *payment
		reason  string
	}{
		{"first", newPayment().sign(t, key(t, 1)), ""},
		{"another signer", newPayment().sign(t, key(t, 2)), ""},
		{"on Base", newPayment().onBase().sign(t, key(t, 1)), ""},
		{"signed again with another window", func() *payment {
			p := newPayment()
			p.auth["validBefore"] = unix(fixedNow.Add(2 * time.Minute))
			return p.sign(t, key(t, 1))
		}(), "invalid_exact_evm_nonce_already_used"},
		{"the nonce in upper case", func() *payment {
			p := newPayment()
			p.auth["nonce"] = "0x" + strings.ToUpper(nonce1[2:])
			return p.sign(t, key(t, 2))
		}(), "invalid_exact_evm_nonce_already_used"},
	}
	for _, s := range steps {
		_, got := f.settle(t, s.payment.body(t))
		if s.reason == "" && !*got.Success || s.reason != "" && got.ErrorReason != s.reason {
			t.Errorf("%s: %+v, want reason %q", s.name, got, s.reason)
		}
	}
}

// Many settles of one authorization at once: one succeeds, the rest are
// refused, and the money moves once.
func TestConcurrentSettlesOfOneAuthorization(t *testing.T) {
	f := newFixture(t)
	f.control(t, `{"balances":{"`+payTo+`":"0"}}`)
	body := newPayment().sign(t, key(t, 1)).body(t)
	results := make([]settleAnswer, 16)
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() {
			resp, b := f.do(t, http.MethodPost, "/settle", body)
			if resp.StatusCode != http.StatusOK {
				t.Errorf("status %d: %s", resp.StatusCode, b)
			}
			results[i] = decodeSettle(t, b)
		})
	}
	wg.Wait()
	count := map[string]int{}
	for _, r := range results {
		if r.Success != nil && *r.Success {
			count["settled"]++
		} else {
			count[r.ErrorReason]++
		}
	}
	if count["settled"] != 1 || count["invalid_exact_evm_nonce_already_used"] != len(results)-1 {
		t.Errorf("outcomes %v, want 1 settled and %d invalid_exact_evm_nonce_already_used", count, len(results)-1)
	}
	if got := f.fake.Balance(payTo); got != price {
		t.Errorf("payTo received %s, want %s once", got, price)
	}
}

// The chain's clock decides: a payment valid when verified is refused
// once its window has passed, and one not yet valid settles once it opens.
func TestTheWindowIsReadFromTheClock(t *testing.T) {
	f := newFixture(t)
	p := newPayment()
	p.auth["validAfter"] = unix(fixedNow.Add(30 * time.Second))
	p.auth["validBefore"] = unix(fixedNow.Add(90 * time.Second))
	body := p.sign(t, key(t, 1)).body(t)
	steps := []struct {
		at     time.Duration
		reason string // "" settles
	}{
		{29 * time.Second, "invalid_exact_evm_payload_authorization_valid_after"},
		{85 * time.Second, "invalid_exact_evm_payload_authorization_valid_before"},
		{84 * time.Second, ""},
	}
	for _, s := range steps {
		f.setNow(fixedNow.Add(s.at))
		_, got := f.settle(t, body)
		if s.reason == "" && !*got.Success || s.reason != "" && got.ErrorReason != s.reason {
			t.Errorf("at +%v: %+v, want reason %q", s.at, got, s.reason)
		}
	}
}

func TestSettleRefusedMovesNothing(t *testing.T) {
	f := newFixture(t)
	f.control(t, `{"settle":"refuse","balances":{"`+payTo+`":"0"}}`)
	body := newPayment().sign(t, key(t, 1)).body(t)
	status, s := f.settle(t, body)
	if status != http.StatusOK || *s.Success || s.ErrorReason != "invalid_exact_evm_transaction_failed" || !txPattern.MatchString(*s.Transaction) {
		t.Fatalf("refused: %d %+v, want unsuccessful invalid_exact_evm_transaction_failed with the reverted transaction", status, s)
	}
	if got := f.fake.Balance(payTo); got != "0" {
		t.Errorf("payTo has %s after a refused settle, want 0", got)
	}
	// The authorization was not used: settled ok, it goes through.
	f.control(t, `{"settle":"ok"}`)
	if _, s := f.settle(t, body); !*s.Success {
		t.Errorf("after refuse, settle ok: %+v, want success", s)
	}
}

// A lost answer: the money moved, the client saw a 502 it cannot read;
// sending the same payment again is answered as the chain answers a used
// authorization.
func TestSettleLostMovesTheMoney(t *testing.T) {
	f := newFixture(t)
	f.control(t, `{"settle":"lose","balances":{"`+payTo+`":"0"}}`)
	body := newPayment().sign(t, key(t, 1)).body(t)
	resp, b := f.do(t, http.MethodPost, "/settle", body)
	if resp.StatusCode != http.StatusBadGateway || strings.Contains(string(b), "success") {
		t.Fatalf("lost: %d %s, want 502 without a settle response", resp.StatusCode, b)
	}
	if got := f.fake.Balance(payTo); got != price {
		t.Errorf("payTo has %s after a lost answer, want %s", got, price)
	}
	calls := f.calls(t)
	if len(calls) != 1 || calls[0].Outcome != "settled" || calls[0].Status != http.StatusBadGateway || !txPattern.MatchString(calls[0].Transaction) {
		t.Errorf("calls %+v, want one settled, answered 502", calls)
	}
	_, again := f.settle(t, body)
	if *again.Success || again.ErrorReason != "invalid_exact_evm_nonce_already_used" {
		t.Errorf("the retry: %+v, want invalid_exact_evm_nonce_already_used", again)
	}
	if got := f.fake.Balance(payTo); got != price {
		t.Errorf("payTo has %s after the retry, want %s", got, price)
	}
}

// A slow settlement moves the money first and answers after slow_ms, through
// the Sleep hook: the test holds the answer, looks at the ledger, and
// either lets it go or gives up as a client with a timeout does.
func TestSettleSlow(t *testing.T) {
	for _, giveUp := range []bool{false, true} {
		name := map[bool]string{false: "answered late", true: "the client gives up"}[giveUp]
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			f.control(t, `{"settle":"slow","slow_ms":45000,"balances":{"`+payTo+`":"0"}}`)
			entered, release := make(chan struct{}), make(chan struct{})
			f.hold = func(ctx context.Context) error {
				close(entered)
				select {
				case <-release:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			body := newPayment().sign(t, key(t, 1)).body(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan settleAnswer, 1)
			go func() {
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, f.url+"/settle", strings.NewReader(body))
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					if !errors.Is(err, context.Canceled) {
						t.Errorf("settle: %v", err)
					}
					done <- settleAnswer{}
					return
				}
				defer resp.Body.Close()
				done <- decodeSettleBody(t, resp)
			}()
			<-entered
			if got := f.fake.Balance(payTo); got != price {
				t.Errorf("during the wait payTo has %s, want %s: the money moves first", got, price)
			}
			// A second settle meanwhile, as a client that timed out
			// retrying: the first has used the authorization.
			if _, again := f.settle(t, body); *again.Success || again.ErrorReason != "invalid_exact_evm_nonce_already_used" {
				t.Errorf("settled again during the wait: %+v, want invalid_exact_evm_nonce_already_used", again)
			}
			if giveUp {
				cancel()
			} else {
				close(release)
			}
			got := <-done
			if !giveUp && (got.Success == nil || !*got.Success) {
				t.Errorf("answer %+v, want success", got)
			}
			f.mu.Lock()
			slept := f.slept
			f.mu.Unlock()
			if len(slept) != 1 || slept[0] != 45*time.Second {
				t.Errorf("slept %v, want [45s]", slept)
			}
			// Close waits for the handler to end, the call's record with it.
			f.srv.Close()
			calls := f.fake.Calls()
			if want := map[bool]int{false: 200, true: 0}[giveUp]; len(calls) != 2 || calls[0].Outcome != "settled" || calls[0].Status != want {
				t.Errorf("calls %+v, want the first settled, status %d, and the second refused", calls, want)
			}
		})
	}
}
