package main

import (
	"context"
	"encoding/json"
	"time"

	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/repair"
	"42sisters.ai/oracle/shared/x402"
)

// verdictAnswer is the verdict as the verdict API serves it to the result
// page, with the order's id and the page's address.
type verdictAnswer struct {
	Status        string          `json:"status"`
	OrderID       string          `json:"order_id"`
	Tier          oracle.Tier     `json:"tier"`
	TierName      string          `json:"tier_name"`
	Query         string          `json:"query"`
	Verdict       json.RawMessage `json:"verdict"`
	CachedAt      *time.Time      `json:"cached_at,omitempty"`
	RetentionDays int             `json:"retention_days"`
	ResultURL     string          `json:"result_url"`
}

// pendingAnswer says where to poll for a verdict not ready yet.
type pendingAnswer struct {
	Status    string `json:"status"`
	OrderID   string `json:"order_id"`
	Message   string `json:"message"`
	PollURL   string `json:"poll_url"`
	ResultURL string `json:"result_url"`
}

// answer waits for the settled order's verdict, within Wait and what the
// request's deadline leaves, and answers 200 with it; a verdict not ready
// by then (or an order held for review) is a 202 with where to poll. A
// stored verdict is checked as every reader checks it (repair.Guard): a
// corrupt one is set aside, alerted once and generated again, and the
// agent polls for the repaired one.
func (h *Handler) answer(ctx context.Context, t *payment, s *x402.SettleResponse) outcome {
	return h.answerRead(ctx, t, s, nil)
}

// answerRead is answer whose first read of the order is read, when the
// caller has just made it.
func (h *Handler) answerRead(ctx context.Context, t *payment, s *x402.SettleResponse, read *oracle.Order) outcome {
	// The wait runs on the handler's clock; the request's deadline is
	// wall-clock time.
	deadline := h.Now().Add(min(h.Wait, h.timeLeft(ctx)-h.Reserve))
	for {
		o, found, err := oracle.Order{}, false, error(nil)
		if read != nil {
			o, found, read = *read, true, nil
		} else if o, found, err = h.Orders.Get(ctx, t.order.SessionID); err != nil {
			h.logFor(t).WarnContext(ctx, "reading the order while waiting for its verdict failed", "error", err.Error())
		}
		if found && o.Status == oracle.StatusReady {
			state, err := h.Verdicts.Check(ctx, o)
			if err != nil {
				// The guard alerted it; the poll address reads it again.
				h.logFor(t).ErrorContext(ctx, "a corrupt verdict could not be set aside", "error", err.Error())
			}
			if err != nil || state != repair.Intact {
				break
			}
			return outcome{settlement: s, ready: h.verdictOf(o)}
		}
		if found && o.Status != oracle.StatusPaid && o.Status != oracle.StatusGenerating {
			break // held, quarantined or failed: the poll address says which
		}
		if !h.Now().Before(deadline) {
			break
		}
		if err := h.Sleep(ctx, h.Poll); err != nil {
			break
		}
	}
	out := h.pending(t.order.SessionID, "pending", "Your verdict is being prepared. Poll the Location address.")
	out.settlement = s
	return out
}

// verdictOf is the answer of o, an order whose verdict is ready and intact.
func (h *Handler) verdictOf(o oracle.Order) *verdictAnswer {
	return &verdictAnswer{
		Status: "ready", OrderID: o.SessionID, Tier: o.Tier, TierName: o.Tier.Name(), Query: o.Query,
		Verdict: json.RawMessage(o.Verdict), CachedAt: o.GeneratedAt, RetentionDays: int(h.Retention / (24 * time.Hour)),
		ResultURL: h.resultURL(o.SessionID),
	}
}

// pending is the 202 answer with where to poll for order's verdict: the
// order's id is the payer's alone to know, and it opens the verdict.
func (h *Handler) pending(order, status, message string) outcome {
	return outcome{pending: &pendingAnswer{Status: status, OrderID: order, Message: message,
		PollURL: h.pollURL(order), ResultURL: h.resultURL(order)}}
}

func (h *Handler) pollURL(id string) string { return h.BaseURL + "/x402/result/" + id }

func (h *Handler) resultURL(id string) string { return h.BaseURL + "/result/" + id }
