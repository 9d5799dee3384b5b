package fakefacilitator_test

import (
	"net/http"
	"reflect"
	"strings"
	"testing"

	"42sisters.ai/oracle/infra/fakes/fakefacilitator"
)

func TestControlIsValidatedWhole(t *testing.T) {
	f := newFixture(t)
	f.control(t, `{"balances":{"`+payer+`":"5"}}`)
	cases := []string{
		`{"settle":"later"}`,
		`{"settle":"slow"}`,
		`{"settle":"slow","slow_ms":0}`,
		`{"slow_ms":-1}`,
		`{"slow_ms":600001}`,
		`{"down":"yes"}`,
		`{"faucet":"-1"}`,
		`{"faucet":"1.5"}`,
		`{"balances":{"0x12":"5"}}`,
		`{"balances":{"` + payTo + `":"five"}}`,
		// A valid part does not apply when another part is invalid.
		`{"down":true,"balances":{"` + payTo + `":"7"},"settle":"never"}`,
		`{"reset":true,"faucet":"x"}`,
		`{"answer":{"amount":"seven"}}`,
		`{"answer":"eip155:1"}`,
		`{"sttle":"ok"}`,
		`{"down":true} {"down":false}`,
		`[]`,
	}
	for _, body := range cases {
		t.Run(body, func(t *testing.T) {
			if resp, b := f.do(t, http.MethodPost, "/_control", body); resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), `"error"`) {
				t.Errorf("%d %s, want 400 with an error", resp.StatusCode, b)
			}
		})
	}
	if st := f.control(t, `{}`); !reflect.DeepEqual(st, fakefacilitator.State{Settle: "ok", Faucet: "10000000"}) {
		t.Errorf("state %+v after invalid controls, want New's", st)
	}
	if b := f.balances(t); len(b) != 1 || b[strings.ToLower(payer)] != "5" {
		t.Errorf("ledger %v after invalid controls, want only the payer's 5", b)
	}
}

// A Control changes what it names and leaves the rest; reset returns to
// New's state.
func TestControlChangesWhatItNames(t *testing.T) {
	f := newFixture(t)
	steps := []struct {
		body string
		want fakefacilitator.State
	}{
		{`{}`, fakefacilitator.State{Settle: "ok", Faucet: "10000000"}},
		{`{"settle":"slow","slow_ms":2500}`, fakefacilitator.State{Settle: "slow", SlowMS: 2500, Faucet: "10000000"}},
		{`{"down":true}`, fakefacilitator.State{Settle: "slow", SlowMS: 2500, Down: true, Faucet: "10000000"}},
		{`{"faucet":"0"}`, fakefacilitator.State{Settle: "slow", SlowMS: 2500, Down: true, Faucet: "0"}},
		{`{"settle":"lose","down":false}`, fakefacilitator.State{Settle: "lose", SlowMS: 2500, Faucet: "0"}},
		{`{"answer":{"network":"eip155:1","amount":"7"}}`, fakefacilitator.State{Settle: "lose", SlowMS: 2500, Faucet: "0",
			Answer: &fakefacilitator.SettleAnswer{Network: "eip155:1", Amount: "7"}}},
		{`{"answer":{}}`, fakefacilitator.State{Settle: "lose", SlowMS: 2500, Faucet: "0"}},
		{`{"answer":{"payer":"0x1111111111111111111111111111111111111111"}}`, fakefacilitator.State{Settle: "lose", SlowMS: 2500, Faucet: "0",
			Answer: &fakefacilitator.SettleAnswer{Payer: "0x1111111111111111111111111111111111111111"}}},
		{`{"reset":true,"settle":"refuse"}`, fakefacilitator.State{Settle: "refuse", Faucet: "10000000"}},
		{`{"reset":true}`, fakefacilitator.State{Settle: "ok", Faucet: "10000000"}},
	}
	for _, s := range steps {
		if got := f.control(t, s.body); !reflect.DeepEqual(got, s.want) {
			t.Errorf("%s: state %+v, want %+v", s.body, got, s.want)
		}
	}
}

func TestBalancesAndFaucet(t *testing.T) {
	f := newFixture(t)
	upper := "0xABCDEF0123456789ABCDEF0123456789ABCDEF01"
	f.control(t, `{"balances":{"`+upper+`":"123","`+payTo+`":"0"}}`)
	if got := f.fake.Balance(strings.ToLower(upper)); got != "123" {
		t.Errorf("balance of an address set in another case: %s, want 123", got)
	}
	if got := f.fake.Balance(payer); got != "10000000" {
		t.Errorf("a new address: %s, want the default faucet's 10 USDC", got)
	}
	f.control(t, `{"faucet":"42"}`)
	other := "0x1111111111111111111111111111111111111111"
	if got := f.fake.Balance(other); got != "42" {
		t.Errorf("a new address after the faucet changed: %s, want 42", got)
	}
	if got := f.fake.Balance(payer); got != "10000000" {
		t.Errorf("an address seen before the faucet changed: %s, want its 10 USDC", got)
	}
	want := map[string]string{strings.ToLower(upper): "123", strings.ToLower(payTo): "0", strings.ToLower(payer): "10000000", other: "42"}
	got := f.balances(t)
	if len(got) != len(want) {
		t.Errorf("ledger %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("ledger[%s] = %q, want %q", k, got[k], v)
		}
	}
	f.control(t, `{"reset":true}`)
	if got := f.balances(t); len(got) != 0 {
		t.Errorf("ledger %v after reset, want empty", got)
	}
}
