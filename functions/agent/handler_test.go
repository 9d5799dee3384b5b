package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	segjson "github.com/segmentio/encoding/json"

	"42sisters.ai/oracle/infra/fakes/fakefacilitator"
	"42sisters.ai/oracle/infra/provision"
	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/fulfil"
	"42sisters.ai/oracle/shared/httpapi"
	"42sisters.ai/oracle/shared/obs"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/queue"
	"42sisters.ai/oracle/shared/repair"
	"42sisters.ai/oracle/shared/store"
	"42sisters.ai/oracle/shared/x402"
	"42sisters.ai/oracle/shared/x402rail"
)

// payTo is the test's wallet.
const payTo = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C"

// env is the agent function on a fresh copy of the template's resources in
// moto, paying through the fake facilitator over HTTP.
type env struct {
	t       *testing.T
	tb      testing.TB
	f       *provision.Fixture
	h       *Handler
	fac     *fakefacilitator.Server
	orders  *store.Orders
	ledger  *store.Ledger
	sqs     *sqs.Client
	s3      *s3.Client
	alerts  *testkit.Alerts
	metrics *testkit.Metrics
	clock   *testkit.Clock
	logs    *testkit.Buffer
	slept   []time.Duration
	mu      sync.Mutex
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := newEnvTB(t)
	e.t = t
	return e
}

// newEnvTB is the env of a test or a benchmark.
func newEnvTB(t testing.TB) *env { return newEnvWith(t, nil) }

// newEnvWith is newEnvTB whose handler's AWS clients are built from the
// configuration instrument changes (the benchmark's traced clients).
func newEnvWith(t testing.TB, instrument func(*aws.Config)) *env {
	t.Helper()
	f := provision.ForTest(t, nil)
	cfg := f.AWS
	if instrument != nil {
		cfg = f.AWS.Copy()
		instrument(&cfg)
	}
	e := &env{tb: t, f: f, sqs: sqs.NewFromConfig(f.AWS), s3: awsenv.S3(cfg), alerts: &testkit.Alerts{}, metrics: &testkit.Metrics{},
		clock: testkit.NewClock(time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)), logs: &testkit.Buffer{}}
	e.fac = fakefacilitator.New(fakefacilitator.Options{Clock: e.clock.Now,
		Sleep: func(ctx context.Context, d time.Duration) error { return ctx.Err() }})
	srv := httptest.NewServer(e.fac)
	t.Cleanup(srv.Close)
	db := awsenv.NewTables(cfg)
	hasher, err := audit.NewHasher("agent-test-pepper-0123456789abcd")
	if err != nil {
		t.Fatal(err)
	}
	log := obs.NewLogger(e.logs, "DEBUG")
	e.orders = store.NewOrders(db, f.Ref("OrdersTable"), e.clock.Now)
	ledger := store.NewLedger(db, f.Ref("LedgerTable"), e.clock.Now)
	e.ledger = ledger
	generate := queue.NewSender(queue.NewClient(cfg), f.Ref("GenerateQueue"), e.clock.Now)
	auditor := &audit.Recorder{Writer: audit.NewWriter(e.s3, f.Ref("AuditBucket")), Alerts: e.alerts, Log: log}
	sepolia, _ := x402.LookupNetwork(x402.NetworkBaseSepolia)
	e.h = &Handler{
		// X402_NETWORKS testnet, the local stack's; both: e.both.
		Networks: []x402.NetworkInfo{sepolia}, PayTo: payTo, MaxTimeout: 5 * time.Minute, SettleRoom: 30 * time.Second,
		SettleAttempts: 3, Wait: 0, Poll: 250 * time.Millisecond, Reserve: 2 * time.Second,
		BaseURL: "https://oracle.example", Retention: 90 * 24 * time.Hour, Lease: time.Minute,
		Facilitator:    x402rail.NewFacilitator(srv.URL, srv.Client(), nil),
		Authorizations: ledger, PaymentIDs: ledger, Junk: ledger, Orders: e.orders,
		Verdicts: &repair.Guard{Orders: e.orders, Hash: hasher.Hash, Generate: generate, Alerts: e.alerts, Log: log},
		Payer: &fulfil.Service{Orders: e.orders, Generate: generate, Audit: auditor, Alerts: e.alerts, Metrics: e.metrics,
			Hasher: hasher, Log: log, Now: e.clock.Now, Lease: time.Minute, Retention: 90 * 24 * time.Hour},
		Audit: auditor, Alerts: e.alerts, Metrics: e.metrics, Hasher: hasher, Log: log, Now: e.clock.Now,
		Sleep: func(ctx context.Context, d time.Duration) error {
			e.mu.Lock()
			e.slept = append(e.slept, d)
			e.mu.Unlock()
			return ctx.Err()
		},
		Random: rand.Reader,
	}
	return e
}

// both is X402_NETWORKS both (Base, then Base Sepolia), with smoke as the
// smoke test's wallet.
func (e *env) both(smoke *secp256k1.PrivateKey) {
	base, _ := x402.LookupNetwork(x402.NetworkBase)
	sepolia, _ := x402.LookupNetwork(x402.NetworkBaseSepolia)
	e.h.Networks = []x402.NetworkInfo{base, sepolia}
	e.h.SmokePayer = x402.AddressOf(smoke.PubKey())
}

// onSepolia is the requirement to pay req's price on Base Sepolia, as the
// smoke test makes it when the 402 offers Base alone.
func onSepolia(req x402.PaymentRequirements) x402.PaymentRequirements {
	sepolia, _ := x402.LookupNetwork(x402.NetworkBaseSepolia)
	amount, _ := strconv.ParseInt(req.Amount, 10, 64)
	return x402.Requirement(sepolia, amount, req.PayTo, time.Duration(req.MaxTimeoutSeconds)*time.Second)
}

// claims counts the Ledger's authorization claims.
func (e *env) claims() (n int) {
	for _, item := range testkit.TableItems(e.t, e.f.AWS, e.f.Ref("LedgerTable")) {
		if strings.Contains(item, "x402auth#") {
			n++
		}
	}
	return n
}

// agentOrders counts the orders table's items.
func (e *env) agentOrders() int {
	return len(testkit.TableItems(e.t, e.f.AWS, e.f.Ref("OrdersTable")))
}

// junk is today's count of each kind of junk payment header.
func (e *env) junk() map[store.PaymentJunk]int64 {
	e.t.Helper()
	got, err := e.ledger.PaymentJunk(context.Background(), e.clock.Now())
	if err != nil {
		e.t.Fatal(err)
	}
	return got
}

// wallet is an agent's key.
func wallet(t testing.TB) *secp256k1.PrivateKey {
	t.Helper()
	k, err := secp256k1.GeneratePrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func request(path, body, payment string) httpapi.Request {
	r := httpapi.Request{RawPath: path, Body: body, Headers: map[string]string{"content-type": "application/json"}}
	r.RequestContext.HTTP.Method = http.MethodPost
	r.RequestContext.RequestID = fmt.Sprintf("req-%d", time.Now().UnixNano())
	if payment != "" {
		r.Headers["payment-signature"] = payment
	}
	return r
}

const body = `{"query":"Should I open a bakery on my street?"}`

// do sends a request.
func (e *env) do(r httpapi.Request) httpapi.Response {
	e.t.Helper()
	resp, err := e.h.Handle(context.Background(), r)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp
}

// offer asks path for its price with no payment and returns the 402's
// requirements.
func (e *env) offer(path string) x402.PaymentRequired {
	e.t.Helper()
	resp := e.do(request(path, body, ""))
	if resp.StatusCode != http.StatusPaymentRequired {
		e.t.Fatalf("%s without a payment answered %d %s", path, resp.StatusCode, resp.Body)
	}
	pr, err := x402.DecodePaymentRequired(resp.Headers[x402.HeaderPaymentRequired])
	if err != nil {
		e.t.Fatalf("PAYMENT-REQUIRED: %v", err)
	}
	return pr
}

// sign makes key's payment for req, changed by mutate before signing.
func (e *env) sign(key *secp256k1.PrivateKey, req x402.PaymentRequirements, mutate func(*x402.PaymentPayload)) string {
	e.t.Helper()
	p, err := x402.NewPayment(key, req, nil, e.clock.Now(), rand.Reader)
	if err != nil {
		e.t.Fatal(err)
	}
	if mutate != nil {
		mutate(&p)
		n, _ := x402.LookupNetwork(p.Accepted.Network)
		if n.Network == "" {
			n, _ = x402.LookupNetwork(x402.NetworkBaseSepolia)
		}
		sig, err := x402.SignAuthorization(key, n, p.Payload.Authorization)
		if err != nil {
			e.t.Fatal(err)
		}
		p.Payload.Signature = sig
	}
	h, err := x402.EncodeHeader(p)
	if err != nil {
		e.t.Fatal(err)
	}
	return h
}

// records are the audit log's x402 records.
func (e *env) records() []audit.Record {
	var out []audit.Record
	for _, r := range testkit.AuditRecords(e.t, e.s3, e.f.Ref("AuditBucket")) {
		if r.Source == audit.SourceX402 {
			out = append(out, r)
		}
	}
	return out
}

func (e *env) generateJobs() []string {
	return testkit.Drain(e.t, e.sqs, e.f.Ref("GenerateQueue"))
}

func (e *env) settles() (n int) {
	for _, c := range e.fac.Calls() {
		if c.Path == "/settle" {
			n++
		}
	}
	return n
}

// TestAPaymentIsAskedForWithWhatToPay: each route answers 402 without a
// payment, with one requirement per network offered at the tier's price
// in the header and, the same, as the body; the headers are readable by a
// browser's script.
func TestAPaymentIsAskedForWithWhatToPay(t *testing.T) {
	e := newEnv(t)
	for path, tier := range Routes {
		resp := e.do(request(path, body, ""))
		pr := e.offer(path)
		var fromBody x402.PaymentRequired
		if err := json.Unmarshal([]byte(resp.Body), &fromBody); err != nil {
			t.Fatal(err)
		}
		a, _ := json.Marshal(pr)
		b, _ := json.Marshal(fromBody)
		if !bytes.Equal(a, b) {
			t.Errorf("%s: the body %s is not the header's %s", path, b, a)
		}
		if pr.X402Version != 2 || pr.Resource == nil || pr.Resource.URL != "https://oracle.example"+path || len(pr.Accepts) != 1 {
			t.Fatalf("%s: %+v", path, pr)
		}
		for i, n := range []x402.Network{x402.NetworkBaseSepolia} {
			r := pr.Accepts[i]
			info, _ := x402.LookupNetwork(n)
			if r.Scheme != "exact" || r.Network != n || r.Asset != info.Asset || r.PayTo != payTo ||
				r.Amount != fmt.Sprint(tier.PriceUSDCAtomic()) || r.MaxTimeoutSeconds != 300 || r.Extra["name"] != info.AssetName {
				t.Errorf("%s on %s: %+v", path, n, r)
			}
		}
		// Kept small: the official client echoes the extensions into its
		// PAYMENT-SIGNATURE, and API Gateway takes 10 KB of request
		// headers in all; x402.MaxHeaderBytes (8 KiB) is what we read.
		if n := len(resp.Headers[x402.HeaderPaymentRequired]); n > 4096 {
			t.Errorf("%s: PAYMENT-REQUIRED is %d bytes", path, n)
		}
		p, err := x402.NewPayment(wallet(t), pr.Accepts[0], nil, e.clock.Now(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		p.Resource, p.Extensions = pr.Resource, pr.Extensions
		if echoed, _ := x402.EncodeHeader(x402.WithPaymentIdentifier(p, strings.Repeat("i", x402.PaymentIDMaxLength))); len(echoed) > 6144 {
			t.Errorf("%s: a payment echoing the extensions is %d bytes", path, len(echoed))
		}
		if !strings.Contains(resp.Headers["Access-Control-Expose-Headers"], "PAYMENT-REQUIRED") ||
			!strings.Contains(resp.Headers["Access-Control-Expose-Headers"], "PAYMENT-RESPONSE") {
			t.Errorf("%s: headers not exposed to browsers: %v", path, resp.Headers)
		}
	}
	if got := e.offer("/x402/query/full").Accepts[0].Amount; got != "250000" {
		t.Errorf("the full tier costs %s units, want 250000 (0.25 USDC)", got)
	}
}

// TestABadQueryIsRefusedBeforeAnyPayment: the query is checked as at
// checkout: a 400, never a 402, and nothing recorded or settled.
func TestABadQueryIsRefusedBeforeAnyPayment(t *testing.T) {
	e := newEnv(t)
	key := wallet(t)
	req := e.offer("/x402/query").Accepts[0]
	for name, b := range map[string]string{
		"empty":       `{"query":""}`,
		"blank":       `{"query":"  \u200b "}`,
		"missing":     `{}`,
		"not JSON":    `query=hi`,
		"two objects": `{"query":"a"}{"query":"b"}`,
		"too long":    fmt.Sprintf(`{"query":%q}`, strings.Repeat("idea ", oracle.MaxQueryUnits)),
	} {
		for _, pay := range []string{"", e.sign(key, req, nil)} {
			resp := e.do(request("/x402/query", b, pay))
			if resp.StatusCode != http.StatusBadRequest && resp.StatusCode != http.StatusRequestEntityTooLarge {
				t.Errorf("%s (paid %v): %d %s", name, pay != "", resp.StatusCode, resp.Body)
			}
		}
	}
	if n := len(e.fac.Calls()); n != 0 {
		t.Errorf("%d facilitator calls for bad queries", n)
	}
	if recs := e.records(); len(recs) != 0 {
		t.Errorf("audit records for bad queries: %+v", recs)
	}
}

// TestAPaidRequestIsSettledThenGenerated: a valid payment is verified and
// settled once, its order is PAID with the payer and the transaction, one
// generation job is queued, the agent gets 202 with where to poll and a
// PAYMENT-RESPONSE, and one OK record in the x402 form is written.
func TestAPaidRequestIsSettledThenGenerated(t *testing.T) {
	e := newEnv(t)
	key := wallet(t)
	req := e.offer("/x402/query/premium").Accepts[0]
	before := e.fac.Balance(payTo)
	resp := e.do(request("/x402/query/premium", body, e.sign(key, req, nil)))
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("answered %d %s", resp.StatusCode, resp.Body)
	}
	var pending pendingAnswer
	if err := json.Unmarshal([]byte(resp.Body), &pending); err != nil {
		t.Fatal(err)
	}
	if !oracle.IsAgentOrder(pending.OrderID) || !strings.HasPrefix(pending.OrderID, "x402_test_") ||
		resp.Headers["Location"] != "https://oracle.example/x402/result/"+pending.OrderID || resp.Headers["Retry-After"] == "" {
		t.Fatalf("pending answer %+v, headers %v", pending, resp.Headers)
	}
	settle, err := x402.DecodePaymentResponse(resp.Headers[x402.HeaderPaymentResponse])
	if err != nil || !settle.Success || settle.Transaction == "" || settle.Network != x402.NetworkBaseSepolia {
		t.Fatalf("PAYMENT-RESPONSE %+v %v", settle, err)
	}
	payer := x402.AddressOf(key.PubKey())
	o, found, err := e.orders.Get(context.Background(), pending.OrderID)
	if err != nil || !found {
		t.Fatalf("order %v %v", found, err)
	}
	if o.Status != oracle.StatusPaid || o.Tier != oracle.TierStrategy || o.Source != oracle.SourceX402 || o.Livemode ||
		o.AmountTotal != 1_000_000 || o.Currency != "usdc" || o.Agent == nil || o.Agent.Payer != payer ||
		o.Agent.Transaction != settle.Transaction || o.Agent.Endpoint != "/x402/query/premium" {
		t.Fatalf("order %+v agent %+v", o, o.Agent)
	}
	if jobs := e.generateJobs(); len(jobs) != 1 || !strings.Contains(jobs[0], pending.OrderID) {
		t.Fatalf("generation jobs %q", jobs)
	}
	if got := e.fac.Balance(payTo); got != addUnits(before, 1_000_000) {
		t.Errorf("the wallet holds %s units, want %s", got, addUnits(before, 1_000_000))
	}
	recs := e.records()
	if len(recs) != 1 {
		t.Fatalf("x402 records %+v", recs)
	}
	r := recs[0]
	if r.Status != audit.StatusOK || r.TxHash != settle.Transaction || r.Endpoint != "/x402/query/premium" || r.AmountUSDC != 1.0 ||
		r.Network != "eip155:84532" || r.SessionID != pending.OrderID || !strings.HasPrefix(r.QueryHash, audit.HashPrefix) ||
		!strings.HasPrefix(r.Payer, audit.HashPrefix) || r.ErrorDetail != nil || r.OrderStatus != string(oracle.StatusPaid) {
		t.Fatalf("record %+v", r)
	}
	if m := e.metrics.Counts(); m["X402Payments"] != 1 || m["X402Refused"] != 0 {
		t.Fatalf("metrics %v, want one X402Payments (settled)", m)
	}
}

// TestAVerdictReadyInTimeIsTheAnswer: when the verdict is stored within
// the wait, the paid request answers 200 with it, the result page's
// address and PAYMENT-RESPONSE.
func TestAVerdictReadyInTimeIsTheAnswer(t *testing.T) {
	e := newEnv(t)
	e.h.Wait = 30 * time.Second
	// The generator, played by the wait's first pause: it stores a verdict.
	var once sync.Once
	e.h.Sleep = func(ctx context.Context, d time.Duration) error {
		once.Do(func() { storeVerdict(e, oracle.TierQuick) })
		e.clock.Add(d)
		return nil
	}
	req := e.offer("/x402/query").Accepts[0]
	resp := e.do(request("/x402/query", body, e.sign(wallet(t), req, nil)))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("answered %d %s", resp.StatusCode, resp.Body)
	}
	var v verdictAnswer
	if err := json.Unmarshal([]byte(resp.Body), &v); err != nil {
		t.Fatal(err)
	}
	if v.Status != "ready" || v.Tier != oracle.TierQuick || v.ResultURL != "https://oracle.example/result/"+v.OrderID || len(v.Verdict) == 0 {
		t.Fatalf("answer %+v", v)
	}
	if s, err := x402.DecodePaymentResponse(resp.Headers[x402.HeaderPaymentResponse]); err != nil || !s.Success {
		t.Fatalf("PAYMENT-RESPONSE %+v %v", s, err)
	}
}

// TestACorruptVerdictIsSetAsideAndPolledFor: a verdict stored corrupt
// (its text no longer matches its hash) is never the answer: the paid
// request sets it aside as every reader does (its text kept, the order
// PAID again), raises one VERDICT_CORRUPT naming the order by its name,
// queues its generation again, and answers 202 with the address to poll.
func TestACorruptVerdictIsSetAsideAndPolledFor(t *testing.T) {
	e := newEnv(t)
	e.h.Wait = 30 * time.Second
	var once sync.Once
	e.h.Sleep = func(ctx context.Context, d time.Duration) error {
		once.Do(func() {
			e.generateJobs() // the claim's own
			id := storeVerdict(e, oracle.TierQuick)
			testkit.CorruptVerdict(t, e.f.AWS, e.f.Ref("OrdersTable"), id, `{"summary":"A clear`)
		})
		e.clock.Add(d)
		return nil
	}
	req := e.offer("/x402/query").Accepts[0]
	resp := e.do(request("/x402/query", body, e.sign(wallet(t), req, nil)))
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("answered %d %s, want 202 with where to poll", resp.StatusCode, resp.Body)
	}
	var pending pendingAnswer
	if err := json.Unmarshal([]byte(resp.Body), &pending); err != nil {
		t.Fatal(err)
	}
	if resp.Headers["Location"] != "https://oracle.example/x402/result/"+pending.OrderID {
		t.Fatalf("Location %q for %+v", resp.Headers["Location"], pending)
	}
	o, _, err := e.orders.Get(context.Background(), pending.OrderID)
	if err != nil || o.Status != oracle.StatusPaid || o.Verdict != "" || o.SetAsideVerdict != `{"summary":"A clear` || o.SetAsideAt == nil {
		t.Fatalf("order %s, verdict %q, set aside %q at %v (%v); want PAID with the corrupt verdict set aside", o.Status, o.Verdict, o.SetAsideVerdict, o.SetAsideAt, err)
	}
	var corrupt []alert.Alert
	for _, a := range e.alerts.Raised() {
		if a.Kind == alert.VerdictCorrupt {
			corrupt = append(corrupt, a)
		}
	}
	if len(corrupt) != 1 || corrupt[0].Severity != alert.Critical || corrupt[0].Session != pending.OrderID {
		t.Fatalf("VERDICT_CORRUPT alerts %+v, want one for the order", corrupt)
	}
	if text := corrupt[0].Text(e.clock.Now()); strings.Contains(text, pending.OrderID) || !strings.Contains(text, oracle.ShortID(pending.OrderID)) {
		t.Fatalf("the alert %q does not name the order by its name alone", text)
	}
	if jobs := e.generateJobs(); len(jobs) != 1 || !strings.Contains(jobs[0], pending.OrderID) {
		t.Fatalf("generate jobs %q, want the repair's", jobs)
	}
	if strings.Contains(e.logs.String(), pending.OrderID) {
		t.Fatal("the agent's log lines hold the whole order id")
	}
}

// storeVerdict stores a verdict for the one order waiting in the table, as
// the generator would, and returns the order's id.
func storeVerdict(e *env, tier oracle.Tier) string {
	e.t.Helper()
	ctx := context.Background()
	var id string
	for _, item := range testkit.TableItems(e.t, e.f.AWS, e.f.Ref("OrdersTable")) {
		var o struct {
			ID string `json:"session_id"`
		}
		_ = json.Unmarshal([]byte(item), &o)
		id = o.ID
	}
	_, lease, err := e.orders.StartGeneration(ctx, id, time.Minute)
	if err != nil {
		e.t.Fatal(err)
	}
	a := oracle.Analysis{Verdict: oracle.VerdictGreen, Summary: "A clear yes."}
	raw, err := a.CanonicalJSON()
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := oracle.ParseAnalysis(tier, raw); err != nil {
		e.t.Fatalf("the test's verdict does not parse as %s: %v", tier, err)
	}
	if _, err := e.orders.StoreVerdict(ctx, id, lease, store.StoredVerdict{Canonical: string(raw), Hash: e.h.Hasher.Hash(string(raw)), Label: oracle.VerdictGreen}); err != nil {
		e.t.Fatal(err)
	}
	return id
}

// TestEveryRefusalEndsWithoutAVerdict: each way a payment can be refused
// answers 402 (or 503 for a facilitator that is down) saying why, writes
// one audit record in the x402 form with its status, settles nothing
// (or, for a refused settlement, moves no money) and queues no generation.
func TestEveryRefusalEndsWithoutAVerdict(t *testing.T) {
	cases := []struct {
		name    string
		path    string
		mutate  func(*x402.PaymentPayload)
		control *fakefacilitator.Control
		header  string // sent as is instead of a signed payment
		status  int
		reason  string
		audit   audit.Status
		settled bool // whether /settle was called
		alert   string
		// junk: no payment to record, counted as this kind and not audited.
		junk store.PaymentJunk
		// after changes the payment after it is signed.
		after func(*x402.PaymentPayload)
	}{
		{name: "tampered amount", mutate: func(p *x402.PaymentPayload) {
			p.Payload.Authorization.Value = "1"
		}, status: 402, reason: x402.ReasonValueMismatch, audit: audit.StatusInvalid},
		{name: "amount of a cheaper tier", path: "/x402/query/full", mutate: func(p *x402.PaymentPayload) {
			p.Accepted.Amount, p.Payload.Authorization.Value = "50000", "50000"
		}, status: 402, audit: audit.StatusInvalid},
		{name: "wrong network", mutate: func(p *x402.PaymentPayload) {
			p.Accepted.Network = "eip155:1"
		}, status: 402, audit: audit.StatusInvalid},
		{name: "wrong payTo", mutate: func(p *x402.PaymentPayload) {
			p.Accepted.PayTo = "0x0000000000000000000000000000000000000001"
			p.Payload.Authorization.To = "0x0000000000000000000000000000000000000001"
		}, status: 402, audit: audit.StatusInvalid},
		{name: "expired", mutate: func(p *x402.PaymentPayload) {
			p.Payload.Authorization.ValidBefore = fmt.Sprint(time.Date(2026, 11, 27, 11, 59, 0, 0, time.UTC).Unix())
		}, status: 402, reason: x402.ReasonValidBefore, audit: audit.StatusInvalid},
		{name: "expiring before a settlement could finish", mutate: func(p *x402.PaymentPayload) {
			p.Payload.Authorization.ValidBefore = fmt.Sprint(time.Date(2026, 11, 27, 12, 0, 10, 0, time.UTC).Unix())
		}, status: 402, reason: x402.ReasonValidBefore, audit: audit.StatusInvalid},
		{name: "not yet valid", mutate: func(p *x402.PaymentPayload) {
			p.Payload.Authorization.ValidAfter = fmt.Sprint(time.Date(2026, 11, 27, 12, 5, 0, 0, time.UTC).Unix())
		}, status: 402, reason: x402.ReasonValidAfter, audit: audit.StatusInvalid},
		{name: "signed by another key", mutate: func(p *x402.PaymentPayload) {
			p.Payload.Authorization.From = "0x857b06519E91e3A54538791bDbb0E22373e36b66"
		}, status: 402, reason: x402.ReasonInvalidSignature, audit: audit.StatusInvalid},
		{name: "not a payment", header: "bm90IGpzb24=", status: 402, reason: x402.ReasonInvalidPayload, junk: store.JunkUndecodable},
		{name: "not base64", header: "x", status: 402, reason: x402.ReasonInvalidPayload, junk: store.JunkUndecodable},
		{name: "an empty object", header: "e30=", status: 402, reason: x402.ReasonInvalidVersion, junk: store.JunkMalformed},
		{name: "version 1", mutate: func(p *x402.PaymentPayload) {
			p.X402Version = 1
		}, status: 402, reason: x402.ReasonInvalidVersion, junk: store.JunkMalformed},
		{name: "another scheme", mutate: func(p *x402.PaymentPayload) {
			p.Accepted.Scheme = "upto"
		}, status: 402, reason: x402.ReasonUnsupportedScheme, junk: store.JunkMalformed},
		{name: "a time that is no number", after: func(p *x402.PaymentPayload) {
			p.Payload.Authorization.ValidAfter = "soon"
		}, status: 402, reason: x402.ReasonMalformedExact, junk: store.JunkMalformed},
		{name: "no signature", after: func(p *x402.PaymentPayload) {
			p.Payload.Signature = ""
		}, status: 402, reason: x402.ReasonMissingSignature, junk: store.JunkMalformed},
		{name: "a smart wallet's signature", after: func(p *x402.PaymentPayload) {
			p.Payload.Signature += strings.Repeat("ab", 64)
		}, status: 402, reason: x402.ReasonSignatureFormat, junk: store.JunkMalformed},
		// A stranger's text in the payment still makes a valid record.
		{name: "an address for the network", mutate: func(p *x402.PaymentPayload) {
			p.Accepted.Network = "ana@example.com"
		}, status: 402, reason: x402.ReasonInvalidNetwork, audit: audit.StatusInvalid},
		{name: "an address for the payee", mutate: func(p *x402.PaymentPayload) {
			p.Accepted.PayTo = "ana@example.com"
		}, status: 402, audit: audit.StatusInvalid},
		{name: "payer without funds", control: &fakefacilitator.Control{Faucet: "0"},
			status: 402, audit: audit.StatusVerifyFailed},
		{name: "settle refused", control: &fakefacilitator.Control{Settle: fakefacilitator.SettleRefuse},
			status: 402, audit: audit.StatusSettleFailed, settled: true, alert: "X402_SETTLE_FAILED"},
		{name: "facilitator down", control: &fakefacilitator.Control{Down: ptr(true)},
			status: 503, audit: audit.StatusFacilitatorDown, alert: "X402_FACILITATOR_DOWN"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			path := c.path
			if path == "" {
				path = "/x402/query"
			}
			req := e.offer(path).Accepts[0]
			if c.control != nil {
				if _, err := e.fac.Apply(*c.control); err != nil {
					t.Fatal(err)
				}
			}
			before := e.fac.Balance(payTo)
			header := c.header
			switch {
			case c.after != nil:
				p, err := x402.NewPayment(wallet(t), req, nil, e.clock.Now(), rand.Reader)
				if err != nil {
					t.Fatal(err)
				}
				c.after(&p)
				if header, err = x402.EncodeHeader(p); err != nil {
					t.Fatal(err)
				}
			case header == "":
				header = e.sign(wallet(t), req, c.mutate)
			}
			resp := e.do(request(path, body, header))
			if resp.StatusCode != c.status {
				t.Fatalf("answered %d %s, want %d", resp.StatusCode, resp.Body, c.status)
			}
			if c.status == 402 {
				pr, err := x402.DecodePaymentRequired(resp.Headers[x402.HeaderPaymentRequired])
				if err != nil || pr.Error == "" || (c.reason != "" && pr.Error != c.reason) {
					t.Fatalf("PAYMENT-REQUIRED %+v %v, want the error %q", pr, err, c.reason)
				}
			}
			if (e.settles() > 0) != c.settled {
				t.Fatalf("%d settlements", e.settles())
			}
			if got := e.fac.Balance(payTo); got != before {
				t.Fatalf("the wallet went from %s to %s units", before, got)
			}
			if jobs := e.generateJobs(); len(jobs) != 0 {
				t.Fatalf("generation jobs %q", jobs)
			}
			recs := e.records()
			if c.junk != "" {
				if len(recs) != 0 || e.junk()[c.junk] != 1 || len(e.fac.Calls()) != 0 || e.claims() != 0 || e.agentOrders() != 0 {
					t.Fatalf("records %+v, junk %v, %d facilitator calls, %d claims, %d orders: want no record, one %s counted, nothing else",
						recs, e.junk(), len(e.fac.Calls()), e.claims(), e.agentOrders(), c.junk)
				}
				return
			}
			if len(recs) != 1 || recs[0].Status != c.audit || recs[0].ErrorDetail == nil || recs[0].TxHash != "" {
				t.Fatalf("x402 records %+v, want one %s", recs, c.audit)
			}
			if c.alert != "" && !strings.Contains(strings.Join(e.alerts.Kinds(), ","), c.alert) {
				t.Fatalf("alerts %v, want %s", e.alerts.Kinds(), c.alert)
			}
			// The dashboard's agent payments: a refusal by the facilitator
			// counts X402Refused; nothing counts as settled.
			refused := 0.0
			if c.audit == audit.StatusVerifyFailed || c.audit == audit.StatusSettleFailed {
				refused = 1
			}
			if m := e.metrics.Counts(); m["X402Refused"] != refused || m["X402Payments"] != 0 {
				t.Fatalf("metrics %v, want X402Refused %v and no X402Payments", m, refused)
			}
			if id := recs[0].SessionID; id != "" {
				if o, _, _ := e.orders.Get(context.Background(), id); o.Status != oracle.StatusPaymentFailed {
					t.Fatalf("order %s is %s, want PAYMENT_FAILED", id, o.Status)
				}
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// TestAForgedSignatureHoldsNoAuthorization: a payment whose signature is
// not its payer's, with a real payer's authorization, is refused as
// invalid_exact_evm_signature with one INVALID record, no order and no
// call to the facilitator (its recovery runs while the claim is written);
// the claim it made is released, so the payer's own payment of that
// authorization then goes through. Fails if the claim is kept, or if
// anything after the claim runs before the recovery has passed.
func TestAForgedSignatureHoldsNoAuthorization(t *testing.T) {
	e := newEnv(t)
	req := e.offer("/x402/query").Accepts[0]
	payer, forger := wallet(t), wallet(t)
	genuine, err := x402.NewPayment(payer, req, nil, e.clock.Now(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	forged := genuine
	n, _ := x402.LookupNetwork(req.Network)
	if forged.Payload.Signature, err = x402.SignAuthorization(forger, n, genuine.Payload.Authorization); err != nil {
		t.Fatal(err)
	}
	send := func(p x402.PaymentPayload) httpapi.Response {
		header, err := x402.EncodeHeader(p)
		if err != nil {
			t.Fatal(err)
		}
		return e.do(request("/x402/query", body, header))
	}

	resp := send(forged)
	pr, _ := x402.DecodePaymentRequired(resp.Headers[x402.HeaderPaymentRequired])
	if resp.StatusCode != http.StatusPaymentRequired || pr.Error != x402.ReasonInvalidSignature {
		t.Fatalf("the forged payment: %d %q, want 402 %s", resp.StatusCode, pr.Error, x402.ReasonInvalidSignature)
	}
	if calls := e.fac.Calls(); len(calls) != 0 {
		t.Fatalf("the facilitator was called for a forged payment: %+v", calls)
	}
	recs := e.records()
	if len(recs) != 1 || recs[0].Status != audit.StatusInvalid || recs[0].SessionID != "" {
		t.Fatalf("records %+v, want one INVALID without an order", recs)
	}

	if resp := send(genuine); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("the payer's own payment after the forgery: %d %s", resp.StatusCode, resp.Body)
	}
	if e.settles() != 1 || len(e.generateJobs()) != 1 {
		t.Fatalf("%d settlements, want the payer's one with its job", e.settles())
	}
}

// TestAnAuthorizationPaysOnce: the same payment sent ten times at once,
// then once more, is settled once and generated once; every other request
// gets a 402 that says the authorization was used, each counts on
// X402Replays, and the ten replays of one payer in the hour are one REPLAY
// record.
func TestAnAuthorizationPaysOnce(t *testing.T) {
	e := newEnv(t)
	req := e.offer("/x402/query").Accepts[0]
	header := e.sign(wallet(t), req, nil)
	codes := make([]int, 10)
	var wg sync.WaitGroup
	for i := range codes {
		wg.Go(func() { codes[i] = e.do(request("/x402/query", body, header)).StatusCode })
	}
	wg.Wait()
	replay := e.do(request("/x402/query", body, header))
	codes = append(codes, replay.StatusCode)
	accepted, refused := 0, 0
	for _, c := range codes {
		switch c {
		case http.StatusAccepted:
			accepted++
		case http.StatusPaymentRequired:
			refused++
		default:
			t.Fatalf("answers %v", codes)
		}
	}
	if accepted != 1 || refused != 10 {
		t.Fatalf("answers %v: want one accepted, ten refused", codes)
	}
	if pr, err := x402.DecodePaymentRequired(replay.Headers[x402.HeaderPaymentRequired]); err != nil || pr.Error != x402.ReasonNonceAlreadyUsed {
		t.Fatalf("the replay's 402 %+v %v", pr, err)
	}
	if n := e.settles(); n != 1 {
		t.Fatalf("%d settlements", n)
	}
	if jobs := e.generateJobs(); len(jobs) != 1 {
		t.Fatalf("generation jobs %q", jobs)
	}
	ok, replays := 0, 0
	for _, r := range e.records() {
		switch r.Status {
		case audit.StatusOK:
			ok++
		case audit.StatusReplay:
			replays++
		}
	}
	if ok != 1 || replays != 1 {
		t.Fatalf("%d OK and %d REPLAY records", ok, replays)
	}
	if e.metrics.Counts()["X402Replays"] != 10 {
		t.Fatalf("metrics %v", e.metrics.Counts())
	}
}

// TestALostSettlementIsNeverUnaccounted: the facilitator settles and the
// answer is lost. The same payload is sent again, which the chain refuses
// (the nonce is used): nothing is generated, the order waits unpaid and
// named, the operator is alerted with the payer and the nonce, the agent
// is told where to poll, and the record says SETTLE_UNCONFIRMED.
func TestALostSettlementIsNeverUnaccounted(t *testing.T) {
	e := newEnv(t)
	req := e.offer("/x402/query").Accepts[0]
	if _, err := e.fac.Apply(fakefacilitator.Control{Settle: fakefacilitator.SettleLose}); err != nil {
		t.Fatal(err)
	}
	key := wallet(t)
	before := e.fac.Balance(payTo)
	resp := e.do(request("/x402/query", body, e.sign(key, req, nil)))
	if resp.StatusCode != http.StatusAccepted || resp.Headers["Location"] == "" {
		t.Fatalf("answered %d %s %v", resp.StatusCode, resp.Body, resp.Headers)
	}
	s, err := x402.DecodePaymentResponse(resp.Headers[x402.HeaderPaymentResponse])
	if err != nil || s.Success || s.ErrorReason != "settlement_unconfirmed" {
		t.Fatalf("PAYMENT-RESPONSE %+v %v", s, err)
	}
	if n := e.settles(); n != 2 {
		t.Fatalf("%d settlement attempts, want 2 (the first, and a retry the chain refuses)", n)
	}
	if got := e.fac.Balance(payTo); got != addUnits(before, 50_000) {
		t.Fatalf("the wallet holds %s: the first settlement moved the money", got)
	}
	if jobs := e.generateJobs(); len(jobs) != 0 {
		t.Fatalf("generation jobs %q for an unconfirmed payment", jobs)
	}
	recs := e.records()
	if len(recs) != 1 || recs[0].Status != audit.StatusSettleUnconfirmed {
		t.Fatalf("records %+v", recs)
	}
	o, _, _ := e.orders.Get(context.Background(), recs[0].SessionID)
	if o.Status != oracle.StatusAwaitingPayment || o.Agent == nil || o.Agent.Payer != x402.AddressOf(key.PubKey()) ||
		o.Agent.Nonce == "" || o.Agent.ValidBefore == "" || !strings.Contains(raised0(e), o.Agent.Nonce) {
		t.Fatalf("order %+v", o)
	}
	raised := e.alerts.Raised()
	if len(raised) != 1 || raised[0].Kind != "X402_SETTLE_UNCONFIRMED" || !strings.Contains(raised[0].Detail, x402.AddressOf(key.PubKey())) {
		t.Fatalf("alerts %+v", raised)
	}
}

// TestASlowSettlementStillDelivers: a settlement that answers late (the
// facilitator waiting for its receipt) is waited for: the order is paid
// and generated, whatever the agent's own patience.
func TestASlowSettlementStillDelivers(t *testing.T) {
	e := newEnv(t)
	req := e.offer("/x402/query").Accepts[0]
	if _, err := e.fac.Apply(fakefacilitator.Control{Settle: fakefacilitator.SettleSlow, SlowMS: ptr(8000)}); err != nil {
		t.Fatal(err)
	}
	resp := e.do(request("/x402/query", body, e.sign(wallet(t), req, nil)))
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("answered %d %s", resp.StatusCode, resp.Body)
	}
	if jobs := e.generateJobs(); len(jobs) != 1 {
		t.Fatalf("generation jobs %q", jobs)
	}
}

// TestTheSmokeWalletsOrderIsSmokeOnATestNetworkOnly: an order the smoke
// test's wallet (X402_SMOKE_PAYER) pays on Base Sepolia is flagged smoke,
// as is its payment record, and expires within a day, so that no figure
// counts it and the smoke test may delete it; the smoke wallet's order on
// Base (real money), or another wallet's on a rail on Base Sepolia alone
// (testnet), is an ordinary one.
func TestTheSmokeWalletsOrderIsSmokeOnATestNetworkOnly(t *testing.T) {
	smokeKey := wallet(t)
	cases := []struct {
		name  string
		both  bool
		key   *secp256k1.PrivateKey
		smoke bool
	}{
		{"the smoke wallet on Base Sepolia beside Base", true, smokeKey, true},
		{"the smoke wallet on Base", true, smokeKey, false},
		{"the smoke wallet on Base Sepolia alone", false, smokeKey, true},
		{"another wallet on Base Sepolia alone", false, wallet(t), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			ctx := context.Background()
			e.h.SmokePayer = x402.AddressOf(smokeKey.PubKey())
			if c.both {
				e.both(smokeKey)
			}
			req := e.offer("/x402/query").Accepts[0]
			if c.smoke && c.both {
				req = onSepolia(req)
			}
			resp := e.do(request("/x402/query", body, e.sign(c.key, req, nil)))
			var pending pendingAnswer
			if resp.StatusCode != http.StatusAccepted || json.Unmarshal([]byte(resp.Body), &pending) != nil {
				t.Fatalf("answered %d %s", resp.StatusCode, resp.Body)
			}
			o, found, err := e.orders.Get(ctx, pending.OrderID)
			if err != nil || !found {
				t.Fatalf("order %v %v", found, err)
			}
			kept := o.Expires.Sub(e.clock.Now())
			if o.Smoke != c.smoke || o.Status != oracle.StatusPaid || (kept > oracle.SmokeRetention) != !c.smoke {
				t.Errorf("order smoke=%v status %s kept %s; want smoke=%v, PAID, kept at most a day only if smoke", o.Smoke, o.Status, kept, c.smoke)
			}
			var recs []audit.Record
			for _, r := range e.records() {
				if r.SessionID == pending.OrderID {
					recs = append(recs, r)
				}
			}
			if len(recs) != 1 || recs[0].Status != audit.StatusOK || recs[0].Smoke != c.smoke {
				t.Errorf("payment records %+v, want one OK with smoke=%v", recs, c.smoke)
			}
			deleted, err := e.orders.DeleteSmoke(ctx, pending.OrderID)
			if deleted != c.smoke || (err == nil) != c.smoke {
				t.Errorf("the smoke test's delete: deleted=%v err=%v, want deleted=%v", deleted, err, c.smoke)
			}
		})
	}
}

// TestTheRailIsOffWithoutAWallet: with no X402_PAY_TO every route is 404.
func TestTheRailIsOffWithoutAWallet(t *testing.T) {
	h := &Handler{Log: obs.NewLogger(&testkit.Buffer{}, "INFO"), Now: time.Now}
	for path := range Routes {
		resp, err := h.Handle(context.Background(), request(path, body, ""))
		if err != nil || resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s: %d %v", path, resp.StatusCode, err)
		}
	}
}

// The samples in events/agent stay valid: a price asked for (402), a
// blank query (400), a header that is no payment (402, refused), the
// browser's preflight (204), and the MCP server's two routes.
func TestSampleEvents(t *testing.T) {
	want := map[string]int{"ask-quick.json": 402, "ask-premium.json": 402, "empty-query.json": 400, "not-a-payment.json": 402, "preflight.json": 204,
		// The MCP server: an unpaid tools/call (its 402 is the result's), a
		// client's try at a stream.
		"mcp-ask-quick.json": 200, "mcp-stream.json": 405}
	files, err := filepath.Glob("../../events/agent/*.json")
	if err != nil || len(files) != len(want) {
		t.Fatalf("samples %v %v: every sample needs an expectation here", files, err)
	}
	e := newEnv(t)
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var r httpapi.Request
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		if resp := e.do(r); resp.StatusCode != want[filepath.Base(file)] {
			t.Errorf("%s: got %d %s", filepath.Base(file), resp.StatusCode, resp.Body)
		}
	}
}

// addUnits is a balance (atomic units, decimal) plus n.
func addUnits(balance string, n int64) string {
	b, ok := new(big.Int).SetString(balance, 10)
	if !ok {
		return "not a balance: " + balance
	}
	return b.Add(b, big.NewInt(n)).String()
}

// raised0 is the first alert's detail, or "".
func raised0(e *env) string {
	if a := e.alerts.Raised(); len(a) > 0 {
		return a[0].Detail
	}
	return ""
}

// TestASettlementPastTheDeadlineIsAnsweredInTime: a settlement that has
// not answered when the request's deadline, less the time kept for the
// answer, comes is abandoned as a lost answer: the order waits, alerted,
// and the agent is answered 202 before the function's time runs out.
func TestASettlementPastTheDeadlineIsAnsweredInTime(t *testing.T) {
	e := newEnv(t)
	// The facilitator settles, then holds its answer until its client
	// gives up.
	e.fac = fakefacilitator.New(fakefacilitator.Options{Clock: e.clock.Now,
		Sleep: func(ctx context.Context, d time.Duration) error { <-ctx.Done(); return ctx.Err() }})
	srv := httptest.NewServer(e.fac)
	t.Cleanup(srv.Close)
	e.h.Facilitator = x402rail.NewFacilitator(srv.URL, srv.Client(), nil)
	if _, err := e.fac.Apply(fakefacilitator.Control{Settle: fakefacilitator.SettleSlow, SlowMS: ptr(60_000)}); err != nil {
		t.Fatal(err)
	}
	// The settlement is abandoned after 2 s; the 4 s kept for the answer
	// are far more than its writes take, even on a loaded machine (half a
	// second was not, under make test).
	e.h.Reserve = 4 * time.Second
	req := e.offer("/x402/query").Accepts[0]
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Second)
	defer cancel()
	resp, err := e.h.Handle(ctx, request("/x402/query", body, e.sign(wallet(t), req, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if ctx.Err() != nil {
		t.Fatal("answered after the request's deadline")
	}
	if resp.StatusCode != http.StatusAccepted || resp.Headers["Location"] == "" {
		t.Fatalf("answered %d %s", resp.StatusCode, resp.Body)
	}
	recs := e.records()
	if len(recs) != 1 || recs[0].Status != audit.StatusSettleUnconfirmed {
		t.Fatalf("records %+v", recs)
	}
	if kinds := strings.Join(e.alerts.Kinds(), ","); !strings.Contains(kinds, "X402_SETTLE_UNCONFIRMED") {
		t.Fatalf("alerts %s", kinds)
	}
}

// TestBesideBaseTestMoneyPaysForTheSmokeTestAlone: with X402_NETWORKS
// both, every route's 402 offers Base alone; a payment on Base Sepolia is
// refused invalid_network with no claim, no order and no call to the
// facilitator, unless its signature proves it the smoke wallet's (a
// stranger naming the smoke wallet as payer is refused too); the smoke
// wallet's settles.
func TestBesideBaseTestMoneyPaysForTheSmokeTestAlone(t *testing.T) {
	smokeKey := wallet(t)
	smoke := x402.AddressOf(smokeKey.PubKey())
	e := newEnv(t)
	e.both(smokeKey)
	for path := range Routes {
		if accepts := e.offer(path).Accepts; len(accepts) != 1 || accepts[0].Network != x402.NetworkBase {
			t.Fatalf("%s offers %+v, want Base alone", path, accepts)
		}
	}
	cases := []struct {
		name   string
		key    *secp256k1.PrivateKey
		mutate func(*x402.PaymentPayload)
		reason string // "" for a payment that settles
	}{
		{"a stranger on Base Sepolia", wallet(t), nil, x402.ReasonInvalidNetwork},
		{"a stranger naming the smoke wallet", wallet(t), func(p *x402.PaymentPayload) {
			p.Payload.Authorization.From = smoke
		}, x402.ReasonInvalidSignature},
		{"the smoke wallet", smokeKey, nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			e.both(smokeKey)
			req := onSepolia(e.offer("/x402/query/premium").Accepts[0])
			resp := e.do(request("/x402/query/premium", body, e.sign(c.key, req, c.mutate)))
			if c.reason == "" {
				if resp.StatusCode != http.StatusAccepted || e.settles() != 1 || len(e.generateJobs()) != 1 {
					t.Fatalf("answered %d %s with %d settlements, want 202, settled and generated", resp.StatusCode, resp.Body, e.settles())
				}
				return
			}
			pr, _ := x402.DecodePaymentRequired(resp.Headers[x402.HeaderPaymentRequired])
			if resp.StatusCode != http.StatusPaymentRequired || pr.Error != c.reason || len(pr.Accepts) != 1 || pr.Accepts[0].Network != x402.NetworkBase {
				t.Fatalf("answered %d %+v, want 402 %s offering Base", resp.StatusCode, pr, c.reason)
			}
			if calls, claims, orders := len(e.fac.Calls()), e.claims(), e.agentOrders(); calls != 0 || claims != 0 || orders != 0 {
				t.Fatalf("%d facilitator calls, %d claims, %d orders; want none", calls, claims, orders)
			}
			if recs := e.records(); len(recs) != 1 || recs[0].Status != audit.StatusInvalid || recs[0].Livemode {
				t.Fatalf("records %+v, want one INVALID on the test network", recs)
			}
		})
	}
}

// TestJunkHeadersWriteNoAuditRecord: headers that are no payment (not
// base64 of JSON) or no well-formed one, sent many times, write no audit
// record, claim nothing and call nobody: each is counted on its metric and
// in the Ledger's count of the day, which the health job reports.
func TestJunkHeadersWriteNoAuditRecord(t *testing.T) {
	e := newEnv(t)
	req := e.offer("/x402/query").Accepts[0]
	valid := func(change func(*x402.PaymentPayload)) string {
		p, err := x402.NewPayment(wallet(t), req, nil, e.clock.Now(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		change(&p)
		h, err := x402.EncodeHeader(p)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	headers := []struct {
		header string
		kind   store.PaymentJunk
	}{
		{"x", store.JunkUndecodable},
		{"!!!!", store.JunkUndecodable},
		{"bm90IGpzb24=", store.JunkUndecodable},
		{strings.Repeat("A", x402.MaxHeaderBytes+4), store.JunkUndecodable},
		{"e30=", store.JunkMalformed},
		{valid(func(p *x402.PaymentPayload) { p.X402Version = 1 }), store.JunkMalformed},
		{valid(func(p *x402.PaymentPayload) { p.Payload.Signature = "0x12" }), store.JunkMalformed},
		{valid(func(p *x402.PaymentPayload) { p.Payload.Authorization.Nonce = "0x12" }), store.JunkMalformed},
	}
	const rounds = 5
	want := map[store.PaymentJunk]int64{}
	for range rounds {
		for _, h := range headers {
			resp := e.do(request("/x402/query", body, h.header))
			if resp.StatusCode != http.StatusPaymentRequired {
				t.Fatalf("%.20q answered %d %s", h.header, resp.StatusCode, resp.Body)
			}
			want[h.kind]++
		}
	}
	if recs := testkit.AuditRecords(t, e.s3, e.f.Ref("AuditBucket")); len(recs) != 0 {
		t.Fatalf("%d audit records for junk, want none: %+v", len(recs), recs[0])
	}
	if got := e.junk(); got[store.JunkUndecodable] != want[store.JunkUndecodable] || got[store.JunkMalformed] != want[store.JunkMalformed] {
		t.Fatalf("the Ledger counts %v, want %v", got, want)
	}
	if m := e.metrics.Counts(); m[obs.X402Undecodable] != float64(want[store.JunkUndecodable]) || m[obs.X402Malformed] != float64(want[store.JunkMalformed]) {
		t.Fatalf("metrics %v, want %v", m, want)
	}
	if calls, claims, orders := len(e.fac.Calls()), e.claims(), e.agentOrders(); calls != 0 || claims != 0 || orders != 0 {
		t.Fatalf("%d facilitator calls, %d claims, %d orders; want none", calls, claims, orders)
	}
	// The day's count is the day's: tomorrow starts again.
	e.clock.Add(24 * time.Hour)
	if got := e.junk(); got[store.JunkUndecodable] != 0 || got[store.JunkMalformed] != 0 {
		t.Fatalf("the next day counts %v, want none", got)
	}
}

// TestARefusedPaymentIsRecordedOncePerPayerReasonAndHour: a well-formed
// payment refused by the local check keeps its INVALID record, one per
// payer (proved by the signature), reason and hour: ten expired payments
// of one payer in an hour are one record; another payer, another reason or
// the next hour is another; forged signatures, whatever payer they name,
// are one record an hour between them.
func TestARefusedPaymentIsRecordedOncePerPayerReasonAndHour(t *testing.T) {
	e := newEnv(t)
	req := e.offer("/x402/query").Accepts[0]
	expired := func(p *x402.PaymentPayload) {
		p.Payload.Authorization.ValidBefore = fmt.Sprint(e.clock.Now().Add(-time.Minute).Unix())
	}
	underpaid := func(p *x402.PaymentPayload) { p.Payload.Authorization.Value = "1" }
	forged := func(p *x402.PaymentPayload) {
		k := wallet(t)
		p.Payload.Authorization.From = x402.AddressOf(k.PubKey()) // signed by another key below
	}
	payer, other := wallet(t), wallet(t)
	send := func(key *secp256k1.PrivateKey, mutate func(*x402.PaymentPayload), n int, reason string) {
		t.Helper()
		for range n {
			resp := e.do(request("/x402/query", body, e.sign(key, req, mutate)))
			pr, _ := x402.DecodePaymentRequired(resp.Headers[x402.HeaderPaymentRequired])
			if resp.StatusCode != http.StatusPaymentRequired || pr.Error != reason {
				t.Fatalf("answered %d %q, want 402 %s", resp.StatusCode, pr.Error, reason)
			}
		}
	}
	count := func() int {
		n := 0
		for _, r := range e.records() {
			if r.Status != audit.StatusInvalid || r.SessionID != "" || r.ErrorDetail == nil {
				t.Fatalf("record %+v, want INVALID with no order and its reason", r)
			}
			n++
		}
		return n
	}
	send(payer, expired, 10, x402.ReasonValidBefore)
	if n := count(); n != 1 {
		t.Fatalf("%d records for ten refusals of one payer and reason in an hour, want 1", n)
	}
	send(other, expired, 3, x402.ReasonValidBefore)
	send(payer, underpaid, 3, x402.ReasonValueMismatch)
	if n := count(); n != 3 {
		t.Fatalf("%d records after another payer and another reason, want 3", n)
	}
	send(payer, forged, 10, x402.ReasonInvalidSignature)
	if n := count(); n != 4 {
		t.Fatalf("%d records after ten forgeries naming ten payers, want 4", n)
	}
	e.clock.Add(time.Hour)
	send(payer, expired, 2, x402.ReasonValidBefore)
	if n := count(); n != 5 {
		t.Fatalf("%d records after the next hour's refusal, want 5", n)
	}
	if calls, claims := len(e.fac.Calls()), e.claims(); calls != 0 || claims != 0 {
		t.Fatalf("%d facilitator calls and %d claims for refused payments", calls, claims)
	}
}

// TestASettlementOfAnotherPaymentIsUnconfirmed: a /settle that answers
// success for another network, another payer or another amount than the
// payment's (the fake facilitator over HTTP, told to) is not this
// payment's settlement: X402_SETTLE_UNCONFIRMED, the order left unpaid
// for the operator, no verdict; an answer that reports the right amount
// settles.
func TestASettlementOfAnotherPaymentIsUnconfirmed(t *testing.T) {
	cases := []struct {
		name      string
		answer    fakefacilitator.SettleAnswer
		confirmed bool
	}{
		{"another network", fakefacilitator.SettleAnswer{Network: string(x402.NetworkBase)}, false},
		{"another payer", fakefacilitator.SettleAnswer{Payer: "0x1111111111111111111111111111111111111111"}, false},
		{"no address for a payer", fakefacilitator.SettleAnswer{Payer: "someone"}, false},
		{"another amount", fakefacilitator.SettleAnswer{Amount: "1"}, false},
		{"the amount paid", fakefacilitator.SettleAnswer{Amount: "50000"}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			req := e.offer("/x402/query").Accepts[0]
			if _, err := e.fac.Apply(fakefacilitator.Control{Answer: &c.answer}); err != nil {
				t.Fatal(err)
			}
			resp := e.do(request("/x402/query", body, e.sign(wallet(t), req, nil)))
			s, err := x402.DecodePaymentResponse(resp.Headers[x402.HeaderPaymentResponse])
			if resp.StatusCode != http.StatusAccepted || err != nil {
				t.Fatalf("answered %d %s, PAYMENT-RESPONSE %v", resp.StatusCode, resp.Body, err)
			}
			jobs := e.generateJobs()
			recs := e.records()
			if c.confirmed {
				if !s.Success || len(jobs) != 1 || len(recs) != 1 || recs[0].Status != audit.StatusOK {
					t.Fatalf("PAYMENT-RESPONSE %+v, %d jobs, records %+v; want settled and generated", s, len(jobs), recs)
				}
				return
			}
			if s.Success || s.ErrorReason != "settlement_unconfirmed" || len(jobs) != 0 {
				t.Fatalf("PAYMENT-RESPONSE %+v, %d generation jobs; want settlement_unconfirmed and none", s, len(jobs))
			}
			if len(recs) != 1 || recs[0].Status != audit.StatusSettleUnconfirmed || !strings.Contains(*recs[0].ErrorDetail, "not this payment's") {
				t.Fatalf("records %+v, want one SETTLE_UNCONFIRMED saying why", recs)
			}
			if o, _, _ := e.orders.Get(context.Background(), recs[0].SessionID); o.Status != oracle.StatusAwaitingPayment {
				t.Fatalf("order %s, want AWAITING_PAYMENT for the operator", o.Status)
			}
			if kinds := e.alerts.Kinds(); len(kinds) != 1 || kinds[0] != "X402_SETTLE_UNCONFIRMED" {
				t.Fatalf("alerts %v, want X402_SETTLE_UNCONFIRMED", kinds)
			}
		})
	}
}

// FuzzParseQuery: a body segmentio's decoder takes in one pass (parseQuery's
// fast path) is one encoding/json's stream takes too (decodeBody, the path
// of every other body), with the same query.
func FuzzParseQuery(f *testing.F) {
	for _, b := range []string{body, `{"query":"x"}}`, `{"query":"x"} {"query":"y"}`, "null", `{"QUERY":"é"}`, `"a string"`,
		`{"query":5}`, `{"query":"a\ud800"}`, "  {\"query\":\"\xff\"}\n", "", `{"query":"x","query":"y"}`, `{"query":null}`} {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var fast paidBody
		if segjson.Unmarshal(b, &fast) != nil {
			return
		}
		slow, err := decodeBody(b)
		if err != nil || (fast.Query == nil) != (slow.Query == nil) || fast.Query != nil && *fast.Query != *slow.Query {
			t.Fatalf("%q: segmentio's decoder took it, encoding/json's stream: %+v, %v", b, slow, err)
		}
	})
}
