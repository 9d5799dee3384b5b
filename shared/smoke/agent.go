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
	"regexp"
	"strconv"
	"strings"
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

// agentRun is what the agent payment made, for the verdict and the cleanup.
type agentRun struct {
	order   string          // the order's id: it opens the verdict, never reported whole
	tx      string          // the settlement's transaction
	verdict json.RawMessage // the verdict, when the paid request answered 200
	poll    string          // the poll address, when it answered 202
}

// agentAnswer is the paid request's JSON answer, whichever it was: the
// verdict (200), where to poll (202), or a refusal (402, 503).
type agentAnswer struct {
	Status  string          `json:"status"`
	OrderID string          `json:"order_id"`
	Verdict json.RawMessage `json:"verdict"`
	Error   string          `json:"error"`
}

// txHash is a transaction's hash as the facilitator reports it.
var txHash = regexp.MustCompile(`^0x[0-9a-fA-F]{64}$`)

// agentPayment pays the deployment's quick verdict on Base Sepolia with
// the smoke wallet, as an agent would: the 402 and what it asks, the paid
// request, and the settlement's PAYMENT-RESPONSE with its transaction.
func (r *Runner) agentPayment(ctx context.Context, st *run) (string, error) {
	if na := r.Agent.notApplicable(); na != "" {
		st.agentNA = na
		return na, nil
	}
	body, err := json.Marshal(map[string]string{"query": Query})
	if err != nil {
		return "", err
	}
	status, h, b, err := r.exchange(ctx, r.HTTP, http.MethodPost, r.APIURL+AgentRoute, AgentRoute, body, nil)
	if err != nil {
		return "", err
	}
	if status != http.StatusPaymentRequired {
		return "", fmt.Errorf("POST %s without a payment → %d %s, want 402", AgentRoute, status, oracle.Clip(string(b), 200))
	}
	pr, err := x402.DecodePaymentRequired(h.Get(x402.HeaderPaymentRequired))
	if err != nil {
		return "", fmt.Errorf("the 402's %s: %w", x402.HeaderPaymentRequired, err)
	}
	var req x402.PaymentRequirements
	for _, a := range pr.Accepts {
		if a.Network == x402.NetworkBaseSepolia {
			req = a
		}
	}
	// Beside Base (X402Networks both) the 402 offers Base alone, and the
	// agent function takes Base Sepolia from the smoke wallet only: the
	// same price to the same wallet, on the test network.
	for _, a := range pr.Accepts {
		if req.Network == "" && a.Network == x402.NetworkBase {
			sepolia, _ := x402.LookupNetwork(x402.NetworkBaseSepolia)
			amount, err := strconv.ParseInt(a.Amount, 10, 64)
			if err != nil {
				return "", fmt.Errorf("the 402 asks %q units on Base: %w", oracle.Clip(a.Amount, 40), err)
			}
			req = x402.Requirement(sepolia, amount, a.PayTo, time.Duration(a.MaxTimeoutSeconds)*time.Second)
			req.Scheme = a.Scheme
		}
	}
	price := strconv.FormatInt(oracle.TierQuick.PriceUSDCAtomic(), 10)
	switch {
	case req.Network == "":
		return "", errors.New("the 402 offers neither Base Sepolia nor Base")
	case req.Scheme != x402.SchemeExact || req.Amount != price || !x402.SameAddress(req.PayTo, r.Agent.PayTo):
		return "", fmt.Errorf("the 402 asks %q units in scheme %q to %s, want %s in %q to X402PayTo %s",
			oracle.Clip(req.Amount, 40), oracle.Clip(req.Scheme, 20), oracle.Clip(req.PayTo, 64), price, x402.SchemeExact, r.Agent.PayTo)
	}
	random := r.Agent.Random
	if random == nil {
		random = rand.Reader
	}
	p, err := x402.NewPayment(r.Agent.Key, req, pr.Resource, r.now(), random)
	if err != nil {
		return "", err
	}
	header, err := x402.EncodeHeader(p)
	if err != nil {
		return "", err
	}
	// The agent function waits for the verdict (X402_WAIT) before it
	// answers: the stage's deadline bounds this call, not the per-call one.
	patient := *r.HTTP
	patient.Timeout = 0
	status, h, b, err = r.exchange(ctx, &patient, http.MethodPost, r.APIURL+AgentRoute, AgentRoute, body, map[string]string{x402.HeaderPaymentSignature: header})
	if err != nil {
		return "", err
	}
	var out agentAnswer
	_ = json.Unmarshal(b, &out) // a refusal's body may be anything; the status says more
	if oracle.IsAgentOrder(out.OrderID) {
		st.agent = &agentRun{order: out.OrderID} // made: the cleanup deletes it
	}
	if status != http.StatusOK && status != http.StatusAccepted {
		why := oracle.Clip(string(b), 200)
		if out.Error != "" {
			why = oracle.Clip(out.Error, 200)
		}
		if strings.Contains(out.Error, "insufficient") {
			why += ": the smoke wallet needs test USDC on Base Sepolia (Circle's faucet, https://faucet.circle.com)"
		}
		return "", fmt.Errorf("POST %s with the payment → %d %s", AgentRoute, status, why)
	}
	if st.agent == nil || !strings.HasPrefix(out.OrderID, "x402_test_") {
		return "", fmt.Errorf("the paid answer (%d) names no test-network order", status)
	}
	settle, err := x402.DecodePaymentResponse(h.Get(x402.HeaderPaymentResponse))
	if err != nil {
		return "", fmt.Errorf("the paid answer's %s: %w", x402.HeaderPaymentResponse, err)
	}
	if wallet := x402.AddressOf(r.Agent.Key.PubKey()); !settle.Success || !txHash.MatchString(settle.Transaction) ||
		settle.Network != x402.NetworkBaseSepolia || !x402.SameAddress(settle.Payer, wallet) {
		return "", fmt.Errorf("%s success=%v error %q transaction %q network %q payer %q; want success, a transaction, %s and %s",
			x402.HeaderPaymentResponse, settle.Success, oracle.Clip(settle.ErrorReason, 80), oracle.Clip(settle.Transaction, 80),
			oracle.Clip(string(settle.Network), 40), oracle.Clip(settle.Payer, 64), x402.NetworkBaseSepolia, wallet)
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

// agentVerdict waits for the verdict where the agent was told to look (the
// 200 answered it at once, else the 202's Location), then checks the order
// is flagged smoke and the audit log holds the payment's x402 record.
func (r *Runner) agentVerdict(ctx context.Context, st *run) (string, error) {
	if st.agentNA != "" {
		return st.agentNA, nil
	}
	a := st.agent
	verdict := a.verdict
	if verdict == nil {
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
			return "", fmt.Errorf("the verdict at the poll address (last %q): %w", oracle.Clip(last, 40), err)
		}
	}
	an, err := oracle.ParseAnalysis(oracle.TierQuick, verdict)
	if err != nil {
		return "", fmt.Errorf("the agent's verdict: %w", err)
	}
	if an.Summary == "" {
		return "", errors.New("the agent's verdict has no summary")
	}
	o, found, err := r.Orders.Get(ctx, a.order)
	switch {
	case err != nil:
		return "", err
	case !found:
		return "", errors.New("the agent order is not in the Orders table")
	case !o.Smoke:
		return "", errors.New("the agent order is not flagged smoke: the agent function's X402_SMOKE_PAYER (X402SmokePayer) is not the smoke wallet's address")
	case o.Source != oracle.SourceX402 || o.Livemode:
		return "", fmt.Errorf("the agent order has source %q and livemode %v, want x402 in test mode", o.Source, o.Livemode)
	}
	recs, err := r.Audit.Session(ctx, a.order, o.SessionCreated)
	if err != nil {
		return "", err
	}
	paid := false
	for _, rec := range recs {
		if !rec.Smoke {
			return "", fmt.Errorf("the agent order's %s record %s is not flagged smoke", rec.Source, rec.Event)
		}
		if rec.Event == audit.EventX402Payment && rec.Source == audit.SourceX402 && rec.Status == audit.StatusOK && rec.TxHash == a.tx {
			paid = true
		}
	}
	if !paid {
		return "", errors.New("the audit log has no x402 record of the payment (status OK, source x402, its transaction)")
	}
	return fmt.Sprintf("verdict=%s record=x402/OK records=%d", an.Verdict, len(recs)), nil
}
