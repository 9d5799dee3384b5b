package main

import (
	"context"
	"net/http"

	"42sisters.ai/oracle/shared/httpapi"
	"42sisters.ai/oracle/shared/x402"
)

// outcome is how one purchase ended, whichever transport carried it: the
// HTTP rail answers it as a response (response), the MCP server as a tool's
// result. Exactly one of err, required, ready, pending and problem is set.
type outcome struct {
	// err is a refusal with an oracle code (400, 409, 413) or a fault of
	// ours (500), said in the log.
	err error
	// required is the 402, encoded: what to pay, and why a payment sent
	// was refused.
	required *challenge
	// ready is the verdict (200).
	ready *verdictAnswer
	// pending says where to poll for a verdict not ready yet (202).
	pending *pendingAnswer
	// problem is a refusal that is no one's fault, with its status (503).
	problem *problem
	status  int
	// settlement is what the facilitator said of the payment's settlement
	// (PAYMENT-RESPONSE), when it was asked or is known.
	settlement *x402.SettleResponse
	retryAfter string
	// recorded is the payment's audit record being written, when it is:
	// the transport encodes its answer meanwhile and answers after it.
	recorded written
}

// written closes once a payment's audit record is written; nil when none
// is being written.
type written <-chan struct{}

// wait returns once the record is written: it is the payment's account,
// and no answer leaves before it.
func (w written) wait() {
	if w != nil {
		<-w
	}
}

// problem is an answer's error and what to do about it.
type problem struct {
	Error   string `json:"error"`
	Message string `json:"message"`
}

func failure(err error) outcome { return outcome{err: err} }

// response is the outcome as the HTTP rail answers it.
func (h *Handler) response(ctx context.Context, o outcome) httpapi.Response {
	var resp httpapi.Response
	switch {
	case o.err != nil:
		return httpapi.Error(ctx, h.Log, o.err)
	case o.required != nil:
		resp = httpapi.JSON(http.StatusPaymentRequired, httpapi.Encoded(o.required.json))
		resp.Headers[x402.HeaderPaymentRequired] = o.required.header
	case o.ready != nil:
		resp = httpapi.JSON(http.StatusOK, o.ready)
	case o.pending != nil:
		resp = httpapi.JSON(http.StatusAccepted, o.pending)
		resp.Headers["Location"] = o.pending.PollURL
		if o.retryAfter == "" {
			o.retryAfter = "5"
		}
	default:
		resp = httpapi.JSON(o.status, o.problem)
	}
	if o.retryAfter != "" {
		resp.Headers["Retry-After"] = o.retryAfter
	}
	if o.settlement != nil {
		if header, err := x402.EncodeHeader(o.settlement); err == nil {
			resp.Headers[x402.HeaderPaymentResponse] = header
		}
	}
	return resp
}
