// Package fakefacilitator is a fake x402 facilitator for the exact EVM
// scheme (EIP-3009 transferWithAuthorization of USDC) on Base and Base
// Sepolia, with a chain of its own: a ledger of balances, each
// authorization's nonce usable once, and validity windows read from an
// injected clock. It checks signatures for real (EIP-712 recovery through
// shared/x402), so a payment the fake settles is one the real facilitator
// would take, and it fails on demand the ways a facilitator and a chain fail.
//
// It speaks the facilitator API of x402 version 2 as the reference
// implementation (github.com/coinbase/x402) does, so the service's real
// client runs against it unchanged:
//
//	GET  /supported   the exact scheme, version 2, on eip155:8453 and eip155:84532
//	POST /verify      {x402Version, paymentPayload, paymentRequirements} → {isValid, invalidReason?, payer?}
//	POST /settle      the same body → {success, errorReason?, payer?, transaction, network}
//
// A payment the rules refuse is answered 200 with isValid (or success)
// false and the reference's reason code; a body that cannot be read, a
// version other than 2, or a scheme or network the fake does not support is
// a 400 of the same shape with the specification's code. Verification
// follows the reference's Go facilitator in order (scheme, network, payload,
// recipient, value, validBefore at least 6 s ahead, validAfter not ahead,
// EIP-712 domain, signature), then what its simulation on chain would find
// (the asset is the network's USDC with that domain, the nonce unused, the
// balance enough). A settle verifies again, then moves the money and marks
// the nonce used in one step, so of two settles of one authorization exactly
// one succeeds and the other is refused invalid_exact_evm_nonce_already_used,
// as the chain refuses it. Signatures longer than 65 bytes (smart wallets)
// are refused invalid_exact_evm_payload_undeployed_smart_wallet: the fake
// chain has no contracts. No API key is asked for, as on the public testnet
// facilitator.
//
// A settle that passes is then shaped by the settle mode (see Control): ok
// answers at once; refuse mines a transaction that reverts (success false,
// invalid_exact_evm_transaction_failed, nothing moved); slow moves the money
// at once and answers after slow_ms, through Options.Sleep; lose moves the
// money and answers 502. Down answers 503 on the three API routes. For
// example:
//
//	curl localhost:PORT/_control -d '{"settle":"lose"}'
//	curl localhost:PORT/_control -d '{"settle":"slow","slow_ms":40000}'
//	curl localhost:PORT/_control -d '{"down":true}'
//	curl localhost:PORT/_control -d '{"faucet":"0","balances":{"0x…":"50000"}}'
//	curl localhost:PORT/_control -d '{"answer":{"network":"eip155:8453"}}'
//	curl localhost:PORT/_control -d '{"reset":true}'
//
// The ledger is one test USDC for both networks, addresses compared without
// case. An address the fake has not seen starts with the faucet amount (10
// USDC unless set), as if it had used a testnet faucet.
//
// Test endpoints, which answer even when the fake is down:
//
//	POST   /_control    shape the answers and the ledger (see Control); answers the state
//	GET    /_balances   the ledger: {"0x…": "atomic units"} for every address seen
//	GET    /_calls      the API requests received (see Call)
//	DELETE /_calls      forget them
package fakefacilitator

import (
	"42sisters.ai/oracle/shared/wait"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/big"
	"net/http"
	"sync"
	"time"
)

// Options configures a Server. The zero value serves a working fake.
type Options struct {
	// Clock is the chain's time, for validity windows and the calls'
	// timestamps; nil means time.Now.
	Clock func() time.Time
	// Sleep waits for d, or until ctx ends and then returns ctx.Err(). It
	// delays a slow settlement's answer (Control.SlowMS); nil means a real
	// timer. A test can record the delay, or block until told, and return.
	Sleep func(ctx context.Context, d time.Duration) error
	// Logger receives request logs; nil discards them.
	Logger *slog.Logger
}

// Server is the fake. It implements http.Handler and is safe for concurrent use.
type Server struct {
	now   func() time.Time
	sleep func(context.Context, time.Duration) error
	log   *slog.Logger
	mux   *http.ServeMux

	mu       sync.Mutex
	calls    []*Call
	control  modes
	ledger   map[string]*big.Int // lower-case address → balance in atomic units
	faucet   *big.Int
	used     map[nonceKey]bool
	sequence uint64 // settlements attempted, for transaction hashes
}

// New returns a fake facilitator configured by opts.
func New(opts Options) *Server {
	s := &Server{
		now:     opts.Clock,
		sleep:   opts.Sleep,
		log:     opts.Logger,
		mux:     http.NewServeMux(),
		control: modes{Settle: SettleOK},
		ledger:  map[string]*big.Int{},
		faucet:  big.NewInt(DefaultFaucet),
		used:    map[nonceKey]bool{},
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.sleep == nil {
		s.sleep = wait.Sleep
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.mux.HandleFunc("GET /supported", s.handleSupported)
	s.mux.HandleFunc("POST /verify", s.handleVerify)
	s.mux.HandleFunc("POST /settle", s.handleSettle)
	s.mux.HandleFunc("POST /_control", s.handleControl)
	s.mux.HandleFunc("GET /_balances", s.handleBalances)
	s.mux.HandleFunc("GET /_calls", s.handleCalls)
	s.mux.HandleFunc("DELETE /_calls", s.handleClearCalls)
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no route %s %s", r.Method, r.URL.Path))
	})
	return s
}

// ServeHTTP serves the fake's API and test endpoints.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mux.ServeHTTP(w, r)
}

// writeJSON marshals v and writes it with status.
func (s *Server) writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		s.log.Error("fakefacilitator: encode response", "err", fmt.Errorf("marshal %T: %w", v, err))
		writeError(w, http.StatusInternalServerError, "the fake facilitator could not encode its answer")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	// A write error means the client went away; there is no one to tell.
	_, _ = w.Write(b)
}

// writeError answers {"error": msg}, as the reference's example
// facilitators answer what they cannot serve.
func writeError(w http.ResponseWriter, status int, msg string) {
	b, _ := json.Marshal(map[string]string{"error": msg})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
