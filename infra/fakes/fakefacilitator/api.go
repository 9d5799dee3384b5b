package fakefacilitator

import (
	"errors"
	"io"
	"net/http"
	"time"

	"42sisters.ai/oracle/shared/x402"
)

// handleSupported serves GET /supported.
func (s *Server) handleSupported(w http.ResponseWriter, r *http.Request) {
	call := s.record(r.URL.Path)
	if s.down(w, call) {
		return
	}
	resp := supportedResponse{Extensions: []string{}, Signers: map[string][]string{"eip155:*": {SignerAddress}}}
	for _, n := range networks {
		resp.Kinds = append(resp.Kinds, supportedKind{X402Version: x402.Version, Scheme: x402.SchemeExact, Network: string(n)})
	}
	s.finish(call, "ok", "", http.StatusOK)
	s.writeJSON(w, http.StatusOK, resp)
}

// handleVerify serves POST /verify: the checks, nothing moved.
func (s *Server) handleVerify(w http.ResponseWriter, r *http.Request) {
	call := s.record(r.URL.Path)
	if s.down(w, call) {
		return
	}
	_, t, no := s.read(w, r, call)
	if no == nil {
		s.mu.Lock()
		no = s.onChain(t)
		s.mu.Unlock()
	}
	if no != nil {
		s.finish(call, no.reason, "", no.status)
		s.writeJSON(w, no.status, verifyResponse{InvalidReason: no.reason, InvalidMessage: no.message, Payer: no.payer})
		return
	}
	s.finish(call, "valid", "", http.StatusOK)
	s.writeJSON(w, http.StatusOK, verifyResponse{IsValid: true, Payer: t.from})
}

// handleSettle serves POST /settle: the checks again, then the transfer,
// shaped by the Control's settle mode.
func (s *Server) handleSettle(w http.ResponseWriter, r *http.Request) {
	call := s.record(r.URL.Path)
	if s.down(w, call) {
		return
	}
	req, t, no := s.read(w, r, call)
	if no != nil {
		var network x402.Network
		if req != nil && req.PaymentRequirements != nil {
			network = req.PaymentRequirements.Network
		}
		s.finish(call, no.reason, "", no.status)
		s.writeJSON(w, no.status, settleResponse{ErrorReason: no.reason, ErrorMessage: no.message, Payer: no.payer, Network: string(network)})
		return
	}
	// The checks and the transfer are one step, as one transaction on a
	// chain is: two settles of one authorization cannot both pass.
	s.mu.Lock()
	mode, slow, shape := s.control.Settle, time.Duration(s.control.SlowMS)*time.Millisecond, s.control.Answer
	no = s.onChain(t)
	tx := ""
	switch {
	case no != nil:
	case mode == SettleRefuse:
		// The transaction is mined and reverts: a hash, nothing moved.
		tx = s.txHash(t)
		no = refuse(reasonTransactionFailed, t.from, "transaction %s reverted", tx)
	default:
		tx = s.txHash(t)
		s.transfer(t)
	}
	s.mu.Unlock()
	if no != nil {
		s.finish(call, no.reason, tx, http.StatusOK)
		s.writeJSON(w, http.StatusOK, settleResponse{ErrorReason: no.reason, ErrorMessage: no.message, Payer: t.from, Transaction: tx, Network: string(t.network)})
		return
	}
	s.log.Info("fakefacilitator: settled", "network", t.network, "from", t.from, "to", t.to, "value", t.value.String(), "transaction", tx, "mode", mode)
	switch mode {
	case SettleLose:
		// Settled on the chain, the answer lost on the way back.
		s.finish(call, "settled", tx, http.StatusBadGateway)
		http.Error(w, "502 Bad Gateway", http.StatusBadGateway)
		return
	case SettleSlow:
		if err := s.sleep(r.Context(), slow); err != nil {
			// The client gave up; the money moved all the same.
			s.finish(call, "settled", tx, 0)
			return
		}
	}
	s.finish(call, "settled", tx, http.StatusOK)
	answer := settleResponse{Success: true, Payer: t.from, Transaction: tx, Network: string(t.network)}
	shape.shape(&answer)
	s.writeJSON(w, http.StatusOK, answer)
}

// read reads and checks the body of a /verify or /settle request and
// records the payment it names in call. On a refusal, the request is nil
// unless the body was JSON.
func (s *Server) read(w http.ResponseWriter, r *http.Request, call *Call) (*request, *transfer, *refusal) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		if errors.As(err, new(*http.MaxBytesError)) {
			return nil, nil, badRequest(reasonInvalidPayload, "the body is over %d bytes", maxBody)
		}
		return nil, nil, badRequest(reasonInvalidPayload, "read the body: %v", err)
	}
	req, no := decodeRequest(body)
	if req != nil {
		s.describe(call, req)
	}
	if no != nil {
		return req, nil, no
	}
	t, no := check(req, s.now())
	return req, t, no
}

// down answers 503 when the fake is down, as a load balancer in front of
// a stopped service does, and reports whether it did.
func (s *Server) down(w http.ResponseWriter, call *Call) bool {
	s.mu.Lock()
	down := s.control.Down
	s.mu.Unlock()
	if down {
		s.finish(call, "down", "", http.StatusServiceUnavailable)
		http.Error(w, "503 Service Unavailable", http.StatusServiceUnavailable)
	}
	return down
}
