package fakefacilitator

import (
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"slices"
	"strings"

	"42sisters.ai/oracle/infra/fakes/fakecontrol"
	"42sisters.ai/oracle/shared/x402"
)

// SettleMode is how the fake answers a settlement that passes its checks.
type SettleMode string

// The settle modes.
const (
	// SettleOK settles and answers at once.
	SettleOK SettleMode = "ok"
	// SettleRefuse mines a transaction that reverts: 200 with success
	// false, invalid_exact_evm_transaction_failed and the transaction's
	// hash; nothing moves and the authorization stays unused.
	SettleRefuse SettleMode = "refuse"
	// SettleSlow settles at once and answers after SlowMS, as a facilitator
	// waiting for the receipt does; a client that gives up first has paid
	// all the same.
	SettleSlow SettleMode = "slow"
	// SettleLose settles and answers 502 without a body worth reading: the
	// money moved, the answer is lost.
	SettleLose SettleMode = "lose"
)

// Bounds of a Control set over HTTP.
const (
	maxSlowMS   = 10 * 60 * 1000
	maxBalances = 1000
)

// Control changes the fake; a field left out leaves that part as it is.
// The modes hold until changed; Reset comes first, then the other fields.
type Control struct {
	// Settle is the settle mode: "ok", "refuse", "slow" or "lose".
	Settle SettleMode `json:"settle,omitempty"`
	// SlowMS is how long a slow settlement's answer takes, in
	// milliseconds; the slow mode needs it above 0.
	SlowMS *int `json:"slow_ms,omitempty"`
	// Down answers 503 on /supported, /verify and /settle (never on the
	// test endpoints), as a facilitator that is down does.
	Down *bool `json:"down,omitempty"`
	// Balances sets addresses' balances, in atomic units (decimal strings).
	Balances map[string]string `json:"balances,omitempty"`
	// Faucet is the balance of an address not seen before, in atomic units.
	Faucet string `json:"faucet,omitempty"`
	// Answer changes what a settlement that succeeds answers, as a
	// facilitator answering for another payment would: its network, its
	// payer, and an amount (which the specification's answer does not
	// carry). The money moves as the payment says all the same; {} answers
	// truthfully again.
	Answer *SettleAnswer `json:"answer,omitempty"`
	// Reset returns the fake to New's state: settle ok, up, the default
	// faucet, no balances, no authorization used, truthful answers. The
	// calls are kept.
	Reset bool `json:"reset,omitempty"`
}

// SettleAnswer is what a successful settlement's answer says instead of
// the truth; an empty field leaves that part true.
type SettleAnswer struct {
	Network string `json:"network,omitempty"`
	Payer   string `json:"payer,omitempty"`
	Amount  string `json:"amount,omitempty"`
}

// shape changes a successful settlement's answer as a says.
func (a SettleAnswer) shape(r *settleResponse) {
	if a.Network != "" {
		r.Network = a.Network
	}
	if a.Payer != "" {
		r.Payer = a.Payer
	}
	r.Amount = a.Amount
}

func (a SettleAnswer) validate() error {
	for name, v := range map[string]string{"network": a.Network, "payer": a.Payer, "amount": a.Amount} {
		if len(v) > 100 {
			return fmt.Errorf("answer.%s is over 100 bytes", name)
		}
	}
	if _, ok := parseUint256(a.Amount); a.Amount != "" && !ok {
		return fmt.Errorf("answer.amount must be a decimal amount in atomic units, got %q", a.Amount)
	}
	return nil
}

// State is the fake's behaviour, as POST /_control answers it.
type State struct {
	Settle SettleMode    `json:"settle"`
	SlowMS int           `json:"slow_ms"`
	Down   bool          `json:"down"`
	Faucet string        `json:"faucet"`
	Answer *SettleAnswer `json:"answer,omitempty"`
}

// modes is the part of a Control that holds between requests.
type modes struct {
	Settle SettleMode
	SlowMS int
	Down   bool
	Answer SettleAnswer
}

// Apply changes the fake as c says, all of it or, when c is invalid,
// none of it, and returns the state it leaves.
func (s *Server) Apply(c Control) (State, error) {
	faucet, balances, err := c.amounts()
	if err != nil {
		return State{}, fmt.Errorf("apply control: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	next := s.control
	if c.Reset {
		next = modes{Settle: SettleOK}
	}
	if c.Settle != "" {
		next.Settle = c.Settle
	}
	if c.SlowMS != nil {
		next.SlowMS = *c.SlowMS
	}
	if c.Down != nil {
		next.Down = *c.Down
	}
	if c.Answer != nil {
		next.Answer = *c.Answer
	}
	if err := next.validate(); err != nil {
		return State{}, fmt.Errorf("apply control: %w", err)
	}
	s.control = next
	if c.Reset {
		s.ledger, s.used, s.faucet = map[string]*big.Int{}, map[nonceKey]bool{}, big.NewInt(DefaultFaucet)
	}
	if faucet != nil {
		s.faucet = faucet
	}
	for addr, b := range balances {
		s.ledger[addr] = b
	}
	return s.state(), nil
}

// state returns the fake's State. The caller holds s.mu.
func (s *Server) state() State {
	st := State{Settle: s.control.Settle, SlowMS: s.control.SlowMS, Down: s.control.Down, Faucet: s.faucet.String()}
	if a := s.control.Answer; a != (SettleAnswer{}) {
		st.Answer = &a
	}
	return st
}

func (m modes) validate() error {
	if !slices.Contains([]SettleMode{SettleOK, SettleRefuse, SettleSlow, SettleLose}, m.Settle) {
		return fmt.Errorf("settle must be ok, refuse, slow or lose, got %q", m.Settle)
	}
	if m.SlowMS < 0 || m.SlowMS > maxSlowMS {
		return fmt.Errorf("slow_ms must be between 0 and %d, got %d", maxSlowMS, m.SlowMS)
	}
	if m.Settle == SettleSlow && m.SlowMS == 0 {
		return errors.New("settle slow needs slow_ms above 0")
	}
	return m.Answer.validate()
}

// amounts reads c's faucet and balances (keyed by lower-case address).
func (c Control) amounts() (*big.Int, map[string]*big.Int, error) {
	var faucet *big.Int
	if c.Faucet != "" {
		f, ok := parseUint256(c.Faucet)
		if !ok {
			return nil, nil, fmt.Errorf("faucet must be a decimal amount in atomic units, got %q", c.Faucet)
		}
		faucet = f
	}
	if len(c.Balances) > maxBalances {
		return nil, nil, fmt.Errorf("balances may set at most %d addresses, got %d", maxBalances, len(c.Balances))
	}
	balances := make(map[string]*big.Int, len(c.Balances))
	for addr, v := range c.Balances {
		if _, err := x402.ChecksumAddress(addr); err != nil {
			return nil, nil, fmt.Errorf("balances: %w", err)
		}
		b, ok := parseUint256(v)
		if !ok {
			return nil, nil, fmt.Errorf("balances[%s] must be a decimal amount in atomic units, got %q", addr, v)
		}
		balances[strings.ToLower(addr)] = b
	}
	return faucet, balances, nil
}

// Balance returns addr's balance in atomic units, the faucet amount for
// an address not seen before (which it then is).
func (s *Server) Balance(addr string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.balance(addr).String()
}

// Balances returns the ledger: every address seen, lower case, and its
// balance in atomic units.
func (s *Server) Balances() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]string, len(s.ledger))
	for addr, b := range s.ledger {
		out[addr] = b.String()
	}
	return out
}

// handleControl serves POST /_control: a JSON Control, unknown fields
// refused. It answers with the State it leaves.
func (s *Server) handleControl(w http.ResponseWriter, r *http.Request) {
	c, err := fakecontrol.Decode[Control](http.MaxBytesReader(w, r.Body, maxBody))
	var st State
	if err == nil {
		st, err = s.Apply(c)
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid control: "+err.Error())
		return
	}
	s.log.Info("fakefacilitator: control applied", "state", st, "balances_set", len(c.Balances), "reset", c.Reset)
	s.writeJSON(w, http.StatusOK, st)
}

// handleBalances serves GET /_balances.
func (s *Server) handleBalances(w http.ResponseWriter, _ *http.Request) {
	s.writeJSON(w, http.StatusOK, s.Balances())
}
