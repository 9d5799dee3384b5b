package fakefacilitator_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"

	"42sisters.ai/oracle/infra/fakes/fakefacilitator"
	"42sisters.ai/oracle/shared/x402"
)

const (
	sepolia     = "eip155:84532"
	base        = "eip155:8453"
	sepoliaUSDC = "0x036CbD53842c5426634e7929541eC2318f3dCF7e"
	baseUSDC    = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"
	payTo       = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C"
	payer       = "0x857b06519E91e3A54538791bDbb0E22373e36b66"
	nonce1      = "0xf3746613c2d920b5fdabc0856f2aeb2d4f88ee6037b8cc5d04a71a4462f13480"
	price       = "50000"
)

var fixedNow = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

type fixture struct {
	fake *fakefacilitator.Server
	srv  *httptest.Server
	url  string

	mu    sync.Mutex
	now   time.Time
	slept []time.Duration
	// hold, when set, is called by the fake's Sleep instead of returning
	// at once: a test can stop a slow settlement in the middle.
	hold func(ctx context.Context) error
}

// newFixture serves a fake whose clock is fixed and whose sleeps are
// recorded instead of slept.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{now: fixedNow}
	f.fake = fakefacilitator.New(fakefacilitator.Options{
		Clock: func() time.Time {
			f.mu.Lock()
			defer f.mu.Unlock()
			return f.now
		},
		Sleep: func(ctx context.Context, d time.Duration) error {
			f.mu.Lock()
			f.slept = append(f.slept, d)
			hold := f.hold
			f.mu.Unlock()
			if hold != nil {
				return hold(ctx)
			}
			return nil
		},
	})
	f.srv = httptest.NewServer(f.fake)
	t.Cleanup(f.srv.Close)
	f.url = f.srv.URL
	return f
}

// setNow moves the fake's clock.
func (f *fixture) setNow(t time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = t
}

// do sends a request and returns the response with its body read.
func (f *fixture) do(t *testing.T, method, path, body string) (*http.Response, []byte) {
	t.Helper()
	return f.doContext(t, context.Background(), method, path, body)
}

func (f *fixture) doContext(t *testing.T, ctx context.Context, method, path, body string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, f.url+path, bytes.NewBufferString(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return resp, b
}

// control posts a Control and fails the test unless it is applied.
func (f *fixture) control(t *testing.T, body string) fakefacilitator.State {
	t.Helper()
	resp, b := f.do(t, http.MethodPost, "/_control", body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("control %s: status %d: %s", body, resp.StatusCode, b)
	}
	var st fakefacilitator.State
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatalf("control %s: %s: %v", body, b, err)
	}
	return st
}

// balances reads GET /_balances.
func (f *fixture) balances(t *testing.T) map[string]string {
	t.Helper()
	resp, b := f.do(t, http.MethodGet, "/_balances", "")
	var m map[string]string
	if err := json.Unmarshal(b, &m); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /_balances: %d %s %v", resp.StatusCode, b, err)
	}
	return m
}

// calls reads GET /_calls.
func (f *fixture) calls(t *testing.T) []fakefacilitator.Call {
	t.Helper()
	resp, b := f.do(t, http.MethodGet, "/_calls", "")
	var calls []fakefacilitator.Call
	if err := json.Unmarshal(b, &calls); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /_calls: %d %s %v", resp.StatusCode, b, err)
	}
	return calls
}

// payment is a /verify or /settle body, held as maps so a test can break
// any part of it.
type payment struct {
	requirements map[string]any
	accepted     map[string]any
	auth         map[string]any
	signature    string
	version      int
}

// newPayment is a quick-tier payment on Base Sepolia, valid but for its
// signature, a placeholder of 65 zero bytes: tests that need it to recover
// sign it.
func newPayment() *payment {
	req := func() map[string]any {
		return map[string]any{
			"scheme": "exact", "network": sepolia, "amount": price, "asset": sepoliaUSDC, "payTo": payTo,
			"maxTimeoutSeconds": 60, "extra": map[string]any{"name": "USDC", "version": "2"},
		}
	}
	return &payment{
		requirements: req(),
		accepted:     req(),
		auth: map[string]any{
			"from": payer, "to": payTo, "value": price,
			"validAfter":  unix(fixedNow.Add(-10 * time.Minute)),
			"validBefore": unix(fixedNow.Add(time.Minute)),
			"nonce":       nonce1,
		},
		signature: "0x" + strings.Repeat("00", 65),
		version:   2,
	}
}

// key returns a deterministic test key; its address is the payer of the
// payments it signs.
func key(t *testing.T, seed byte) *secp256k1.PrivateKey {
	t.Helper()
	return secp256k1.PrivKeyFromBytes(bytes.Repeat([]byte{seed}, 32))
}

// sign makes k the payer and signs the authorization as a client does:
// over the domain of the requirement it accepted.
func (p *payment) sign(t *testing.T, k *secp256k1.PrivateKey) *payment {
	t.Helper()
	p.auth["from"] = x402.AddressOf(k.PubKey())
	n, ok := x402.LookupNetwork(x402.Network(p.accepted["network"].(string)))
	if !ok {
		t.Fatalf("no network %v", p.accepted["network"])
	}
	extra := p.accepted["extra"].(map[string]any)
	n.Asset, n.AssetName, n.AssetVersion = p.accepted["asset"].(string), extra["name"].(string), extra["version"].(string)
	sig, err := x402.SignAuthorization(k, n, p.authorization())
	if err != nil {
		t.Fatal(err)
	}
	p.signature = sig
	return p
}

func (p *payment) authorization() x402.Authorization {
	s := func(k string) string { v, _ := p.auth[k].(string); return v }
	return x402.Authorization{From: s("from"), To: s("to"), Value: s("value"), ValidAfter: s("validAfter"), ValidBefore: s("validBefore"), Nonce: s("nonce")}
}

// onBase moves p to Base mainnet, both the requirement and what it accepted.
func (p *payment) onBase() *payment {
	for _, r := range []map[string]any{p.requirements, p.accepted} {
		r["network"], r["asset"], r["extra"] = base, baseUSDC, map[string]any{"name": "USD Coin", "version": "2"}
	}
	return p
}

func unix(t time.Time) string { return strconv.FormatInt(t.Unix(), 10) }

// body is the request body of p.
func (p *payment) body(t testing.TB) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{
		"x402Version": p.version,
		"paymentPayload": map[string]any{
			"x402Version": p.version,
			"resource":    map[string]any{"url": "http://localhost:3000/x402/query", "mimeType": "application/json"},
			"accepted":    p.accepted,
			"payload":     map[string]any{"signature": p.signature, "authorization": p.auth},
		},
		"paymentRequirements": p.requirements,
	})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

type verifyAnswer struct {
	IsValid       *bool  `json:"isValid"`
	InvalidReason string `json:"invalidReason"`
	Payer         string `json:"payer"`
}

type settleAnswer struct {
	Success     *bool   `json:"success"`
	ErrorReason string  `json:"errorReason"`
	Payer       string  `json:"payer"`
	Transaction *string `json:"transaction"`
	Network     *string `json:"network"`
}

// verify posts body to /verify and decodes the answer.
func (f *fixture) verify(t *testing.T, body string) (int, verifyAnswer) {
	t.Helper()
	resp, b := f.do(t, http.MethodPost, "/verify", body)
	var a verifyAnswer
	if err := json.Unmarshal(b, &a); err != nil || a.IsValid == nil {
		t.Fatalf("/verify: %d %s: not a verify response (%v)", resp.StatusCode, b, err)
	}
	return resp.StatusCode, a
}

// settle posts body to /settle and decodes the answer.
func (f *fixture) settle(t *testing.T, body string) (int, settleAnswer) {
	t.Helper()
	resp, b := f.do(t, http.MethodPost, "/settle", body)
	var a settleAnswer
	if err := json.Unmarshal(b, &a); err != nil || a.Success == nil || a.Transaction == nil || a.Network == nil {
		t.Fatalf("/settle: %d %s: not a settle response (%v)", resp.StatusCode, b, err)
	}
	return resp.StatusCode, a
}

func decodeSettle(t *testing.T, b []byte) settleAnswer {
	t.Helper()
	var a settleAnswer
	if err := json.Unmarshal(b, &a); err != nil || a.Success == nil || a.Transaction == nil || a.Network == nil {
		t.Errorf("not a settle response: %s (%v)", b, err)
	}
	return a
}

func decodeSettleBody(t *testing.T, resp *http.Response) settleAnswer {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Errorf("read: %v", err)
	}
	return decodeSettle(t, b)
}

func mustBig(t *testing.T, hexDigits string) *big.Int {
	t.Helper()
	n, ok := new(big.Int).SetString(hexDigits, 16)
	if !ok {
		t.Fatalf("not hex: %s", hexDigits)
	}
	return n
}

func leftPad(s string, n int) string {
	return strings.Repeat("0", n-len(s)) + s
}
