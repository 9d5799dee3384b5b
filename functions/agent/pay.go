package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/obs"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/store"
	"42sisters.ai/oracle/shared/tracing"
	"42sisters.ai/oracle/shared/x402"
)

// payment is one paid request as it goes.
type payment struct {
	started  time.Time
	tier     oracle.Tier
	endpoint string // the route or the MCP tool: the audit record's endpoint
	offer    offer  // what its 402 says
	request  string
	query    string

	payload   x402.PaymentPayload
	accepted  x402.PaymentRequirements
	network   x402.NetworkInfo
	key       string // the authorization's claim
	paymentID string // the client's idempotency key, if it sent one
	order     oracle.Order

	// Once the signature is checked: the payer it proved (EIP-55), and
	// the keyed hashes of the payer and the query that its records name.
	payer, payerHash, queryHash string
}

// proof is what the signature's check found: the payer, with the hashes
// its records name, or why it refused.
type proof struct {
	err                         error
	payer, payerHash, queryHash string
}

// pay takes one payment through its steps, each of which can only refuse
// before money moves: the local checks, the payment identifier's and the
// authorization's claims, the order awaiting payment, /verify; then
// /settle, and only a successful settlement makes the order PAID and
// queues its generation. A payment identifier used before answers from
// its first use's order, with nothing claimed, verified or settled again.
func (h *Handler) pay(ctx context.Context, t *payment, p x402.PaymentPayload) outcome {
	t.payload = p
	accepted, err := x402.CheckTerms(p, h.payable(t.tier), h.Now(), h.SettleRoom)
	if err != nil {
		return h.invalid(ctx, t, err, false)
	}
	t.accepted = accepted
	t.network, _ = x402.LookupNetwork(accepted.Network)
	auth := p.Payload.Authorization
	if h.smokeOnly(t.network) {
		// Test money beside real money pays for the smoke test alone: the
		// signature proves the payer before anything is claimed, ordered
		// or asked of the facilitator.
		if err := x402.CheckSigner(p, accepted); err != nil {
			return h.invalid(ctx, t, err, false)
		}
		if !x402.SameAddress(auth.From, h.SmokePayer) {
			return h.invalid(ctx, t, &x402.Refusal{Reason: x402.ReasonInvalidNetwork, Detail: fmt.Sprintf(
				"%s takes the smoke test's wallet's payments only; this service sells on %s", accepted.Network, h.accepts(t.tier)[0].Network)}, true)
		}
	}
	if t.paymentID, err = x402.PaymentIdentifier(p); err != nil {
		return failure(oracle.Wrap(oracle.CodeInvalid, err, err.Error()+"; nothing was charged"))
	}

	id, err := oracle.NewAgentOrderID(h.Random, !t.network.Testnet)
	if err != nil {
		return failure(err)
	}
	authID, err := x402.AuthorizationID(accepted.Network, accepted.Asset, auth)
	if err != nil {
		// CheckTerms parsed the same fields; this cannot fail after it.
		return failure(err)
	}
	t.key = store.AuthorizationKey(authID)
	// The first claim comes before anything costs money: of concurrent or
	// replayed requests carrying this payment, one goes on. The
	// signature's recovery, the check's costly half (about 150 µs), runs
	// while the claim is on the wire, and nothing after the claim happens
	// until it has passed: a forged signature's claim is released, and it
	// never reaches an order or the facilitator. The hashes the payment's
	// record names are made there too, off the answer's path.
	signed := make(chan proof, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				// A bug, not the payer's doing: said in the log, and the
				// payment refused with nothing kept (its claim released).
				h.Log.ErrorContext(ctx, "the signature's check panicked", "panic", fmt.Sprint(r))
				signed <- proof{err: fmt.Errorf("agent: the signature's check failed: %v", r)}
			}
		}()
		payer, err := x402.Signer(p, accepted)
		if err != nil {
			signed <- proof{err: err}
			return
		}
		signed <- proof{payer: payer, payerHash: h.Hasher.Hash(payer), queryHash: h.Hasher.Hash(t.query)}
	}()
	checked := sync.OnceValue(func() error {
		proof := <-signed
		t.payer, t.payerHash, t.queryHash = proof.payer, proof.payerHash, proof.queryHash
		return proof.err
	})
	if t.paymentID != "" {
		use := store.PaymentUse{Authorization: t.key, Signature: h.Hasher.Hash(p.Payload.Signature),
			Request: h.Hasher.Hash(string(t.tier) + "\n" + t.query), Order: id}
		claimed, first, err := h.PaymentIDs.ClaimPaymentID(ctx, t.paymentID, use, h.Retention)
		if forged := checked(); forged != nil {
			if err == nil && first {
				h.releasePaymentID(ctx, t, id)
			}
			return h.invalid(ctx, t, forged, false)
		}
		if err != nil {
			return failure(err)
		}
		if !first {
			return h.repeated(ctx, t, use, claimed)
		}
	}
	owner, first, err := h.Authorizations.ClaimAuthorization(ctx, t.key, id, h.Retention)
	if forged := checked(); forged != nil {
		if err == nil && first {
			h.release(ctx, t)
		}
		return h.invalid(ctx, t, forged, false)
	}
	if err != nil {
		h.releasePaymentID(ctx, t, id)
		return failure(err)
	}
	if !first {
		// The authorization paid, or is paying, for another request: one
		// that carried no identifier, or another one.
		h.releasePaymentID(ctx, t, id)
		t.order.SessionID = owner
		ctx = obs.WithOrder(ctx, owner)
		h.Metrics.Count(obs.X402Replays, 1)
		h.refused(ctx, t, audit.StatusReplay, x402.ReasonNonceAlreadyUsed, true,
			"authorization already used: this payment was presented before (replay or concurrent duplicate); nothing was settled for it again")
		h.logFor(t).WarnContext(ctx, "x402 authorization presented again; refused")
		return h.required(t, x402.ReasonNonceAlreadyUsed)
	}
	t.order = oracle.Order{
		SessionID: id, Status: oracle.StatusAwaitingPayment, Tier: t.tier, Query: t.query,
		Livemode: !t.network.Testnet, AmountTotal: t.tier.PriceUSDCAtomic(), Currency: oracle.CurrencyUSDC,
		Source: oracle.SourceX402, SessionCreated: t.started.UTC(),
		Agent: &oracle.AgentPayment{Network: string(accepted.Network), Payer: t.payer, Endpoint: t.endpoint,
			Nonce: auth.Nonce, ValidBefore: auth.ValidBefore, PaymentID: t.paymentID},
		// As a Stripe session's smoke flag, it holds in test mode only.
		Smoke: t.network.Testnet && h.SmokePayer != "" && x402.SameAddress(auth.From, h.SmokePayer),
	}
	t.order.Expires = t.started.Add(t.order.Retention(h.Retention))
	// The agent's order begins its trace here: this request's span and
	// every one under it name it.
	ctx = tracing.WithOrder(ctx, id)

	// The facilitator's calls end before the request's deadline, so that a
	// settlement still unanswered then is recorded, alerted and answered,
	// not cut off with the function.
	fctx, cancel := h.facilitatorContext(ctx)
	defer cancel()
	// The order exists, awaiting payment, before the settlement is asked
	// for: a settlement whose answer is lost still has its order. /verify
	// moves no money, so it is asked while the order is written, and
	// nothing goes on until both have answered.
	type claimed struct {
		oracle.Claim
		err error
	}
	ordered := make(chan claimed, 1)
	go func() {
		c, err := h.Orders.ClaimOrder(ctx, t.order, h.Lease)
		ordered <- claimed{c, err}
	}()
	v, err := h.Facilitator.Verify(fctx, p, accepted)
	c := <-ordered
	if c.err != nil {
		h.release(ctx, t)
		h.releasePaymentID(ctx, t, id)
		return failure(c.err)
	}
	// The paid claim replaces this order, made now, as it is.
	t.order.CreatedAt = c.Order.CreatedAt
	if err != nil {
		return h.facilitatorDown(ctx, t, "verify", err)
	}
	if !v.IsValid {
		h.failed(ctx, t, failedVerify+v.InvalidReason)
		h.Metrics.Count(obs.X402Refused, 1)
		h.record(ctx, t, audit.StatusVerifyFailed, "the facilitator's /verify refused it: "+reasonOf(v.InvalidReason, v.InvalidMessage), "")
		return h.required(t, v.InvalidReason)
	}

	s, lost, err := h.settle(fctx, t)
	switch {
	case err != nil || (lost && !s.Success):
		return h.unconfirmed(ctx, t, s, lostWhy(s, err))
	case !s.Success:
		h.failed(ctx, t, failedSettle+s.ErrorReason)
		h.Metrics.Count(obs.X402Refused, 1)
		why := reasonOf(s.ErrorReason, s.ErrorMessage)
		h.record(ctx, t, audit.StatusSettleFailed, "the facilitator's /settle refused it: "+why, "")
		h.Alerts.Raise(ctx, alert.Alert{Severity: alert.Warn, Kind: alert.X402SettleFailed, Session: t.order.SessionID,
			Detail: fmt.Sprintf("settlement refused (%s) on %s; no money moved, nothing was generated", why, accepted.Network)})
		o := h.required(t, s.ErrorReason)
		o.settlement = h.settlementOf(s, t)
		return o
	}
	// A success is this payment's only when it says so: a settlement on
	// another network, of another payer or another amount proves nothing,
	// and the money may have moved for this one or not.
	if err := x402.CheckSettlement(s, accepted, auth); err != nil {
		return h.unconfirmed(ctx, t, s, "the facilitator answered a success that is not this payment's ("+err.Error()+")")
	}
	return h.settled(ctx, t, s)
}

// The failures an order's payment records, with the facilitator's reason
// after them: what a retry under the same payment identifier is answered.
const (
	failedVerify = "verify_refused:"
	failedSettle = "settle_refused:"
)

// invalid answers a payment the local check refused with a 402 whose error
// is the refusal's reason. A malformed payment is counted, not recorded; a
// well-formed one is recorded once per payer, reason and hour (refused).
// proven says that the signature was checked as the payer's.
func (h *Handler) invalid(ctx context.Context, t *payment, err error, proven bool) outcome {
	reason := x402.ReasonInvalidPayload
	var r *x402.Refusal
	if errors.As(err, &r) {
		reason = r.Reason
	}
	if x402.Malformed(reason) {
		return h.junk(ctx, t, store.JunkMalformed, reason)
	}
	h.refused(ctx, t, audit.StatusInvalid, reason, proven, err.Error())
	return h.required(t, reason)
}

// junk answers a header that is no payment to record (undecodable or
// malformed): it is counted, on the metric and in the Ledger's count of
// the day that the health job reports, and nothing else is written. Anyone
// can send one at the API's rate, and an audit record is locked for years.
func (h *Handler) junk(ctx context.Context, t *payment, kind store.PaymentJunk, reason string) outcome {
	metric := obs.X402Malformed
	if kind == store.JunkUndecodable {
		metric = obs.X402Undecodable
	}
	h.Metrics.Count(metric, 1)
	if err := h.Junk.CountPaymentJunk(ctx, kind); err != nil {
		h.logFor(t).ErrorContext(ctx, "counting a refused payment header failed", "kind", string(kind), "error", err.Error())
	}
	return h.required(t, reason)
}

// lostWhy says why a settlement is unconfirmed after an answer was lost.
func lostWhy(s x402.SettleResponse, err error) string {
	why := "the settlement's answer was lost and its retries did not confirm it"
	if err != nil {
		return why + ": " + err.Error()
	}
	if s.ErrorReason != "" {
		why += " (a retry was refused: " + reasonOf(s.ErrorReason, s.ErrorMessage) + ")"
	}
	return why
}

// settle asks the facilitator to settle, sending the same payload again
// when an answer is lost. lost says whether an answer was lost on the way:
// a refusal that follows a lost answer may be the first attempt's
// success seen twice, so it proves nothing.
func (h *Handler) settle(ctx context.Context, t *payment) (s x402.SettleResponse, lost bool, err error) {
	for attempt := 1; ; attempt++ {
		s, err = h.Facilitator.Settle(ctx, t.payload, t.accepted)
		if err == nil {
			return s, lost, nil
		}
		lost = true
		h.logFor(t).WarnContext(ctx, "x402 settlement answer lost", "attempt", attempt, "error", err.Error())
		if attempt >= h.SettleAttempts || h.timeLeft(ctx) < h.Reserve {
			return s, lost, err
		}
		if err := h.Sleep(ctx, time.Duration(attempt)*time.Second); err != nil {
			return s, lost, err
		}
	}
}

// settled makes the order PAID, queues its generation, and answers with
// the verdict when it is ready within the wait, else with where to poll.
func (h *Handler) settled(ctx context.Context, t *payment, s x402.SettleResponse) outcome {
	t.order.Agent.Transaction = s.Transaction
	// The order is this request's alone (it holds the authorization), and
	// awaits payment: the claim moves it on, with no create tried first.
	claimed, err := h.Payer.ClaimAwaited(ctx, h.Orders, t.order)
	if err != nil {
		// Money moved and the order could not be recorded as paid: the
		// operator confirms it by hand; the agent polls meanwhile.
		h.logFor(t).ErrorContext(ctx, "settled, but the order could not be recorded as paid", "error", err.Error())
		return h.unconfirmed(ctx, t, s, fmt.Sprintf("settled in %s, but recording the order as paid failed: %v", s.Transaction, err))
	}
	t.order.Status = oracle.StatusPaid
	// The payment's record is written while the answer waits for the
	// verdict and is encoded, and the answer waits for it: it is the
	// payment's account (outcome.recorded).
	recorded := make(chan struct{})
	go func() {
		defer close(recorded)
		h.record(ctx, t, audit.StatusOK, "", s.Transaction)
	}()
	// The record's call is on the wire before the answer is made: where
	// the function has less than a core (Lambda's 256 MB), the goroutine
	// would otherwise wait for this one to need none.
	runtime.Gosched()
	// The claim said what the order is: PAID, just now, so its verdict is
	// not there to read yet, and the wait's first read is its first poll.
	var read *oracle.Order
	if claimed.Status == oracle.StatusPaid {
		read = &t.order
	}
	o := h.answerRead(ctx, t, h.settlementOf(s, t), read)
	o.recorded = recorded
	// The payment's metric and line are the request's closing words,
	// written after the answer where the traces extension runs (the line
	// names the order through the context); the audit record above is the
	// payment's account.
	tracing.Later(ctx, func() {
		h.Metrics.Count(obs.X402Payments, 1)
		h.Log.LogAttrs(ctx, slog.LevelInfo, "x402 payment settled; generation queued",
			slog.String("endpoint", t.endpoint), slog.Bool("ready", o.ready != nil))
	})
	return o
}

// unconfirmed answers a settlement nobody can confirm (why says what was
// seen): the order waits, unpaid and not generated, for the operator, who
// checks the chain; the agent is given the address to poll.
func (h *Handler) unconfirmed(ctx context.Context, t *payment, s x402.SettleResponse, why string) outcome {
	h.Metrics.Count(obs.X402Unconfirmed, 1)
	h.record(ctx, t, audit.StatusSettleUnconfirmed, why, s.Transaction)
	auth := t.payload.Payload.Authorization
	h.Alerts.Raise(ctx, alert.Alert{Severity: alert.Error, Kind: alert.X402SettleUnconfirmed, Session: t.order.SessionID,
		Detail: fmt.Sprintf("%s. Payer %s, nonce %s on %s (valid before %s): check the chain, then make ops ACTION=x402-confirm or ACTION=x402-void",
			why, checksummed(auth.From), auth.Nonce, t.accepted.Network, unixTime(auth.ValidBefore))})
	o := h.pending(t.order.SessionID, "payment_unconfirmed", "Your payment is being confirmed. Poll the Location address.")
	o.settlement = &x402.SettleResponse{Success: false, ErrorReason: "settlement_unconfirmed",
		Payer: checksummed(auth.From), Transaction: s.Transaction, Network: t.accepted.Network}
	return o
}

// facilitatorDown answers a facilitator that did not answer /verify: no
// money moved, so the authorization is released for the agent to try again.
func (h *Handler) facilitatorDown(ctx context.Context, t *payment, call string, err error) outcome {
	h.failed(ctx, t, "facilitator_down")
	h.release(ctx, t)
	h.releasePaymentID(ctx, t, t.order.SessionID)
	h.record(ctx, t, audit.StatusFacilitatorDown, fmt.Sprintf("the facilitator's /%s did not answer: %v", call, err), "")
	h.Alerts.Raise(ctx, alert.Alert{Severity: alert.Critical, Kind: alert.X402FacilitatorDown,
		Detail: fmt.Sprintf("the facilitator's /%s did not answer an agent's payment on %s: agents cannot pay", call, t.accepted.Network)})
	return outcome{status: http.StatusServiceUnavailable, retryAfter: "30", problem: &problem{
		Error: "facilitator_unavailable", Message: "The payment service is unavailable; nothing was charged. Try again shortly."}}
}

// failed records that the order's payment did not go through.
func (h *Handler) failed(ctx context.Context, t *payment, why string) {
	o := t.order
	o.Status, o.Failure = oracle.StatusPaymentFailed, why
	if _, err := h.Orders.ClaimOrder(ctx, o, h.Lease); err != nil {
		h.logFor(t).ErrorContext(ctx, "recording the failed payment on its order failed", "error", err.Error())
	}
}

// releasePaymentID lets the payment identifier be used again after its
// purchase (order) ended with no money moved: a retry under it is a fresh
// attempt, not an answer from a failure.
func (h *Handler) releasePaymentID(ctx context.Context, t *payment, order string) {
	if t.paymentID == "" {
		return
	}
	if err := h.PaymentIDs.ReleasePaymentID(ctx, t.paymentID, order); err != nil {
		h.logFor(t).ErrorContext(ctx, "releasing the payment identifier's claim failed; a retry under it is answered from this failed attempt", "error", err.Error())
	}
}

// release lets the authorization be presented again, once nothing was
// asked of the facilitator that could move money.
func (h *Handler) release(ctx context.Context, t *payment) {
	if err := h.Authorizations.Release(ctx, t.key); err != nil {
		h.logFor(t).ErrorContext(ctx, "releasing the authorization's claim failed; a retry of it will be refused as a replay", "error", err.Error())
	}
}

// record writes the audit record of one verification outcome of an order
// (AUDIT_TRAIL's x402 form).
func (h *Handler) record(ctx context.Context, t *payment, status audit.Status, detail, tx string) {
	h.Audit.Record(ctx, h.recordOf(t, status, detail, tx), audit.RecordID(t.order.SessionID, audit.NameX402, statusPart(status), t.request))
}

// refused writes the record of a well-formed payment refused for reason
// before anything was settled for it (a local check, a replay): anyone can
// send it again at will, so it is kept once per payer, reason and hour, as
// the verdict API keeps a served verdict's (audit.Hourly). The payer is the
// keyed hash of the address the signature proves (proven, or proved here
// against the payment's own terms), else "unproven": an address no
// signature backs costs nothing to vary.
func (h *Handler) refused(ctx context.Context, t *payment, status audit.Status, reason string, proven bool, detail string) {
	r := h.recordOf(t, status, detail, "")
	payer := "unproven"
	if proven || x402.CheckSigner(t.payload, t.payload.Accepted) == nil {
		payer = strings.TrimPrefix(h.payerHash(t), audit.HashPrefix)
	} else {
		r.Payer = ""
	}
	h.Audit.Record(ctx, r, audit.RecordID("x402-"+payer, audit.NameX402, statusPart(status), reason, audit.Hourly(h.Now())))
}

// recordOf is the x402 record of one outcome.
func (h *Handler) recordOf(t *payment, status audit.Status, detail, tx string) audit.Record {
	now := h.Now()
	r := audit.Record{
		Timestamp: now.UTC(), SessionID: t.order.SessionID, Tier: string(t.tier), QueryHash: t.queryHash,
		LatencyMS: max(now.Sub(t.started).Milliseconds(), 0), Status: status, Source: audit.SourceX402,
		SessionCreated: t.started.UTC(), Event: audit.EventX402Payment, Livemode: !t.network.Testnet,
		AmountTotal: t.tier.PriceUSDCAtomic(), Currency: oracle.CurrencyUSDC, OrderStatus: string(t.order.Status),
		TxHash: tx, Endpoint: t.endpoint, AmountUSDC: usdc(t.tier.PriceUSDCAtomic()), Smoke: t.order.Smoke,
		PaymentID: t.paymentID,
	}
	// Before the check, the network is the payment's claim: kept only when
	// it names one we know, as the detail keeps no address it echoes.
	r.Network = string(t.accepted.Network)
	if _, known := x402.LookupNetwork(t.payload.Accepted.Network); r.Network == "" && known {
		r.Network = string(t.payload.Accepted.Network)
	}
	if r.Network == "" {
		r.Network = "unknown"
	}
	if r.QueryHash == "" {
		r.QueryHash = h.Hasher.Hash(t.query)
	}
	if t.payload.Payload.Authorization.From != "" {
		r.Payer = h.payerHash(t)
	}
	if status.Failure() {
		r.ErrorDetail = audit.Detail(oracle.Clip(audit.WithoutAddresses(detail), 500))
	}
	return r
}

// payerHash is the keyed hash of the payment's payer (authorization.from,
// EIP-55) that its records name: made with the signature's check when it
// passed.
func (h *Handler) payerHash(t *payment) string {
	if t.payerHash != "" {
		return t.payerHash
	}
	return h.Hasher.Hash(checksummed(t.payload.Payload.Authorization.From))
}

// settlementOf is the PAYMENT-RESPONSE of s, naming the network paid on
// when the facilitator did not.
func (h *Handler) settlementOf(s x402.SettleResponse, t *payment) *x402.SettleResponse {
	if s.Network == "" {
		s.Network = t.accepted.Network
	}
	return &s
}

// facilitatorContext bounds the facilitator's calls to the request's
// deadline less Reserve.
func (h *Handler) facilitatorContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if d, ok := ctx.Deadline(); ok {
		return context.WithDeadline(ctx, d.Add(-h.Reserve))
	}
	return context.WithCancel(ctx)
}

// timeLeft is what remains of the request's deadline (the Lambda's), or
// an hour for a call without one.
func (h *Handler) timeLeft(ctx context.Context) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		return time.Until(d)
	}
	return time.Hour
}

func statusPart(s audit.Status) string {
	out := make([]byte, 0, len(s))
	for _, c := range []byte(s) {
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		} else if c == '_' {
			c = '-'
		}
		out = append(out, c)
	}
	return string(out)
}

func reasonOf(reason, message string) string {
	switch {
	case reason == "" && message == "":
		return "no reason given"
	case message == "":
		return reason
	case reason == "":
		return message
	}
	return reason + ": " + message
}

// checksummed writes an address in its EIP-55 form, or as given when it
// is not one.
func checksummed(a string) string {
	if s, err := x402.ChecksumAddress(a); err == nil {
		return s
	}
	return oracle.Clip(a, 64)
}

// usdc is an amount in USDC's atomic units as USDC: the float64 nearest
// the quotient, as an atomic amount (below 2^53) and a million are exact
// and a division rounds once.
func usdc(atomic int64) float64 { return float64(atomic) / 1_000_000 }

func unixTime(s string) string {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return oracle.Clip(s, 32)
	}
	return time.Unix(n, 0).UTC().Format(time.RFC3339)
}

// repeated answers a payment identifier used before (claimed is its first
// use). The same payment for the same request is an agent retrying after
// an answer it lost: it gets its first use's answer, read from the order
// that use made (the verdict, or where to poll for it), with nothing
// claimed, verified or settled again. Anything else under the identifier
// is another purchase reusing it: a 409 that costs nothing.
func (h *Handler) repeated(ctx context.Context, t *payment, use, claimed store.PaymentUse) outcome {
	if !use.Same(claimed) {
		// The record names the order the identifier belongs to.
		t.order.SessionID = claimed.Order
		h.Metrics.Count(obs.X402IdentifierConflicts, 1)
		h.refused(ctx, t, audit.StatusIdentifierConflict, "payment_identifier_conflict", true,
			"the payment identifier was used before with another payment or another request; nothing was settled for this one")
		return failure(oracle.Errorf(oracle.CodeConflict,
			"this payment identifier was used before with another payment or another request; nothing was charged: "+
				"retry with the same payment and body, or send a new identifier"))
	}
	t.order.SessionID = claimed.Order
	ctx = obs.WithOrder(ctx, claimed.Order)
	h.Metrics.Count(obs.X402Retries, 1)
	o, found, err := h.Orders.Get(ctx, claimed.Order)
	if err != nil {
		return failure(err)
	}
	var s *x402.SettleResponse
	if found {
		t.order = o
		if a := o.Agent; a != nil && a.Transaction != "" {
			s = &x402.SettleResponse{Success: true, Transaction: a.Transaction, Network: x402.Network(a.Network), Payer: a.Payer}
		}
	}
	// Kept once per order and hour: the retry can be sent at will.
	h.Audit.Record(ctx, h.recordOf(t, audit.StatusRetry, "", ""),
		audit.RecordID(claimed.Order, audit.NameX402, statusPart(audit.StatusRetry), audit.Hourly(h.Now())))
	if found && o.Status == oracle.StatusPaymentFailed {
		// The first use was refused with money unmoved (a facilitator that
		// did not answer released the identifier): the same refusal.
		reason := o.Failure
		for _, prefix := range []string{failedVerify, failedSettle} {
			reason = strings.TrimPrefix(reason, prefix)
		}
		return h.required(t, reason)
	}
	if found {
		return h.answerRead(ctx, t, s, &o)
	}
	return h.answer(ctx, t, s)
}
