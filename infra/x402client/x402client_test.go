package x402client_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"42sisters.ai/oracle/infra/x402client"
)

// The requirement the test server asks for: the quick tier's 0.05 USDC on
// Base Sepolia, written out by hand as the x402 v2 specification has it, so
// that this test depends on nothing of ours that it would check.
const (
	network    = "eip155:84532"
	usdc       = "0x036CbD53842c5426634e7929541eC2318f3dCF7e" // Base Sepolia USDC
	payTo      = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C"
	amount     = "50000"
	maxTimeout = 300
	tx         = "0x" + "ab12cd34ef56ab12cd34ef56ab12cd34ef56ab12cd34ef56ab12cd34ef56ab12"
)

// Hardhat's first well-known development key and its address.
const (
	knownKey     = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80"
	knownAddress = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"
)

var requirement = map[string]any{
	"scheme":            "exact",
	"network":           network,
	"amount":            amount,
	"asset":             usdc,
	"payTo":             payTo,
	"maxTimeoutSeconds": maxTimeout,
	"extra":             map[string]any{"name": "USDC", "version": "2"},
}

// onBase is the same price on Base mainnet, which a client picks when it is
// offered first, unless told which network to pay on.
var onBase = map[string]any{
	"scheme":            "exact",
	"network":           "eip155:8453",
	"amount":            amount,
	"asset":             "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
	"payTo":             payTo,
	"maxTimeoutSeconds": maxTimeout,
	"extra":             map[string]any{"name": "USD Coin", "version": "2"},
}

// payee is an x402 resource server at its simplest: 402 with PAYMENT-REQUIRED
// until a PAYMENT-SIGNATURE arrives, then 200 with PAYMENT-RESPONSE; a header
// it has seen before is refused with 402, as a replay, unless its payment
// carries a payment-identifier: then it is answered as the first time was,
// as the extension's idempotency asks.
type payee struct {
	accepts    []any          // default: requirement alone
	extensions map[string]any // the 402's extensions, if any
	// together holds every repeat of a signed header until this many
	// repeats are in, so that only repeats sent at once are answered.
	together int
	arrived  chan struct{} // closed when they are
	mu       sync.Mutex
	received []string
}

func (p *payee) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	sig := r.Header.Get("PAYMENT-SIGNATURE")
	if sig == "" {
		p.require(w, r, "PAYMENT-SIGNATURE header is required")
		return
	}
	p.mu.Lock()
	seen := slices.Contains(p.received, sig)
	p.received = append(p.received, sig)
	if p.together > 0 && len(p.received) == 1+p.together {
		close(p.arrived)
	}
	p.mu.Unlock()
	if seen && p.together > 0 {
		// Read whole, the request's context ends when its client goes.
		io.Copy(io.Discard, r.Body)
		select {
		case <-p.arrived:
		case <-r.Context().Done():
			return
		}
	}
	var payload struct {
		Payload struct {
			Authorization struct {
				From string `json:"from"`
			} `json:"authorization"`
		} `json:"payload"`
	}
	raw, err := base64.StdEncoding.DecodeString(sig)
	if err == nil {
		err = json.Unmarshal(raw, &payload)
	}
	if err != nil {
		p.require(w, r, "undecodable payment: "+err.Error())
		return
	}
	if seen && paymentID(sig) == "" {
		p.require(w, r, "authorization already used")
		return
	}
	w.Header().Set("PAYMENT-RESPONSE", encode(map[string]any{
		"success": true, "payer": payload.Payload.Authorization.From, "transaction": tx, "network": network,
	}))
	fmt.Fprint(w, `{"verdict":"yes"}`)
}

func (p *payee) require(w http.ResponseWriter, r *http.Request, why string) {
	required := map[string]any{
		"x402Version": 2,
		"error":       why,
		"resource":    map[string]any{"url": "http://" + r.Host + r.URL.Path, "description": "a quick verdict", "mimeType": "application/json"},
		"accepts":     p.accepts,
	}
	if p.accepts == nil {
		required["accepts"] = []any{requirement}
	}
	if p.extensions != nil {
		required["extensions"] = p.extensions
	}
	w.Header().Set("PAYMENT-REQUIRED", encode(required))
	w.WriteHeader(http.StatusPaymentRequired)
	json.NewEncoder(w).Encode(required)
}

func (p *payee) headers() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.received)
}

// paymentID is the payment-identifier id in a PAYMENT-SIGNATURE header's
// payload, or "".
func paymentID(header string) string {
	var p struct {
		Extensions struct {
			PaymentIdentifier struct {
				Info struct {
					ID string `json:"id"`
				} `json:"info"`
			} `json:"payment-identifier"`
		} `json:"extensions"`
	}
	raw, err := base64.StdEncoding.DecodeString(header)
	if err == nil {
		err = json.Unmarshal(raw, &p)
	}
	if err != nil {
		return ""
	}
	return p.Extensions.PaymentIdentifier.Info.ID
}

func encode(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return base64.StdEncoding.EncodeToString(b)
}

// payment is the PAYMENT-SIGNATURE header's content in x402 v2's exact EVM
// scheme, every field as on the wire.
type payment struct {
	X402Version int `json:"x402Version"`
	Accepted    struct {
		Scheme            string            `json:"scheme"`
		Network           string            `json:"network"`
		Amount            string            `json:"amount"`
		Asset             string            `json:"asset"`
		PayTo             string            `json:"payTo"`
		MaxTimeoutSeconds int               `json:"maxTimeoutSeconds"`
		Extra             map[string]string `json:"extra"`
	} `json:"accepted"`
	Payload struct {
		Signature     string `json:"signature"`
		Authorization struct {
			From        string `json:"from"`
			To          string `json:"to"`
			Value       string `json:"value"`
			ValidAfter  string `json:"validAfter"`
			ValidBefore string `json:"validBefore"`
			Nonce       string `json:"nonce"`
		} `json:"authorization"`
	} `json:"payload"`
}

var (
	hex32 = regexp.MustCompile(`^0x[0-9a-fA-F]{64}$`)
	hex65 = regexp.MustCompile(`^0x[0-9a-fA-F]{130}$`)
)

// checkPayment decodes a captured PAYMENT-SIGNATURE header and checks that it
// pays what was asked, from payer, as x402 v2's exact scheme on Base Sepolia.
func checkPayment(t *testing.T, header, payer string) {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(header)
	if err != nil {
		t.Fatalf("PAYMENT-SIGNATURE is not base64: %v", err)
	}
	var p payment
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatalf("PAYMENT-SIGNATURE is not JSON: %v\n%s", err, raw)
	}
	a, auth := p.Accepted, p.Payload.Authorization
	for _, c := range []struct{ what, got, want string }{
		{"x402Version", fmt.Sprint(p.X402Version), "2"},
		{"accepted.scheme", a.Scheme, "exact"},
		{"accepted.network", a.Network, network},
		{"accepted.amount", a.Amount, amount},
		{"accepted.asset", strings.ToLower(a.Asset), strings.ToLower(usdc)},
		{"accepted.payTo", strings.ToLower(a.PayTo), strings.ToLower(payTo)},
		{"accepted.extra.name", a.Extra["name"], "USDC"},
		{"authorization.from", strings.ToLower(auth.From), strings.ToLower(payer)},
		{"authorization.to", strings.ToLower(auth.To), strings.ToLower(payTo)},
		{"authorization.value", auth.Value, amount},
	} {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.what, c.got, c.want)
		}
	}
	if !hex32.MatchString(auth.Nonce) {
		t.Errorf("authorization.nonce %q is not 32 bytes of hex", auth.Nonce)
	}
	if !hex65.MatchString(p.Payload.Signature) {
		t.Errorf("signature %q is not 65 bytes of hex", p.Payload.Signature)
	}
	var after, before int64
	fmt.Sscan(auth.ValidAfter, &after)
	fmt.Sscan(auth.ValidBefore, &before)
	if now := time.Now().Unix(); after > now || before < now || before > now+maxTimeout+60 {
		t.Errorf("valid from %s to %s, which does not hold now (%d) within the %d s asked", auth.ValidAfter, auth.ValidBefore, now, maxTimeout)
	}
}

// checkSettled checks an answer is the payee's 200 with its PAYMENT-RESPONSE
// decoded.
func checkSettled(t *testing.T, a x402client.Answer, payer string) {
	t.Helper()
	var body struct{ Verdict string }
	if err := json.Unmarshal(a.Body, &body); err != nil || a.Status != http.StatusOK || body.Verdict != "yes" {
		t.Errorf("answer %d %s, want 200 and the verdict", a.Status, a.Body)
	}
	var settled struct {
		Success     bool   `json:"success"`
		Payer       string `json:"payer"`
		Transaction string `json:"transaction"`
		Network     string `json:"network"`
	}
	if err := json.Unmarshal(a.PaymentResponse, &settled); err != nil {
		t.Fatalf("paymentResponse %s: %v", a.PaymentResponse, err)
	}
	if !settled.Success || settled.Transaction != tx || settled.Network != network || !strings.EqualFold(settled.Payer, payer) {
		t.Errorf("PAYMENT-RESPONSE decoded as %+v, want success by %s in %s on %s", settled, payer, tx, network)
	}
}

func TestPay(t *testing.T) {
	c := x402client.New(t)
	// A key in the environment is not the fresh key's source.
	t.Setenv(x402client.KeyEnv, knownKey)
	cases := []struct {
		name    string
		opts    x402client.Options
		accepts []any
		payer   string // "": a fresh one
	}{
		{name: "a fresh key"},
		{name: "a given key", opts: x402client.Options{Key: knownKey}, payer: knownAddress},
		{name: "one network of two", opts: x402client.Options{Network: network}, accepts: []any{onBase, requirement}},
		{name: "twice at once", opts: x402client.Options{Twice: true}},
	}
	payers := map[string]bool{}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := &payee{accepts: tc.accepts}
			srv := httptest.NewServer(p)
			defer srv.Close()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			r, err := c.Pay(ctx, srv.URL+"/x402/query", `{"query":"Should I?"}`, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if tc.payer != "" && r.Payer != tc.payer {
				t.Errorf("payer %s, want %s", r.Payer, tc.payer)
			}
			if tc.payer == "" && (strings.EqualFold(r.Payer, knownAddress) || payers[r.Payer]) {
				t.Errorf("payer %s is not a fresh key's", r.Payer)
			}
			payers[r.Payer] = true
			checkPayment(t, r.PaymentSignature, r.Payer)
			want := []string{r.PaymentSignature}
			settled := r.Answer
			if tc.opts.Twice {
				want = append(want, r.PaymentSignature)
				if len(r.Answers) != 2 {
					t.Fatalf("%d answers, want 2", len(r.Answers))
				}
				// Whichever arrived first was paid for; the other was the
				// same header again. The client was handed the first sent.
				statuses := []int{r.Answers[0].Status, r.Answers[1].Status}
				if slices.Sort(statuses); !slices.Equal(statuses, []int{http.StatusOK, http.StatusPaymentRequired}) {
					t.Errorf("answers %v, want one 200 and one 402", statuses)
				}
				if r.Status != r.Answers[0].Status {
					t.Errorf("the client's answer %d is not the first sent's, %d", r.Status, r.Answers[0].Status)
				}
				settled = r.Answers[slices.IndexFunc(r.Answers, func(a x402client.Answer) bool { return a.Status == http.StatusOK })%2]
			}
			checkSettled(t, settled, r.Payer)
			if got := p.headers(); !slices.Equal(got, want) {
				t.Errorf("the payee received PAYMENT-SIGNATURE %q, want the reported one %d time(s)", got, len(want))
			}
		})
	}
}

func TestReplay(t *testing.T) {
	c := x402client.New(t)
	p := &payee{}
	srv := httptest.NewServer(p)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	url, body := srv.URL+"/x402/query", `{"query":"Should I?"}`
	paid, err := c.Pay(ctx, url, body, x402client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.Pay(ctx, url, body, x402client.Options{Replay: paid.PaymentSignature})
	if err != nil {
		t.Fatal(err)
	}
	if again.Status != http.StatusPaymentRequired || again.PaymentSignature != paid.PaymentSignature || again.Payer != paid.Payer {
		t.Errorf("replay: %d with %q from %s, want 402 with the first header from %s", again.Status, again.PaymentSignature, again.Payer, paid.Payer)
	}
	var required struct {
		X402Version int    `json:"x402Version"`
		Error       string `json:"error"`
	}
	if err := json.Unmarshal(again.PaymentRequired, &required); err != nil || required.X402Version != 2 || required.Error != "authorization already used" {
		t.Errorf("replay's PAYMENT-REQUIRED decoded as %s (%v), want v2 saying the authorization was used", again.PaymentRequired, err)
	}
	if got := p.headers(); !slices.Equal(got, []string{paid.PaymentSignature, paid.PaymentSignature}) {
		t.Errorf("the payee received %q, want the first header twice, as is", got)
	}
}

func TestCheckInstalled(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("package-lock.json", `{"packages": {"": {"name": "x"}, "node_modules/viem": {"version": "2.57.20"}, "node_modules/@x402/fetch": {"version": "2.27.0"}}}`)
	if err := x402client.CheckInstalled(dir); err == nil || !strings.Contains(err.Error(), "viem@2.57.20") || !strings.Contains(err.Error(), "@x402/fetch@2.27.0") {
		t.Errorf("nothing installed: %v, want both packages named", err)
	}
	write("node_modules/viem/package.json", `{"version": "2.57.20"}`)
	write("node_modules/@x402/fetch/package.json", `{"version": "2.26.0"}`)
	if err := x402client.CheckInstalled(dir); err == nil || strings.Contains(err.Error(), "viem") || !strings.Contains(err.Error(), "@x402/fetch@2.27.0") {
		t.Errorf("one stale: %v, want only @x402/fetch named", err)
	}
	write("node_modules/@x402/fetch/package.json", `{"version": "2.27.0"}`)
	if err := x402client.CheckInstalled(dir); err != nil {
		t.Errorf("installed as locked: %v", err)
	}
}

func TestPaymentIdentifierAndRetries(t *testing.T) {
	c := x402client.New(t)
	const id = "pay_0123456789abcdef0123"
	cases := []struct {
		name     string
		declared bool // the 402 declares payment-identifier
		opts     x402client.Options
		wantID   string // in the payment the payee received
		statuses []int  // every answer to the signed request, in the order sent
	}{
		{name: "an id the 402 declares", declared: true, opts: x402client.Options{PaymentID: id}, wantID: id, statuses: []int{200}},
		{name: "an id the 402 does not declare", opts: x402client.Options{PaymentID: id}, statuses: []int{200}},
		{name: "a retry with the id", declared: true, opts: x402client.Options{PaymentID: id, Retries: 1}, wantID: id, statuses: []int{200, 200}},
		{name: "three retries one after another", declared: true, opts: x402client.Options{PaymentID: id, Retries: 3}, wantID: id, statuses: []int{200, 200, 200, 200}},
		{name: "ten retries at once", declared: true, opts: x402client.Options{PaymentID: id, Retries: 10, Concurrent: true}, wantID: id,
			statuses: slices.Repeat([]int{200}, 11)},
		{name: "a retry without an id", declared: true, opts: x402client.Options{Retries: 1}, statuses: []int{200, 402}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := &payee{}
			if tc.declared {
				p.extensions = extensions(t)
			}
			if tc.opts.Concurrent {
				p.together, p.arrived = tc.opts.Retries, make(chan struct{})
			}
			srv := httptest.NewServer(p)
			defer srv.Close()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			r, err := c.Pay(ctx, srv.URL+"/x402/query", `{"query":"Should I?"}`, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			checkPayment(t, r.PaymentSignature, r.Payer)
			checkSettled(t, r.Answer, r.Payer)
			if r.PaymentID != tc.wantID {
				t.Errorf("the report's paymentId %q, want %q", r.PaymentID, tc.wantID)
			}
			// Every copy sent is the very header the client signed, and the
			// id is in it as the payee decodes it.
			got := p.headers()
			if want := slices.Repeat([]string{r.PaymentSignature}, len(tc.statuses)); !slices.Equal(got, want) {
				t.Fatalf("the payee received %d header(s) %q, want the signed one %d time(s)", len(got), got, len(want))
			}
			if id := paymentID(got[0]); id != tc.wantID {
				t.Errorf("the payee received payment-identifier %q, want %q", id, tc.wantID)
			}
			if tc.opts.Retries == 0 {
				if r.Answers != nil {
					t.Errorf("%d answers reported without retries", len(r.Answers))
				}
				return
			}
			var statuses []int
			for _, a := range r.Answers {
				statuses = append(statuses, a.Status)
				if a.Status == http.StatusOK {
					checkSettled(t, a, r.Payer)
				}
			}
			if !slices.Equal(statuses, tc.statuses) {
				t.Errorf("answers %v, want %v", statuses, tc.statuses)
			}
		})
	}
}

func TestPayUsage(t *testing.T) {
	c := x402client.New(t)
	for _, o := range []x402client.Options{
		{PaymentID: "too-short"},
		{PaymentID: "pay_0123456789abcdef!"},
		{Concurrent: true},
	} {
		_, err := c.Pay(context.Background(), "http://127.0.0.1:9/x402/query", "", o)
		if err == nil || !strings.Contains(err.Error(), "exit status 2") {
			t.Errorf("%+v: %v, want a usage error", o, err)
		}
	}
}
