package smoke

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"

	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/x402"
)

// AgentRoute is the route the agent stages pay: the quick tier, the
// verdict the Stripe stages buy.
const AgentRoute = "/x402/query"

// pollRoute names the poll address in reports: the whole address holds the
// order's id, which opens its verdict.
const pollRoute = "/x402/result/{id}"

// Agent is the agent rail as the smoke test pays it: on Base Sepolia, with
// the smoke wallet, as any x402 agent would.
type Agent struct {
	// PayTo is the wallet the deployment sells for (X402_PAY_TO); empty,
	// the rail is off and the agent stages do not apply.
	PayTo string
	// Testnet says the rail offers Base Sepolia (X402_NETWORKS testnet or
	// both); on Base alone, paying would cost real money.
	Testnet bool
	// Key is the smoke wallet's (X402_SMOKE_KEY), funded with test USDC;
	// Payer is the address the agent function knows it by
	// (X402_SMOKE_PAYER), which flags its orders smoke.
	Key   *secp256k1.PrivateKey
	Payer string
	// Random draws the authorizations' nonces (crypto/rand when nil).
	Random io.Reader
}

// notApplicable says why the agent stages have nothing to pay, or "".
func (a Agent) notApplicable() string {
	switch {
	case a.PayTo == "":
		return "n/a: the agent rail is off (X402PayTo empty)"
	case !a.Testnet:
		return "n/a: the agent rail offers no test network (X402Networks mainnet)"
	}
	return ""
}

// check is the environment check's part: a rail on the test network needs
// the smoke wallet, known to the agent function by its address.
func (a Agent) check() error {
	if a.notApplicable() != "" {
		return nil
	}
	if a.Key == nil {
		return errors.New("the agent rail is on with Base Sepolia but there is no x402 smoke wallet key (X402_SMOKE_KEY; the X402SmokeKeyArn parameter)")
	}
	wallet := x402.AddressOf(a.Key.PubKey())
	switch {
	case a.Payer == "":
		return fmt.Errorf("no X402_SMOKE_PAYER (the X402SmokePayer parameter): set it to the smoke wallet's address %s, so that the agent function flags its orders smoke", wallet)
	case !x402.SameAddress(a.Payer, wallet):
		return fmt.Errorf("the x402 smoke wallet key is %s's, but X402_SMOKE_PAYER (X402SmokePayer) is %s: its orders would count as a customer's", wallet, oracle.Clip(a.Payer, 64))
	}
	return nil
}

// ParseWalletKey reads a wallet's private key as wallets export it: 64 hex
// digits, with or without 0x. Its errors never repeat the key.
func ParseWalletKey(s string) (*secp256k1.PrivateKey, error) {
	h := strings.TrimSpace(s)
	h = strings.TrimPrefix(strings.TrimPrefix(h, "0x"), "0X")
	b, err := hex.DecodeString(h)
	if err != nil || len(b) != 32 {
		return nil, errors.New("must be a wallet's private key: 64 hex digits, with or without 0x")
	}
	var n secp256k1.ModNScalar
	if overflow := n.SetByteSlice(b); overflow || n.IsZero() {
		return nil, errors.New("is not a secp256k1 private key (zero, or not below the curve's order)")
	}
	return secp256k1.PrivKeyFromBytes(b), nil
}

// agentRun is what one of the agent payments made, for the verdict, the
// retry and the cleanup.
type agentRun struct {
	order     string          // the order's id: it opens the verdict, never reported whole
	tx        string          // the settlement's transaction
	paymentID string          // the payment identifier the payment carried
	verdict   json.RawMessage // the verdict, when the paid call answered it
	poll      string          // the poll address, when the HTTP payment answered 202
	header    string          // the HTTP payment's PAYMENT-SIGNATURE, sent again as a retry
}

// agentAnswer is a paid answer's JSON, whichever it was: the verdict (200,
// or a tool's result with status ready), where it stands (202, pending),
// or a refusal (402 or the payment-required result, 503).
type agentAnswer struct {
	Status  string          `json:"status"`
	OrderID string          `json:"order_id"`
	Verdict json.RawMessage `json:"verdict"`
	Error   string          `json:"error"`
}

// txHash is a transaction's hash as the facilitator reports it.
var txHash = regexp.MustCompile(`^0x[0-9a-fA-F]{64}$`)

// agentPayment pays the deployment's quick verdict on Base Sepolia with
// the smoke wallet twice, as agents would: over HTTP (the 402 and what it
// asks, the paid request, the settlement's PAYMENT-RESPONSE with its
// transaction) and as the MCP tool (the payment-required result, the call
// paid in _meta, the result's x402/payment-response), each payment with a
// payment identifier. The two paid calls go at once: each may wait for
// its verdict (X402_WAIT), and both must fit in the one stage's deadline.
func (r *Runner) agentPayment(ctx context.Context, st *run) (string, error) {
	if na := r.Agent.notApplicable(); na != "" {
		st.agentNA = na
		return na, nil
	}
	httpPay, httpID, err := r.httpOffer(ctx)
	if err != nil {
		return "", err
	}
	st.mcpClient = &mcpClient{r: r}
	mcpPay, mcpID, err := r.mcpOffer(ctx, st.mcpClient)
	if err != nil {
		return "", err
	}
	var wg sync.WaitGroup
	var mcpFig string
	var mcpErr error
	wg.Go(func() {
		mcpFig, mcpErr = safely(ctx, st, func(ctx context.Context, st *run) (string, error) {
			return r.mcpPaid(ctx, st, mcpPay, mcpID)
		})
	})
	httpFig, httpErr := r.httpPaid(ctx, st, httpPay, httpID)
	wg.Wait()
	switch {
	case httpErr != nil && mcpErr != nil:
		return "", fmt.Errorf("%w; and %w", httpErr, mcpErr)
	case httpErr != nil:
		return "", httpErr
	case mcpErr != nil:
		return "", mcpErr
	}
	return httpFig + " mcp: " + mcpFig, nil
}

// agentBody is the paid requests' body, and the paid tool's arguments.
func agentBody() []byte {
	b, _ := json.Marshal(map[string]string{"query": Query}) // a map of strings always encodes
	return b
}

// httpOffer asks AgentRoute without a payment, as an agent first does,
// and signs what its 402 asks.
func (r *Runner) httpOffer(ctx context.Context) (x402.PaymentPayload, string, error) {
	status, h, b, err := r.exchange(ctx, r.HTTP, http.MethodPost, r.APIURL+AgentRoute, AgentRoute, agentBody(), nil)
	if err != nil {
		return x402.PaymentPayload{}, "", err
	}
	if status != http.StatusPaymentRequired {
		return x402.PaymentPayload{}, "", fmt.Errorf("POST %s without a payment → %d %s, want 402", AgentRoute, status, oracle.Clip(string(b), 200))
	}
	pr, err := x402.DecodePaymentRequired(h.Get(x402.HeaderPaymentRequired))
	if err != nil {
		return x402.PaymentPayload{}, "", fmt.Errorf("the 402's %s: %w", x402.HeaderPaymentRequired, err)
	}
	return r.sign(pr, "the 402")
}

// mcpOffer opens the MCP conversation and calls the paid tool without a
// payment, as an agent first does: the answer must be x402's
// payment-required result (isError, the PaymentRequired in
// structuredContent and the same JSON as its text), whose ask is signed.
func (r *Runner) mcpOffer(ctx context.Context, c *mcpClient) (x402.PaymentPayload, string, error) {
	if err := c.initialize(ctx); err != nil {
		return x402.PaymentPayload{}, "", err
	}
	res, err := c.callTool(ctx, r.HTTP, MCPTool, json.RawMessage(agentBody()), nil)
	if err != nil {
		return x402.PaymentPayload{}, "", err
	}
	what := "MCP " + MCPTool + "'s payment-required result"
	var pr x402.PaymentRequired
	switch {
	case !res.IsError || len(res.StructuredContent) == 0:
		return x402.PaymentPayload{}, "", fmt.Errorf("MCP %s without a payment answered isError %v and %s, want x402's payment-required result", MCPTool, res.IsError, res.text())
	case !res.textIsStructured():
		return x402.PaymentPayload{}, "", fmt.Errorf("%s: content[0] is not text holding its structuredContent's JSON", what)
	case json.Unmarshal(res.StructuredContent, &pr) != nil || pr.X402Version != x402.Version:
		return x402.PaymentPayload{}, "", fmt.Errorf("%s is not an x402 version %d PaymentRequired: %s", what, x402.Version, res.text())
	}
	return r.sign(pr, what)
}

// sign pays what pr asks from the smoke wallet, with a new payment
// identifier, which pr must advertise; what names pr in errors.
func (r *Runner) sign(pr x402.PaymentRequired, what string) (x402.PaymentPayload, string, error) {
	if _, ok := pr.Extensions[x402.ExtensionPaymentIdentifier]; !ok {
		return x402.PaymentPayload{}, "", fmt.Errorf("%s does not advertise the %s extension", what, x402.ExtensionPaymentIdentifier)
	}
	req, err := r.requirementOf(pr, what)
	if err != nil {
		return x402.PaymentPayload{}, "", err
	}
	random := r.Agent.Random
	if random == nil {
		random = rand.Reader
	}
	p, err := x402.NewPayment(r.Agent.Key, req, pr.Resource, r.now(), random)
	if err != nil {
		return x402.PaymentPayload{}, "", err
	}
	id, err := newPaymentID(random)
	if err != nil {
		return x402.PaymentPayload{}, "", err
	}
	return x402.WithPaymentIdentifier(p, id), id, nil
}

// newPaymentID draws a payment identifier: smoke_ and 24 hex digits, within
// the extension's 16 to 128 of [A-Za-z0-9_-].
func newPaymentID(random io.Reader) (string, error) {
	b := make([]byte, 12)
	if _, err := io.ReadFull(random, b); err != nil {
		return "", fmt.Errorf("a payment identifier: %w", err)
	}
	return "smoke_" + hex.EncodeToString(b), nil
}

// requirementOf is the Base Sepolia requirement pr offers at the quick
// tier's price to X402PayTo. Beside Base (X402Networks both) the 402
// offers Base alone, and the agent function takes Base Sepolia from the
// smoke wallet only: the same price to the same wallet, on the test
// network.
func (r *Runner) requirementOf(pr x402.PaymentRequired, what string) (x402.PaymentRequirements, error) {
	var req x402.PaymentRequirements
	for _, a := range pr.Accepts {
		if a.Network == x402.NetworkBaseSepolia {
			req = a
		}
	}
	for _, a := range pr.Accepts {
		if req.Network == "" && a.Network == x402.NetworkBase {
			sepolia, _ := x402.LookupNetwork(x402.NetworkBaseSepolia)
			amount, err := strconv.ParseInt(a.Amount, 10, 64)
			if err != nil {
				return req, fmt.Errorf("%s asks %q units on Base: %w", what, oracle.Clip(a.Amount, 40), err)
			}
			req = x402.Requirement(sepolia, amount, a.PayTo, time.Duration(a.MaxTimeoutSeconds)*time.Second)
			req.Scheme = a.Scheme
		}
	}
	price := strconv.FormatInt(oracle.TierQuick.PriceUSDCAtomic(), 10)
	switch {
	case req.Network == "":
		return req, fmt.Errorf("%s offers neither Base Sepolia nor Base", what)
	case req.Scheme != x402.SchemeExact || req.Amount != price || !x402.SameAddress(req.PayTo, r.Agent.PayTo):
		return req, fmt.Errorf("%s asks %q units in scheme %q to %s, want %s in %q to X402PayTo %s",
			what, oracle.Clip(req.Amount, 40), oracle.Clip(req.Scheme, 20), oracle.Clip(req.PayTo, 64), price, x402.SchemeExact, r.Agent.PayTo)
	}
	return req, nil
}

// patient is the HTTP client of a paid call: the agent function waits for
// the verdict (X402_WAIT) before it answers, so the stage's deadline
// bounds the call, not the per-call timeout.
func (r *Runner) patient() *http.Client {
	c := *r.HTTP
	c.Timeout = 0
	return &c
}

// httpPaid sends the signed payment to AgentRoute: 200 with the verdict or
// 202 with where to poll, and a PAYMENT-RESPONSE of a settlement.
func (r *Runner) httpPaid(ctx context.Context, st *run, p x402.PaymentPayload, id string) (string, error) {
	header, err := x402.EncodeHeader(p)
	if err != nil {
		return "", err
	}
	status, h, b, err := r.exchange(ctx, r.patient(), http.MethodPost, r.APIURL+AgentRoute, AgentRoute, agentBody(), map[string]string{x402.HeaderPaymentSignature: header})
	if err != nil {
		return "", err
	}
	var out agentAnswer
	_ = json.Unmarshal(b, &out) // a refusal's body may be anything; the status says more
	if oracle.IsAgentOrder(out.OrderID) {
		st.agent = &agentRun{order: out.OrderID, paymentID: id, header: header} // made: the cleanup deletes it
	}
	if status != http.StatusOK && status != http.StatusAccepted {
		why := oracle.Clip(string(b), 200)
		if out.Error != "" {
			why = oracle.Clip(out.Error, 200)
		}
		return "", fmt.Errorf("POST %s with the payment → %d %s%s", AgentRoute, status, why, faucet(out.Error))
	}
	if st.agent == nil || !strings.HasPrefix(out.OrderID, "x402_test_") {
		return "", fmt.Errorf("the paid answer (%d) names no test-network order", status)
	}
	settle, err := x402.DecodePaymentResponse(h.Get(x402.HeaderPaymentResponse))
	if err != nil {
		return "", fmt.Errorf("the paid answer's %s: %w", x402.HeaderPaymentResponse, err)
	}
	if err := r.settled(settle, x402.HeaderPaymentResponse); err != nil {
		return "", err
	}
	st.agent.tx = settle.Transaction
	if status == http.StatusOK {
		if out.Status != "ready" || len(out.Verdict) == 0 {
			return "", fmt.Errorf("the paid answer is 200 with status %q and no verdict", oracle.Clip(out.Status, 40))
		}
		st.agent.verdict = out.Verdict
	} else {
		poll, err := r.pollAddress(h.Get("Location"), out.OrderID)
		if err != nil {
			return "", err
		}
		st.agent.poll = poll
	}
	return fmt.Sprintf("answer=%d order=%s tx=%s", status, oracle.ShortID(out.OrderID), settle.Transaction), nil
}

// mcpPaid calls the paid tool again with the signed payment in
// _meta["x402/payment"]: its result is the verdict (status ready) or where
// it stands (pending, read with oracle_result), with the settlement in
// _meta["x402/payment-response"].
func (r *Runner) mcpPaid(ctx context.Context, st *run, p x402.PaymentPayload, id string) (string, error) {
	res, err := st.mcpClient.callTool(ctx, r.patient(), MCPTool, json.RawMessage(agentBody()), map[string]any{metaPayment: p})
	if err != nil {
		return "", err
	}
	var out agentAnswer
	_ = json.Unmarshal(res.StructuredContent, &out) // a refusal may have none
	if oracle.IsAgentOrder(out.OrderID) {
		st.mcp = &agentRun{order: out.OrderID, paymentID: id} // made: the cleanup deletes it
	}
	if res.IsError {
		why := res.text()
		if out.Error != "" {
			why = oracle.Clip(out.Error, 200)
		}
		return "", fmt.Errorf("MCP %s with the payment answered an error: %s%s", MCPTool, why, faucet(out.Error))
	}
	if st.mcp == nil || !strings.HasPrefix(out.OrderID, "x402_test_") {
		return "", fmt.Errorf("MCP %s's paid result (status %q) names no test-network order", MCPTool, oracle.Clip(out.Status, 40))
	}
	var settle x402.SettleResponse
	raw, ok := res.Meta[metaPaymentResponse]
	if !ok || json.Unmarshal(raw, &settle) != nil {
		return "", fmt.Errorf("MCP %s's paid result has no settlement in _meta[%q]", MCPTool, metaPaymentResponse)
	}
	if err := r.settled(settle, "MCP _meta["+metaPaymentResponse+"]"); err != nil {
		return "", err
	}
	st.mcp.tx = settle.Transaction
	switch {
	case out.Status == "ready" && len(out.Verdict) > 0:
		st.mcp.verdict = out.Verdict
	case out.Status != "pending":
		return "", fmt.Errorf("MCP %s's paid result has status %q, want ready with the verdict or pending", MCPTool, oracle.Clip(out.Status, 40))
	}
	if !res.textIsStructured() {
		return "", fmt.Errorf("MCP %s's paid result: content[0] is not text holding its structuredContent's JSON", MCPTool)
	}
	return fmt.Sprintf("answer=%s order=%s tx=%s", out.Status, oracle.ShortID(out.OrderID), settle.Transaction), nil
}

// faucet is what to do about a refusal for want of test USDC, or "".
func faucet(reason string) string {
	if strings.Contains(reason, "insufficient") {
		return ": the smoke wallet needs test USDC on Base Sepolia (Circle's faucet, https://faucet.circle.com)"
	}
	return ""
}

// settled checks a settlement is the smoke wallet's payment, settled on
// Base Sepolia with a transaction; where names the settlement in errors.
func (r *Runner) settled(s x402.SettleResponse, where string) error {
	wallet := x402.AddressOf(r.Agent.Key.PubKey())
	if !s.Success || !txHash.MatchString(s.Transaction) || s.Network != x402.NetworkBaseSepolia || !x402.SameAddress(s.Payer, wallet) {
		return fmt.Errorf("%s success=%v error %q transaction %q network %q payer %q; want success, a transaction, %s and %s",
			where, s.Success, oracle.Clip(s.ErrorReason, 80), oracle.Clip(s.Transaction, 80),
			oracle.Clip(string(s.Network), 40), oracle.Clip(s.Payer, 64), x402.NetworkBaseSepolia, wallet)
	}
	return nil
}

// pollAddress is the 202's Location, resolved against the deployment's
// URL, when it is the order's poll address.
func (r *Runner) pollAddress(location, order string) (string, error) {
	base, err := url.Parse(r.APIURL + AgentRoute)
	if err != nil {
		return "", err
	}
	loc, err := url.Parse(location)
	if err != nil || !strings.HasSuffix(loc.Path, "/x402/result/"+order) {
		return "", errors.New("the paid answer is 202 without the order's poll address in Location")
	}
	return base.ResolveReference(loc).String(), nil
}

// agentVerdict waits for each payment's verdict where the agent was told
// to look (the HTTP one at once or at the 202's Location, the MCP one at
// once or from oracle_result), sends the HTTP payment once more under its
// identifier as an agent that lost the answer would, then checks each
// order and its audit records: flagged smoke, the endpoint paid, the
// identifier kept, one settled payment each, and the retry answered from
// the first payment's order with nothing settled again.
func (r *Runner) agentVerdict(ctx context.Context, st *run) (string, error) {
	if st.agentNA != "" {
		return st.agentNA, nil
	}
	verdict, err := r.httpVerdict(ctx, st.agent)
	if err != nil {
		return "", err
	}
	an, err := parseVerdict(verdict, "the agent's verdict")
	if err != nil {
		return "", err
	}
	mcpVerdict, err := r.mcpVerdict(ctx, st)
	if err != nil {
		return "", err
	}
	mcpAn, err := parseVerdict(mcpVerdict, "the MCP tool's verdict")
	if err != nil {
		return "", err
	}
	retry, err := r.agentRetry(ctx, st.agent, verdict)
	if err != nil {
		return "", err
	}
	records, err := r.agentOrder(ctx, st.agent, "the agent order", AgentRoute, 1)
	if err != nil {
		return "", err
	}
	mcpRecords, err := r.agentOrder(ctx, st.mcp, "the MCP agent order", "mcp:"+MCPTool, 0)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("verdict=%s record=x402/OK records=%d retry=%d,same_order,paid_once mcp: verdict=%s record=x402/OK records=%d",
		an.Verdict, records, retry, mcpAn.Verdict, mcpRecords), nil
}

// parseVerdict reads a quick verdict, which must have a summary.
func parseVerdict(raw json.RawMessage, what string) (oracle.Analysis, error) {
	an, err := oracle.ParseAnalysis(oracle.TierQuick, raw)
	if err != nil {
		return an, fmt.Errorf("%s: %w", what, err)
	}
	if an.Summary == "" {
		return an, fmt.Errorf("%s has no summary", what)
	}
	return an, nil
}

// httpVerdict is the HTTP payment's verdict: the 200's, or polled for at
// the 202's Location.
func (r *Runner) httpVerdict(ctx context.Context, a *agentRun) (json.RawMessage, error) {
	if a.verdict != nil {
		return a.verdict, nil
	}
	var verdict json.RawMessage
	last := ""
	err := r.until(ctx, func() (bool, error) {
		status, _, b, err := r.exchange(ctx, r.HTTP, http.MethodGet, a.poll, pollRoute, nil, nil)
		if err != nil {
			return false, err
		}
		var out agentAnswer
		_ = json.Unmarshal(b, &out)
		switch {
		case status == http.StatusAccepted:
			last = out.Status
			return false, nil
		case status == http.StatusOK && out.Status == "ready":
			verdict = out.Verdict
			return true, nil
		}
		return false, fmt.Errorf("GET %s → %d %s", pollRoute, status, oracle.Clip(string(b), 200))
	})
	if err != nil {
		return nil, fmt.Errorf("the verdict at the poll address (last %q): %w", oracle.Clip(last, 40), err)
	}
	return verdict, nil
}

// mcpVerdict is the MCP payment's verdict: the paid result's, or asked of
// oracle_result by its order_id until it is ready.
func (r *Runner) mcpVerdict(ctx context.Context, st *run) (json.RawMessage, error) {
	a := st.mcp
	if a.verdict != nil {
		return a.verdict, nil
	}
	var verdict json.RawMessage
	last := ""
	err := r.until(ctx, func() (bool, error) {
		res, err := st.mcpClient.callTool(ctx, r.HTTP, mcpResultTool, map[string]string{"order_id": a.order}, nil)
		if err != nil {
			return false, err
		}
		var out agentAnswer
		_ = json.Unmarshal(res.StructuredContent, &out)
		switch {
		case res.IsError:
			return false, fmt.Errorf("MCP %s answered an error: %s", mcpResultTool, res.text())
		case out.Status == "ready" && len(out.Verdict) > 0:
			verdict = out.Verdict
			return true, nil
		case out.Status == "pending" || out.Status == "payment_unconfirmed" || out.Status == "preparing_again":
			last = out.Status
			return false, nil
		}
		return false, fmt.Errorf("MCP %s answered status %q", mcpResultTool, oracle.Clip(out.Status, 40))
	})
	if err != nil {
		return nil, fmt.Errorf("the MCP tool's verdict from %s (last %q): %w", mcpResultTool, oracle.Clip(last, 40), err)
	}
	return verdict, nil
}

// agentRetry sends the HTTP payment once more, the very same
// PAYMENT-SIGNATURE and body under its payment identifier: an agent that
// lost the answer. It must be answered from the first payment's order,
// its verdict (ready by now) and the first settlement's transaction;
// agentOrder then finds nothing settled again. It returns the status.
func (r *Runner) agentRetry(ctx context.Context, a *agentRun, verdict json.RawMessage) (int, error) {
	status, h, b, err := r.exchange(ctx, r.HTTP, http.MethodPost, r.APIURL+AgentRoute, AgentRoute, agentBody(), map[string]string{x402.HeaderPaymentSignature: a.header})
	if err != nil {
		return 0, err
	}
	var out agentAnswer
	_ = json.Unmarshal(b, &out)
	if status != http.StatusOK {
		return 0, fmt.Errorf("POST %s with the same payment under its identifier → %d %s, want 200 with the verdict", AgentRoute, status, oracle.Clip(string(b), 200))
	}
	if out.OrderID != a.order {
		return 0, fmt.Errorf("the payment sent again under its identifier was answered with order %q, want the first payment's %s", oracle.ShortID(out.OrderID), oracle.ShortID(a.order))
	}
	if !sameJSON(out.Verdict, verdict) {
		return 0, errors.New("the payment sent again under its identifier was answered with another verdict than its first payment's")
	}
	settle, err := x402.DecodePaymentResponse(h.Get(x402.HeaderPaymentResponse))
	if err != nil {
		return 0, fmt.Errorf("the retry's %s: %w", x402.HeaderPaymentResponse, err)
	}
	if settle.Transaction != a.tx {
		return 0, fmt.Errorf("the retry's %s names transaction %q, want the first payment's %s", x402.HeaderPaymentResponse, oracle.Clip(settle.Transaction, 80), a.tx)
	}
	return status, nil
}

// sameJSON reports whether a and b are the same JSON value.
func sameJSON(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

// agentOrder checks a paid agent order (what names it in errors): flagged
// smoke, x402 in test mode, paid through endpoint with its payment
// identifier kept; and its audit records: every one flagged smoke, one
// settled payment (x402, status OK, its transaction, the endpoint, the
// identifier) and as many retries (RETRY) as were sent. It returns the
// number of records.
func (r *Runner) agentOrder(ctx context.Context, a *agentRun, what, endpoint string, retries int) (int, error) {
	o, found, err := r.Orders.Get(ctx, a.order)
	switch {
	case err != nil:
		return 0, err
	case !found:
		return 0, fmt.Errorf("%s is not in the Orders table", what)
	case !o.Smoke:
		return 0, fmt.Errorf("%s is not flagged smoke: the agent function's X402_SMOKE_PAYER (X402SmokePayer) is not the smoke wallet's address", what)
	case o.Source != oracle.SourceX402 || o.Livemode:
		return 0, fmt.Errorf("%s has source %q and livemode %v, want x402 in test mode", what, o.Source, o.Livemode)
	case o.Agent == nil || o.Agent.Endpoint != endpoint || o.Agent.PaymentID != a.paymentID:
		var got oracle.AgentPayment
		if o.Agent != nil {
			got = *o.Agent
		}
		return 0, fmt.Errorf("%s has endpoint %q and payment identifier %q, want %s and its payment's %s",
			what, oracle.Clip(got.Endpoint, 60), oracle.Clip(got.PaymentID, 130), endpoint, a.paymentID)
	}
	recs, err := r.Audit.Session(ctx, a.order, o.SessionCreated)
	if err != nil {
		return 0, err
	}
	paid, retried := 0, 0
	for _, rec := range recs {
		if !rec.Smoke {
			return 0, fmt.Errorf("%s's %s record %s is not flagged smoke", what, rec.Source, rec.Event)
		}
		if rec.Event != audit.EventX402Payment || rec.Source != audit.SourceX402 {
			continue
		}
		switch rec.Status {
		case audit.StatusOK:
			paid++
			if rec.TxHash != a.tx || rec.Endpoint != endpoint || rec.PaymentID != a.paymentID {
				return 0, fmt.Errorf("%s's x402 record (status OK) has transaction %q, endpoint %q and payment identifier %q, want its payment's",
					what, oracle.Clip(rec.TxHash, 80), oracle.Clip(rec.Endpoint, 60), oracle.Clip(rec.PaymentID, 130))
			}
		case audit.StatusRetry:
			retried++
		}
	}
	switch {
	case paid != 1:
		return 0, fmt.Errorf("the audit log has %d x402 records of %s's payment (status OK, source x402, its transaction), want 1", paid, what)
	case retried != retries:
		return 0, fmt.Errorf("the audit log has %d x402 RETRY records of %s, want %d", retried, what, retries)
	}
	return len(recs), nil
}
