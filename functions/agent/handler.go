package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	segjson "github.com/segmentio/encoding/json"

	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/fulfil"
	"42sisters.ai/oracle/shared/httpapi"
	"42sisters.ai/oracle/shared/obs"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/repair"
	"42sisters.ai/oracle/shared/store"
	"42sisters.ai/oracle/shared/x402"
)

// MaxBody bounds the request body as the checkout's does.
const MaxBody = 256 << 10

// Routes are the paid endpoints and the tier each sells.
var Routes = map[string]oracle.Tier{
	"/x402/query":         oracle.TierQuick,
	"/x402/query/full":    oracle.TierFull,
	"/x402/query/premium": oracle.TierStrategy,
}

// Facilitator verifies and settles payments (x402.Facilitator). An error
// means no answer was read: the facilitator was down, or its answer was
// lost on the way.
type Facilitator interface {
	Verify(ctx context.Context, p x402.PaymentPayload, r x402.PaymentRequirements) (x402.VerifyResponse, error)
	Settle(ctx context.Context, p x402.PaymentPayload, r x402.PaymentRequirements) (x402.SettleResponse, error)
}

// Authorizations claims each EIP-3009 authorization once (store.Ledger).
type Authorizations interface {
	ClaimAuthorization(ctx context.Context, key, order string, ttl time.Duration) (owner string, first bool, err error)
	Release(ctx context.Context, key string) error
}

// PaymentIDs claims each x402 payment identifier once (store.Ledger): a
// retry under one is answered from the order its first use made.
type PaymentIDs interface {
	ClaimPaymentID(ctx context.Context, id string, use store.PaymentUse, ttl time.Duration) (claimed store.PaymentUse, first bool, err error)
	ReleasePaymentID(ctx context.Context, id, order string) error
}

// Orders records the order a payment is for (store.Orders).
type Orders interface {
	ClaimOrder(ctx context.Context, want oracle.Order, lease time.Duration) (oracle.Claim, error)
	// ClaimAwaited moves on an order its caller made AWAITING_PAYMENT
	// (fulfil.Awaiter).
	ClaimAwaited(ctx context.Context, want oracle.Order, lease time.Duration) (oracle.Claim, error)
	Get(ctx context.Context, sessionID string) (oracle.Order, bool, error)
}

// JunkCounter counts the payment headers that are no payment to record
// (store.Ledger): a day's count per kind.
type JunkCounter interface {
	CountPaymentJunk(ctx context.Context, kind store.PaymentJunk) error
}

// Payer claims a settled payment's order, which the request made awaiting
// payment through a, and queues its generation (fulfil.Service).
type Payer interface {
	ClaimAwaited(ctx context.Context, a fulfil.Awaiter, want oracle.Order) (fulfil.Result, error)
}

// VerdictGuard checks a stored verdict before it is served, setting a
// corrupt one aside (repair.Guard).
type VerdictGuard interface {
	Check(ctx context.Context, o oracle.Order) (repair.Outcome, error)
}

// Auditor appends audit records, alerting when one cannot be written.
type Auditor interface {
	Record(ctx context.Context, r audit.Record, id string)
}

// Alerter raises operator alerts.
type Alerter interface {
	Raise(ctx context.Context, a alert.Alert)
}

// Counter emits a metric.
type Counter interface {
	Count(name string, n float64)
}

// Handler serves the agent rail: POST /x402/query, /x402/query/full and
// /x402/query/premium. Without a payment it answers 402 with what to pay;
// with one it checks it, claims its authorization, has the facilitator
// verify and settle it, and only then records the paid order and queues
// the same generation a card payment gets, waiting for the verdict within
// the API's time limit.
type Handler struct {
	// Networks are the networks paid on (X402_NETWORKS); none means the
	// rail is off and every route answers 404. With a live network among
	// them, the 402 offers the live ones alone and a test network is
	// accepted from SmokePayer only (offered, smokeOnly).
	Networks []x402.NetworkInfo
	PayTo    string // the wallet paid, EIP-55
	// SmokePayer is the smoke test's wallet, EIP-55 (empty: none): its
	// orders on a test network are flagged smoke, so that no figure counts
	// them and the smoke test may delete them; beside a live network, a
	// test network takes its payments alone.
	SmokePayer string
	// MaxTimeout is the requirement's maxTimeoutSeconds: how long a signed
	// authorization stays valid for us to settle.
	MaxTimeout time.Duration
	// SettleRoom is the least validity an authorization must have left
	// when it arrives, so that it cannot expire before our settlement.
	SettleRoom time.Duration
	// SettleAttempts is how many times a settlement whose answer was lost
	// is sent, with the same payload.
	SettleAttempts int
	// Wait is how long a paid request waits for its verdict before it
	// answers 202 with the address to poll.
	Wait time.Duration
	// Poll is the pause between two reads of the order while waiting.
	Poll time.Duration
	// Reserve is kept from the request's deadline for the answer itself.
	Reserve   time.Duration
	BaseURL   string // the site: resource and result URLs
	Retention time.Duration
	Lease     time.Duration

	Facilitator    Facilitator
	Authorizations Authorizations
	PaymentIDs     PaymentIDs
	Junk           JunkCounter
	Orders         Orders
	Verdicts       VerdictGuard
	Payer          Payer
	Audit          Auditor
	Alerts         Alerter
	Metrics        Counter
	Hasher         *audit.Hasher
	Log            *slog.Logger
	Now            func() time.Time
	Sleep          func(context.Context, time.Duration) error
	Random         io.Reader
	// Docs serves the discovery documents (discovery.go).
	Docs *Discovery

	offersOnce  sync.Once
	routeOffers map[string]offer
	payables    map[oracle.Tier][]x402.PaymentRequirements // made with the offers
	mcp         mcpState                                   // the MCP server (mcp.go)
}

// paidBody is the body of a paid route.
type paidBody struct {
	Query *string `json:"query"`
}

// exposed are the headers a browser's script may read: without
// Access-Control-Expose-Headers it sees none of the payment headers.
const exposed = "PAYMENT-REQUIRED, PAYMENT-RESPONSE, Location, Retry-After"

// Handle answers one request.
func (h *Handler) Handle(ctx context.Context, req httpapi.Request) (httpapi.Response, error) {
	if resp, ok := h.Docs.Serve(req); ok {
		return resp, nil
	}
	path := strings.TrimSuffix(req.RawPath, "/")
	if path == mcpPath && len(h.Networks) > 0 {
		return h.serveMCP(ctx, req), nil
	}
	tier, ok := Routes[path]
	if len(h.Networks) == 0 || !ok {
		return cors(httpapi.JSON(http.StatusNotFound, map[string]string{"error": "not found"})), nil
	}
	if req.RequestContext.HTTP.Method == http.MethodOptions {
		return preflight(), nil
	}
	t := &payment{started: h.Now(), tier: tier, endpoint: path, offer: h.offers()[path], request: requestID(req)}
	body, err := httpapi.Body(req, MaxBody)
	if err != nil {
		return cors(httpapi.Error(ctx, h.Log, err)), nil
	}
	header := httpapi.Header(req, x402.HeaderPaymentSignature)
	// A POST with neither body nor payment is a probe (a catalogue's
	// crawler, an agent asking the price): it gets the 402, whose bazaar
	// extension describes the body. A body that is there is checked
	// first: a bad query is a 400, never a 402 to pay for a refusal.
	if header == "" && len(bytes.TrimSpace(body)) == 0 {
		return cors(h.response(ctx, h.required(t, ""))), nil
	}
	query, err := parseQuery(body)
	if err != nil {
		return cors(httpapi.Error(ctx, h.Log, err)), nil
	}
	t.query = query
	if header == "" {
		return cors(h.response(ctx, h.required(t, ""))), nil
	}
	p, err := x402.DecodePaymentSignatureWith(header, segjson.Unmarshal)
	if err != nil {
		return cors(h.response(ctx, h.junk(ctx, t, store.JunkUndecodable, x402.ReasonInvalidPayload))), nil
	}
	o := h.pay(ctx, t, p)
	// Deferred, so that not even a panic answers before the record.
	defer o.recorded.wait()
	return cors(h.response(ctx, o)), nil
}

// offers are the paid routes' offers by path, made once, with what a
// payment for each tier may match (payable).
func (h *Handler) offers() map[string]offer {
	h.offersOnce.Do(func() {
		h.routeOffers = make(map[string]offer, len(Routes))
		h.payables = make(map[oracle.Tier][]x402.PaymentRequirements, len(Routes))
		for path, tier := range Routes {
			h.routeOffers[path] = h.httpOffer(path, tier)
			h.payables[tier] = h.matchable(tier)
		}
	})
	return h.routeOffers
}

// parseQuery validates the body exactly as the checkout does, before any
// payment is asked for: a bad query is a 400, never a 402.
func parseQuery(body []byte) (string, error) {
	var r paidBody
	// The body a client sends, one JSON value and nothing after it, is
	// decoded in one pass by segmentio's decoder, which decodes as
	// encoding/json does; anything else is read as before by decodeBody,
	// which takes what it took and says what is wrong with the rest
	// (FuzzParseQuery: what the first takes, the second takes the same).
	if segjson.Unmarshal(body, &r) != nil {
		var err error
		if r, err = decodeBody(body); err != nil {
			return "", err
		}
	}
	if r.Query == nil {
		return "", oracle.Errorf(oracle.CodeInvalid, "query is required: describe your idea or question")
	}
	if err := oracle.ValidateQuery(*r.Query); err != nil {
		return "", err
	}
	return *r.Query, nil
}

// decodeBody reads body as a single JSON value, as the checkout does.
func decodeBody(body []byte) (paidBody, error) {
	var r paidBody
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&r); err != nil {
		return r, oracle.Wrap(oracle.CodeInvalid, err, `request body must be a JSON object: {"query": "..."}`)
	}
	if dec.More() {
		return r, oracle.Errorf(oracle.CodeInvalid, "request body must be a single JSON object")
	}
	return r, nil
}

// live reports whether the rail takes real money (Base) on any network.
func (h *Handler) live() bool {
	for _, n := range h.Networks {
		if !n.Testnet {
			return true
		}
	}
	return false
}

// offered are the networks the 402 offers: beside a live network, the live
// ones alone. Test USDC is free from a faucet, so a test network offered
// beside real money would sell the same verdicts for nothing; there it
// pays for the smoke test alone (smokeOnly). A rail on a test network
// alone (testnet: a test deployment, the local stack) offers it to all.
func (h *Handler) offered() []x402.NetworkInfo {
	if !h.live() {
		return h.Networks
	}
	var out []x402.NetworkInfo
	for _, n := range h.Networks {
		if !n.Testnet {
			out = append(out, n)
		}
	}
	return out
}

// smokeOnly reports whether a payment on n is taken from the smoke test's
// wallet alone: a test network beside a live one.
func (h *Handler) smokeOnly(n x402.NetworkInfo) bool { return n.Testnet && h.live() }

// accepts is what a tier costs: one requirement per network offered.
func (h *Handler) accepts(tier oracle.Tier) []x402.PaymentRequirements {
	return requirements(h.offered(), tier, h.PayTo, h.MaxTimeout)
}

// payable is what a payment for tier may match, made once with the offers
// (a checksummed address and a map each): the caller must not change it.
func (h *Handler) payable(tier oracle.Tier) []x402.PaymentRequirements {
	h.offers()
	return h.payables[tier]
}

// matchable is what a payment for tier may match: the offered
// requirements, then those of the networks taken from the smoke test's
// wallet alone.
func (h *Handler) matchable(tier oracle.Tier) []x402.PaymentRequirements {
	out := h.accepts(tier)
	for _, n := range h.Networks {
		if h.smokeOnly(n) {
			out = append(out, x402.Requirement(n, tier.PriceUSDCAtomic(), h.PayTo, h.MaxTimeout))
		}
	}
	return out
}

func requirements(networks []x402.NetworkInfo, tier oracle.Tier, payTo string, maxTimeout time.Duration) []x402.PaymentRequirements {
	out := make([]x402.PaymentRequirements, 0, len(networks))
	for _, n := range networks {
		out = append(out, x402.Requirement(n, tier.PriceUSDCAtomic(), payTo, maxTimeout))
	}
	return out
}

// required is the 402: what to pay for t, in the PAYMENT-REQUIRED header
// and, for people reading it, as the body; reason says why a payment sent
// was refused. Every 402 describes the offer (bazaar) and takes a payment
// identifier (payment-identifier): the offer's 402 encoded once (priced),
// with the reason written where encoding/json writes PaymentRequired's
// error, after the version.
func (h *Handler) required(t *payment, reason string) outcome {
	if reason == "" {
		return outcome{required: t.offer.open}
	}
	// A string always marshals (invalid UTF-8 as U+FFFD), escaped as in
	// the struct.
	quoted, _ := json.Marshal(reason)
	body := versionJSON + `,"error":` + string(quoted) + t.offer.tail
	return outcome{required: &challenge{json: body, header: base64.StdEncoding.EncodeToString([]byte(body))}}
}

// cors lets any origin's script call the rail and read its headers: a
// payment is a signature, not a cookie, so no origin gains anything.
func cors(resp httpapi.Response) httpapi.Response {
	if resp.Headers == nil {
		resp.Headers = map[string]string{}
	}
	resp.Headers["Access-Control-Allow-Origin"] = "*"
	resp.Headers["Access-Control-Expose-Headers"] = exposed
	return resp
}

func preflight() httpapi.Response {
	return cors(httpapi.Response{StatusCode: http.StatusNoContent, Headers: map[string]string{
		"Access-Control-Allow-Methods": "POST, OPTIONS",
		"Access-Control-Allow-Headers": "Content-Type, " + x402.HeaderPaymentSignature,
		"Access-Control-Max-Age":       "600",
	}})
}

// requestID names the request in its audit records: API Gateway's id,
// unique per request (the API never retries one).
func requestID(req httpapi.Request) string {
	if id := req.RequestContext.RequestID; id != "" {
		return strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
				return r
			}
			return '_'
		}, oracle.Clip(id, 64))
	}
	return ""
}

// logFor is the request's logger, naming the order once it has one.
func (h *Handler) logFor(t *payment) *slog.Logger {
	if t.order.SessionID != "" {
		return h.Log.With(obs.Order(t.order.SessionID), "endpoint", t.endpoint)
	}
	return h.Log.With("endpoint", t.endpoint)
}
