package x402

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
)

// answer is what the fake facilitator says to one request: a status and a
// body, or a broken connection.
type answer struct {
	status int
	body   string
	hangUp bool // close the connection without an answer
	block  bool // hold the request until the client gives up
}

// facilitatorServer is a facilitator over real HTTP that gives the answer
// under test and records what it was asked. The base URL has a path, as
// CDP's has.
type facilitatorServer struct {
	*httptest.Server
	mu       sync.Mutex
	answer   answer
	received []*http.Request
	bodies   [][]byte
	arrived  chan struct{}
}

func newFacilitatorServer(t *testing.T) *facilitatorServer {
	t.Helper()
	f := &facilitatorServer{arrived: make(chan struct{}, 16)}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		a := f.answer
		f.received = append(f.received, r)
		f.bodies = append(f.bodies, body)
		f.mu.Unlock()
		f.arrived <- struct{}{}
		switch {
		case a.hangUp:
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		case a.block:
			<-r.Context().Done()
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(a.status)
		_, _ = io.WriteString(w, a.body)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *facilitatorServer) set(a answer) {
	f.mu.Lock()
	f.answer = a
	f.mu.Unlock()
}

func (f *facilitatorServer) client() *Facilitator {
	return &Facilitator{URL: f.URL + "/platform/v2/x402/", HTTP: f.Client()}
}

func samplePayment(t *testing.T) (PaymentPayload, PaymentRequirements) {
	t.Helper()
	req := offers()[1]
	p, err := NewPayment(testKey(1), req, &ResourceInfo{URL: "https://example.test/x402/query"}, testNow, newSeeded())
	if err != nil {
		t.Fatal(err)
	}
	return p, req
}

const (
	txHash  = "0x" + "ab12000000000000000000000000000000000000000000000000000000000001"
	okBody  = `{"success":true,"payer":"0xPAYER","transaction":"` + txHash + `","network":"eip155:8453"}`
	refused = `{"success":false,"errorReason":"invalid_exact_evm_nonce_already_used","payer":"0xPAYER","transaction":"","network":"eip155:8453"}`
)

// outcome is how a call ended: a response, a lost answer, a refused
// credential.
type outcome int

const (
	answered outcome = iota
	lost
	credential
)

func classify(t *testing.T, err error) outcome {
	t.Helper()
	switch {
	case err == nil:
		return answered
	case errors.Is(err, ErrAnswerLost) && !errors.Is(err, ErrCredentialRefused):
		return lost
	case errors.Is(err, ErrCredentialRefused) && !errors.Is(err, ErrAnswerLost):
		return credential
	}
	t.Fatalf("error neither lost nor refused credential: %v", err)
	return 0
}

func TestSettleTellsRefusedFromDontKnow(t *testing.T) {
	srv := newFacilitatorServer(t)
	p, req := samplePayment(t)
	cases := []struct {
		name string
		answer
		want    outcome
		success bool
		reason  string
	}{
		{"settled", answer{status: 200, body: okBody}, answered, true, ""},
		{"refused over 200", answer{status: 200, body: refused}, answered, false, ReasonNonceAlreadyUsed},
		{"refused over 200 without a reason", answer{status: 200, body: `{"success":false,"transaction":"","network":"eip155:8453"}`}, answered, false, ReasonUnexpectedSettle},
		{"refused over 400 with a reason", answer{status: 400, body: refused}, answered, false, ReasonNonceAlreadyUsed},
		{"refused over 402 with a reason", answer{status: 402, body: `{"success":false,"errorReason":"insufficient_funds"}`}, answered, false, "insufficient_funds"},
		{"400 without a reason", answer{status: 400, body: `{"errorType":"invalid_request"}`}, answered, false, ReasonUnexpectedSettle},
		{"success without a transaction", answer{status: 200, body: `{"success":true,"network":"eip155:8453"}`}, lost, false, ""},
		{"200 without success", answer{status: 200, body: `{"transaction":"` + txHash + `"}`}, lost, false, ""},
		{"200 not JSON", answer{status: 200, body: `<html>ok</html>`}, lost, false, ""},
		{"202 pending", answer{status: 202, body: okBody}, lost, false, ""},
		{"500", answer{status: 500, body: `{"errorReason":"boom"}`}, lost, false, ""},
		{"502 from a proxy", answer{status: 502, body: `<html>Bad Gateway</html>`}, lost, false, ""},
		{"503", answer{status: 503}, lost, false, ""},
		{"429", answer{status: 429, body: `{"errorReason":"rate_limited"}`}, lost, false, ""},
		{"408", answer{status: 408}, lost, false, ""},
		{"connection cut", answer{hangUp: true}, lost, false, ""},
		{"answer too long", answer{status: 200, body: okBody[:len(okBody)-1] + `,"pad":"` + strings.Repeat("a", maxAnswerBytes) + `"}`}, lost, false, ""},
		{"401", answer{status: 401, body: `{"errorMessage":"unauthorized"}`}, credential, false, ""},
		{"403", answer{status: 403}, credential, false, ""},
	}
	for _, c := range cases {
		srv.set(c.answer)
		got, err := srv.client().Settle(context.Background(), p, req)
		<-srv.arrived
		if o := classify(t, err); o != c.want {
			t.Errorf("%s: outcome %d (%v), want %d", c.name, o, err, c.want)
			continue
		}
		if err != nil {
			continue
		}
		if got.Success != c.success || got.ErrorReason != c.reason {
			t.Errorf("%s: %+v, want success %v reason %q", c.name, got, c.success, c.reason)
		}
		if got.Success && (got.Transaction != txHash || got.Network != NetworkBase || got.Payer != "0xPAYER") {
			t.Errorf("%s: %+v", c.name, got)
		}
	}
}

func TestVerifyTellsRefusedFromDontKnow(t *testing.T) {
	srv := newFacilitatorServer(t)
	p, req := samplePayment(t)
	cases := []struct {
		name string
		answer
		want   outcome
		valid  bool
		reason string
	}{
		{"valid", answer{status: 200, body: `{"isValid":true,"payer":"0xPAYER"}`}, answered, true, ""},
		{"invalid over 200", answer{status: 200, body: `{"isValid":false,"invalidReason":"invalid_exact_evm_insufficient_balance","payer":"0xPAYER"}`}, answered, false, ReasonInsufficientBalance},
		{"invalid over 400", answer{status: 400, body: `{"isValid":false,"invalidReason":"invalid_exact_evm_signature"}`}, answered, false, ReasonInvalidSignature},
		{"400 without a reason", answer{status: 400, body: `bad request`}, answered, false, ReasonUnexpectedVerify},
		{"200 without isValid", answer{status: 200, body: `{}`}, lost, false, ""},
		{"500", answer{status: 500}, lost, false, ""},
		{"connection cut", answer{hangUp: true}, lost, false, ""},
		{"403", answer{status: 403}, credential, false, ""},
	}
	for _, c := range cases {
		srv.set(c.answer)
		got, err := srv.client().Verify(context.Background(), p, req)
		<-srv.arrived
		if o := classify(t, err); o != c.want {
			t.Errorf("%s: outcome %d (%v), want %d", c.name, o, err, c.want)
			continue
		}
		if err == nil && (got.IsValid != c.valid || got.InvalidReason != c.reason) {
			t.Errorf("%s: %+v", c.name, got)
		}
	}
}

// The body is the reference's {x402Version, paymentPayload,
// paymentRequirements}, POSTed as JSON to the base URL's /verify and
// /settle.
func TestFacilitatorRequests(t *testing.T) {
	srv := newFacilitatorServer(t)
	p, req := samplePayment(t)
	srv.set(answer{status: 200, body: `{"isValid":true}`})
	if _, err := srv.client().Verify(context.Background(), p, req); err != nil {
		t.Fatal(err)
	}
	<-srv.arrived
	srv.set(answer{status: 200, body: okBody})
	if _, err := srv.client().Settle(context.Background(), p, req); err != nil {
		t.Fatal(err)
	}
	<-srv.arrived
	for i, path := range []string{"/platform/v2/x402/verify", "/platform/v2/x402/settle"} {
		r := srv.received[i]
		if r.Method != http.MethodPost || r.URL.Path != path || r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("request %d: %s %s %q", i, r.Method, r.URL.Path, r.Header.Get("Content-Type"))
		}
		var body struct {
			X402Version         int                 `json:"x402Version"`
			PaymentPayload      PaymentPayload      `json:"paymentPayload"`
			PaymentRequirements PaymentRequirements `json:"paymentRequirements"`
		}
		if err := json.Unmarshal(srv.bodies[i], &body); err != nil {
			t.Fatal(err)
		}
		if body.X402Version != 2 || !reflect.DeepEqual(body.PaymentPayload, p) || !reflect.DeepEqual(body.PaymentRequirements, req) {
			t.Errorf("request %d body: %s", i, srv.bodies[i])
		}
	}
}

// A caller that gives up (its deadline, the Lambda's) has lost the answer,
// and can tell why.
func TestSettleCancelledIsLost(t *testing.T) {
	srv := newFacilitatorServer(t)
	p, req := samplePayment(t)
	srv.set(answer{block: true})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-srv.arrived; cancel() }()
	_, err := srv.client().Settle(ctx, p, req)
	if !errors.Is(err, ErrAnswerLost) || !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled settle: %v", err)
	}
}

func TestSupported(t *testing.T) {
	srv := newFacilitatorServer(t)
	const listing = `{"kinds":[{"x402Version":2,"scheme":"exact","network":"eip155:84532"},{"x402Version":1,"scheme":"exact","network":"base-sepolia"}],"extensions":[],"signers":{"eip155:*":["0x1234"]}}`
	cases := []struct {
		name string
		answer
		want     outcome
		testnet  bool
		mainnet  bool
		failsToo bool
	}{
		{"listing", answer{status: 200, body: listing}, answered, true, false, false},
		{"a kind without network", answer{status: 200, body: `{"kinds":[{"x402Version":2,"scheme":"exact"}]}`}, lost, false, false, false},
		{"not JSON", answer{status: 200, body: `<html>`}, lost, false, false, false},
		{"404", answer{status: 404, body: `not found`}, answered, false, false, true},
		{"503", answer{status: 503}, lost, false, false, false},
		{"401", answer{status: 401}, credential, false, false, false},
	}
	for _, c := range cases {
		srv.set(c.answer)
		got, err := srv.client().Supported(context.Background())
		<-srv.arrived
		if c.failsToo {
			if err == nil || errors.Is(err, ErrAnswerLost) || errors.Is(err, ErrCredentialRefused) {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		if o := classify(t, err); o != c.want {
			t.Errorf("%s: outcome %d (%v), want %d", c.name, o, err, c.want)
			continue
		}
		if got.Supports(2, SchemeExact, NetworkBaseSepolia) != c.testnet || got.Supports(2, SchemeExact, NetworkBase) != c.mainnet {
			t.Errorf("%s: %+v", c.name, got)
		}
	}
	last := srv.received[len(srv.received)-1]
	if last.Method != http.MethodGet || last.URL.Path != "/platform/v2/x402/supported" {
		t.Errorf("supported asked with %s %s", last.Method, last.URL.Path)
	}
}
