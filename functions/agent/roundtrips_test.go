package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/httpapi"
	"42sisters.ai/oracle/shared/x402"
	"42sisters.ai/oracle/shared/x402rail"
)

// The calls of a paid request, as the testkit's AWSCalls names them.
const (
	putItem   = "PutItem"
	getItem   = "GetItem"
	putObject = "PutObject"
	send      = "SendMessage"
	verify    = "facilitator/verify"
	settle    = "facilitator/settle"
)

// counted is an env whose handler's AWS and facilitator calls are noted,
// in the order made, by one AWSCalls.
func counted(t *testing.T) (*env, *testkit.AWSCalls) {
	t.Helper()
	var calls *testkit.AWSCalls
	e := newEnvWith(t, func(cfg *aws.Config) { calls = testkit.NoteCalls(cfg) })
	e.t = t
	// A hold that waits in vain fails the test; it need not wait long.
	calls.HoldLimit = 5 * time.Second
	srv := httptest.NewServer(e.fac)
	t.Cleanup(srv.Close)
	e.h.Facilitator = x402rail.NewFacilitator(srv.URL,
		calls.HTTPClient(func(r *http.Request) string { return "facilitator" + r.URL.Path }, nil), nil)
	return e, calls
}

// thenHold arms holds once the authorization is claimed, so that they
// bear on the calls that follow it only.
type thenHold struct {
	Authorizations
	arm func()
}

func (a thenHold) ClaimAuthorization(ctx context.Context, key, order string, ttl time.Duration) (string, bool, error) {
	owner, first, err := a.Authorizations.ClaimAuthorization(ctx, key, order, ttl)
	a.arm()
	return owner, first, err
}

// A new paid request, over HTTP or as an MCP tool, waits for six round
// trips before it answers (ten before issue 40), seven with a payment
// identifier (eleven), and makes five AWS requests (eight), one more with
// an identifier and one more (two before) when it waits for its verdict:
//
//	[PutItem (the identifier's claim) →] PutItem (the authorization's
//	claim) → PutItem (the order, awaiting payment) beside /verify →
//	/settle → PutItem (the paid claim, the order awaiting payment its
//	condition) → SendMessage (its job) → PutObject (the payment's audit
//	record), beside the wait's first poll (GetItem) when there is a wait.
//
// Gone: the order's write waited for before /verify; the paid claim's
// create, which the order this request made always refused; the read of
// the order at once after its paid claim, which handed back its state;
// the job's record (JobEnqueued), which the generator's claim writes.
// Concurrency is shown, not timed: the order's write and /verify are each
// held until the other is on its way, and the audit record until the
// wait's first read is, so a handler that made them one after the other
// would be held in vain.
func TestAPaidRequestsRoundTrips(t *testing.T) {
	mcp := func(p x402.PaymentPayload) httpapi.Request {
		payment, _ := json.Marshal(p)
		r := request(mcpPath, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"oracle_quick_take",`+
			`"arguments":{"query":"Should I open a bakery on my street?"},"_meta":{"x402/payment":`+string(payment)+`}}}`, "")
		r.Headers["accept"] = "application/json, text/event-stream"
		r.Headers["mcp-protocol-version"] = "2025-11-25"
		return r
	}
	http402 := func(p x402.PaymentPayload) httpapi.Request {
		header, _ := x402.EncodeHeader(p)
		return request("/x402/query", body, header)
	}
	cases := []struct {
		name   string
		build  func(x402.PaymentPayload) httpapi.Request
		id     string
		wait   bool // the request waits for its verdict (X402_WAIT)
		rounds int
		calls  map[string]int
	}{
		{"HTTP", http402, "", false, 6, map[string]int{putItem: 3, send: 1, putObject: 1, verify: 1, settle: 1}},
		{"HTTP with an identifier", http402, payID, false, 7, map[string]int{putItem: 4, send: 1, putObject: 1, verify: 1, settle: 1}},
		{"HTTP waiting for the verdict", http402, "", true, 6, map[string]int{putItem: 3, send: 1, putObject: 1, getItem: 1, verify: 1, settle: 1}},
		{"MCP", mcp, "", false, 6, map[string]int{putItem: 3, send: 1, putObject: 1, verify: 1, settle: 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, calls := counted(t)
			if c.wait {
				// One poll: the wait ends at its first read.
				e.h.Wait = e.h.Poll
				e.h.Sleep = func(_ context.Context, d time.Duration) error { e.clock.Add(d); return nil }
			}
			e.h.Authorizations = thenHold{e.h.Authorizations, func() {
				calls.Hold(putItem, verify)
				calls.Hold(verify, putItem)
				if c.wait {
					calls.Hold(putObject, getItem)
				}
			}}
			p, err := x402.NewPayment(wallet(t), e.offer("/x402/query").Accepts[0], nil, e.clock.Now(), rand.Reader)
			if err != nil {
				t.Fatal(err)
			}
			if c.id != "" {
				p = x402.WithPaymentIdentifier(p, c.id)
			}
			resp := e.do(c.build(p))
			if resp.StatusCode != http.StatusAccepted && !(resp.StatusCode == http.StatusOK && strings.Contains(resp.Body, `"pending"`)) {
				t.Fatalf("answered %d %s", resp.StatusCode, resp.Body)
			}
			if held := calls.Held(); len(held) != 0 {
				t.Errorf("held in vain: %q: a call waited for one the handler makes beside it", held)
			}
			n := map[string]int{}
			for _, op := range calls.Ops() {
				n[op]++
			}
			if !maps.Equal(n, c.calls) {
				t.Errorf("calls %v, want %v", n, c.calls)
			}
			// Calls made together that happened not to overlap would count
			// as two: the held ones always do.
			steps := calls.Steps()
			if len(steps) > c.rounds {
				t.Errorf("%d round trips (%s), want %d", len(steps), testkit.FormatSteps(steps), c.rounds)
			}
			t.Logf("%d round trips: %s", len(steps), testkit.FormatSteps(steps))
			if slices.Contains(calls.Ops(), getItem) != c.wait {
				t.Errorf("the order read %v, want only by the wait's poll", calls.Ops())
			}
		})
	}
}
