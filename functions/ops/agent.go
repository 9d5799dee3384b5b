package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"42sisters.ai/oracle/shared/ascii"
	"42sisters.ai/oracle/shared/fulfil"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/store"
)

// Payer records a settled payment's order and queues its generation
// (fulfil.Service).
type Payer interface {
	ClaimPaid(ctx context.Context, want oracle.Order) (fulfil.Result, error)
}

// Claimer records an order's state by a claim (store.Orders).
type Claimer interface {
	ClaimOrder(ctx context.Context, want oracle.Order, lease time.Duration) (oracle.Claim, error)
}

// validTx reports a transaction hash on an EVM chain: 0x and 64 hex digits.
func validTx(tx string) bool {
	digits, ok := strings.CutPrefix(tx, "0x")
	return ok && hexDigits.Run(digits, 64, 64)
}

var hexDigits = ascii.NewSet("0-9a-fA-F")

// agentOrder resolves r's order and checks it is an agent's awaiting the
// confirmation of its settlement.
func (h *Handler) agentAwaiting(ctx context.Context, r Request) (oracle.Order, error) {
	o, err := h.resolve(ctx, r)
	if err != nil {
		return o, err
	}
	if !oracle.IsAgentOrder(o.SessionID) || o.Agent == nil {
		return o, refuse("%s is no agent's order: only an order paid over x402 waits for its settlement's confirmation", oracle.ShortID(o.SessionID))
	}
	return o, nil
}

// x402Confirm records the settlement the operator found on the chain for
// an agent order whose settlement's answer was lost
// (X402_SETTLE_UNCONFIRMED): the order becomes PAID with that
// transaction, and its verdict is generated and served where the agent
// polls. The same request again changes nothing.
func (h *Handler) x402Confirm(ctx context.Context, r Request) (Answer, error) {
	o, err := h.agentAwaiting(ctx, r)
	if err != nil {
		return Answer{}, err
	}
	tx := strings.TrimSpace(r.TX)
	if !validTx(tx) {
		return Answer{}, refuse("name the settlement: tx is its transaction hash (0x and 64 hex digits), as the network's explorer shows it for the payer's nonce")
	}
	switch {
	case o.Status != oracle.StatusAwaitingPayment && strings.EqualFold(o.Agent.Transaction, tx) && o.Status.Paid():
		return Answer{Message: fmt.Sprintf("%s is already %s with %s: nothing more to confirm", oracle.ShortID(o.SessionID), o.Status, tx)}, nil
	case o.Status != oracle.StatusAwaitingPayment:
		return Answer{}, refuse("%s is %s: only an agent order awaiting its settlement's confirmation is confirmed", oracle.ShortID(o.SessionID), o.Status)
	}
	want := o
	agent := *o.Agent
	agent.Transaction = tx
	want.Agent = &agent
	res, err := h.Payer.ClaimPaid(ctx, want)
	if err != nil {
		return Answer{}, err
	}
	if err := h.record(ctx, r, o, "confirmed "+tx); err != nil {
		return Answer{}, err
	}
	return Answer{Changed: res.Outcome == oracle.Claimed, Message: fmt.Sprintf("%s is PAID with %s; its verdict is being generated and will be served where the agent polls", oracle.ShortID(o.SessionID), tx)}, nil
}

// x402Void closes an agent order whose settlement never happened (the
// operator found no transfer for the payer's nonce and its authorization
// has expired): the order's payment failed, and nothing is generated.
func (h *Handler) x402Void(ctx context.Context, r Request) (Answer, error) {
	o, err := h.agentAwaiting(ctx, r)
	if err != nil {
		return Answer{}, err
	}
	switch o.Status {
	case oracle.StatusPaymentFailed:
		return Answer{Message: fmt.Sprintf("%s is already %s: nothing more to void", oracle.ShortID(o.SessionID), o.Status)}, nil
	case oracle.StatusAwaitingPayment:
	default:
		return Answer{}, refuse("%s is %s: only an agent order awaiting its settlement's confirmation is voided", oracle.ShortID(o.SessionID), o.Status)
	}
	want := o
	want.Status, want.Failure = oracle.StatusPaymentFailed, "voided_by_operator"
	c, err := h.Claims.ClaimOrder(ctx, want, time.Minute)
	if err != nil {
		return Answer{}, err
	}
	if err := h.record(ctx, r, o, "voided"); err != nil {
		return Answer{}, err
	}
	return Answer{Changed: c.Outcome == oracle.Claimed, Message: fmt.Sprintf("%s is PAYMENT_FAILED: no settlement, nothing generated", oracle.ShortID(o.SessionID))}, nil
}

// refundAgent records the refund the operator sent an agent from the
// pay-to wallet (X402_REFUND_OWED): no Stripe stands behind the order, so
// the transaction that refunded it is the refund's id.
func (h *Handler) refundAgent(ctx context.Context, r Request, o oracle.Order) (Answer, error) {
	tx := strings.TrimSpace(r.TX)
	if !validTx(tx) {
		return Answer{}, refuse("%s was paid over x402: send %s back to %s on %s from the pay-to wallet, then name that transfer: tx is its hash (0x and 64 hex digits)",
			oracle.ShortID(o.SessionID), usdc(o.AmountTotal), agentPayer(o), agentNetwork(o))
	}
	_, recorded, err := fulfil.Refunded(ctx, h.Orders, h.Mail, o.SessionID, store.Refund{ID: tx, Amount: o.AmountTotal, By: store.RefundedByOperator})
	if err != nil {
		return Answer{}, err
	}
	if err := h.record(ctx, r, o, "refunded "+tx); err != nil {
		return Answer{}, err
	}
	return Answer{Changed: recorded, Message: fmt.Sprintf("%s: refunded %s USDC in %s; the order is REFUNDED", oracle.ShortID(o.SessionID), usdc(o.AmountTotal), tx)}, nil
}

func usdc(atomic int64) string { return fmt.Sprintf("%d.%06d", atomic/1_000_000, atomic%1_000_000) }

func agentPayer(o oracle.Order) string {
	if o.Agent == nil {
		return "the payer"
	}
	return o.Agent.Payer
}

func agentNetwork(o oracle.Order) string {
	if o.Agent == nil {
		return "its network"
	}
	return o.Agent.Network
}

// validPrefix reports the start of an agent order's id, as alerts and list
// name it (oracle.ShortID), which resolve looks up like a session's: its
// mode and 1 to 32 letters and digits.
func validPrefix(id string) bool {
	for _, mode := range [...]string{"x402_test_", "x402_live_"} {
		if rest, ok := strings.CutPrefix(id, mode); ok {
			return alphanumeric.Run(rest, 1, 32)
		}
	}
	return false
}

var alphanumeric = ascii.NewSet("A-Za-z0-9")

// unixUTC writes Unix seconds as an RFC 3339 time, or as given.
func unixUTC(s string) string {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return s
	}
	return time.Unix(n, 0).UTC().Format(time.RFC3339)
}
