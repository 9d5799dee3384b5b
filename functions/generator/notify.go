package main

import (
	"context"
	"fmt"
	"math/big"

	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/queue"
)

// notify tells the customer what became of their order: the email of kind
// for a Stripe customer. An agent paid over x402 has no address: it reads
// the outcome where it polls, and an outcome that owes it its money back
// (no verdict, for good) is the operator's manual refund, alerted with
// everything the refund needs.
func (h *Handler) notify(ctx context.Context, o oracle.Order, kind oracle.MailKind) error {
	if !oracle.IsAgentOrder(o.SessionID) {
		return h.Mail.Send(ctx, queue.Job{SessionID: o.SessionID, Kind: kind})
	}
	if kind == oracle.MailFailed {
		h.Alerts.Raise(ctx, alert.Alert{Severity: alert.Error, Kind: alert.X402RefundOwed, Session: o.SessionID,
			Detail: refundOwed(o)})
	}
	return nil
}

// refundOwed is what the operator needs to send an agent its money back.
func refundOwed(o oracle.Order) string {
	amount := new(big.Rat).SetFrac64(o.AmountTotal, 1_000_000).FloatString(oracle.USDCDecimals)
	if o.Agent == nil {
		return fmt.Sprintf("no verdict for a settled payment of %s USDC; the order lacks its payment's record: find the payer on the chain", amount)
	}
	return fmt.Sprintf("no verdict for a settled payment: refund %s USDC to %s on %s (transaction %s, paid at %s)",
		amount, o.Agent.Payer, o.Agent.Network, o.Agent.Transaction, o.Agent.Endpoint)
}
