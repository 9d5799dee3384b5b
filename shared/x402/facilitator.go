package x402

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Facilitators' base URLs (the reference's DefaultFacilitatorURL and its
// documentation's CDP URL).
const (
	// PublicTestnetFacilitatorURL is x402.org's facilitator: Base Sepolia,
	// no key.
	PublicTestnetFacilitatorURL = "https://x402.org/facilitator"
	// CDPFacilitatorURL is Coinbase's (CDP) facilitator: Base mainnet and
	// Base Sepolia, authorised with a CDPAuthorizer.
	CDPFacilitatorURL = "https://api.cdp.coinbase.com/platform/v2/x402"
)

// The spec's codes for a refusal that came without one of its own.
const (
	ReasonUnexpectedVerify = "unexpected_verify_error"
	ReasonUnexpectedSettle = "unexpected_settle_error"
)

var (
	// ErrAnswerLost means the facilitator's answer did not arrive or could
	// not be read (transport failure, timeout, 5xx, 408, 429, a body that is
	// not the protocol's): the payment may or may not have moved. The caller
	// must not treat it as a refusal.
	ErrAnswerLost = errors.New("x402: the facilitator's answer was lost")
	// ErrCredentialRefused means the facilitator answered 401 or 403: read
	// the API key again and retry.
	ErrCredentialRefused = errors.New("x402: the facilitator refused our credentials")
)

// maxAnswerBytes bounds a facilitator's answer; a longer one is not the
// protocol's.
const maxAnswerBytes = 1 << 20

// defaultHTTP is used when Facilitator.HTTP is nil: the reference's 30 s.
var defaultHTTP = &http.Client{Timeout: 30 * time.Second}

// Authorizer authorises a request to the facilitator (for CDP, a fresh JWT).
type Authorizer interface {
	Authorize(*http.Request) error
}

// Facilitator is the client of a facilitator's /verify, /settle and
// /supported. Auth is nil for a facilitator that needs no key.
type Facilitator struct {
	URL  string
	HTTP *http.Client
	Auth Authorizer
}

type facilitatorRequest struct {
	X402Version         int                 `json:"x402Version"`
	PaymentPayload      PaymentPayload      `json:"paymentPayload"`
	PaymentRequirements PaymentRequirements `json:"paymentRequirements"`
}

// Verify asks the facilitator whether the payment would settle. A refusal
// (isValid false, over 200 or a 4xx with a reason) is the response with a
// nil error; an error wraps ErrAnswerLost or ErrCredentialRefused.
func (f *Facilitator) Verify(ctx context.Context, p PaymentPayload, r PaymentRequirements) (VerifyResponse, error) {
	status, body, err := f.do(ctx, http.MethodPost, "/verify", facilitatorRequest{p.X402Version, p, r})
	if err != nil {
		return VerifyResponse{}, err
	}
	var env struct {
		IsValid        *bool  `json:"isValid"`
		InvalidReason  string `json:"invalidReason"`
		InvalidMessage string `json:"invalidMessage"`
		Payer          string `json:"payer"`
	}
	parsed := json.Unmarshal(body, &env) == nil
	switch {
	case status == http.StatusOK && parsed && env.IsValid != nil:
		return VerifyResponse{IsValid: *env.IsValid, InvalidReason: env.InvalidReason, InvalidMessage: env.InvalidMessage, Payer: env.Payer}, nil
	case status == http.StatusOK:
		return VerifyResponse{}, f.lost("verify", status, body, nil)
	case parsed && env.InvalidReason != "":
		return VerifyResponse{InvalidReason: env.InvalidReason, InvalidMessage: env.InvalidMessage, Payer: env.Payer}, nil
	default:
		return VerifyResponse{InvalidReason: ReasonUnexpectedVerify, InvalidMessage: fmt.Sprintf("HTTP %d: %s", status, excerpt(body))}, nil
	}
}

// Settle asks the facilitator to move the money. A refusal (success false
// over 200, or a 4xx with a reason) is the response with a nil error; an
// error wraps ErrAnswerLost (the money may have moved: retry with the same
// payment, which cannot settle twice) or ErrCredentialRefused. After a lost
// answer, a retry refused with ReasonNonceAlreadyUsed most likely means the
// first attempt settled.
func (f *Facilitator) Settle(ctx context.Context, p PaymentPayload, r PaymentRequirements) (SettleResponse, error) {
	status, body, err := f.do(ctx, http.MethodPost, "/settle", facilitatorRequest{p.X402Version, p, r})
	if err != nil {
		return SettleResponse{}, err
	}
	var env struct {
		Success      *bool   `json:"success"`
		ErrorReason  string  `json:"errorReason"`
		ErrorMessage string  `json:"errorMessage"`
		Payer        string  `json:"payer"`
		Transaction  string  `json:"transaction"`
		Network      Network `json:"network"`
		Amount       string  `json:"amount"`
	}
	parsed := json.Unmarshal(body, &env) == nil
	answer := SettleResponse{
		ErrorReason: env.ErrorReason, ErrorMessage: env.ErrorMessage, Payer: env.Payer,
		Transaction: env.Transaction, Network: env.Network, Amount: env.Amount,
	}
	switch {
	case status == http.StatusOK && parsed && env.Success != nil && *env.Success && env.Transaction != "":
		answer.Success = true
		return answer, nil
	case status == http.StatusOK && parsed && env.Success != nil && !*env.Success:
		if answer.ErrorReason == "" {
			answer.ErrorReason = ReasonUnexpectedSettle
		}
		return answer, nil
	case status == http.StatusOK:
		// Success without a transaction is as good as no answer.
		return SettleResponse{}, f.lost("settle", status, body, nil)
	case parsed && env.ErrorReason != "":
		return answer, nil
	default:
		return SettleResponse{ErrorReason: ReasonUnexpectedSettle, ErrorMessage: fmt.Sprintf("HTTP %d: %s", status, excerpt(body))}, nil
	}
}

// Supported lists what the facilitator handles.
func (f *Facilitator) Supported(ctx context.Context) (SupportedResponse, error) {
	status, body, err := f.do(ctx, http.MethodGet, "/supported", nil)
	if err != nil {
		return SupportedResponse{}, err
	}
	var s SupportedResponse
	if status != http.StatusOK {
		return SupportedResponse{}, fmt.Errorf("x402: supported: HTTP %d: %s", status, excerpt(body))
	}
	if err := json.Unmarshal(body, &s); err != nil {
		return SupportedResponse{}, f.lost("supported", status, body, err)
	}
	for _, k := range s.Kinds {
		if k.X402Version == 0 || k.Scheme == "" || k.Network == "" {
			return SupportedResponse{}, f.lost("supported", status, body, errors.New("a kind without version, scheme or network"))
		}
	}
	return s, nil
}

// do sends one request and reads the answer. Transport failures, 5xx, 408,
// 429 and any status other than 200 or 4xx are ErrAnswerLost; 401 and 403 are ErrCredentialRefused; any other
// status is returned with its body for the caller to read.
func (f *Facilitator) do(ctx context.Context, method, path string, body any) (int, []byte, error) {
	var reader io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, fmt.Errorf("x402: %s: %w", path, err)
		}
		reader = bytes.NewReader(b)
	}
	url := strings.TrimRight(f.URL, "/") + path
	req, err := http.NewRequestWithContext(ctx, method, url, reader)
	if err != nil {
		return 0, nil, fmt.Errorf("x402: %s: %w", path, err)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if f.Auth != nil {
		if err := f.Auth.Authorize(req); err != nil {
			return 0, nil, fmt.Errorf("x402: %s: authorize: %w", path, err)
		}
	}
	client := f.HTTP
	if client == nil {
		client = defaultHTTP
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("x402: %s %s: %w: %w", method, url, ErrAnswerLost, err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes+1))
	if err != nil {
		return 0, nil, fmt.Errorf("x402: %s %s: HTTP %d: %w: %w", method, url, resp.StatusCode, ErrAnswerLost, err)
	}
	if len(answer) > maxAnswerBytes {
		return 0, nil, fmt.Errorf("x402: %s %s: HTTP %d: %w: answer over %d bytes", method, url, resp.StatusCode, ErrAnswerLost, maxAnswerBytes)
	}
	switch s := resp.StatusCode; {
	case s == http.StatusUnauthorized || s == http.StatusForbidden:
		return 0, nil, fmt.Errorf("x402: %s %s: HTTP %d: %w: %s", method, url, s, ErrCredentialRefused, excerpt(answer))
	case s >= 500 || s == http.StatusRequestTimeout || s == http.StatusTooManyRequests || s < 200 || (s > 200 && s < 400):
		// Only a 200 or a 4xx says what happened; a 202 could be "pending".
		return 0, nil, fmt.Errorf("x402: %s %s: HTTP %d: %w: %s", method, url, s, ErrAnswerLost, excerpt(answer))
	}
	return resp.StatusCode, answer, nil
}

func (f *Facilitator) lost(op string, status int, body []byte, cause error) error {
	if cause == nil {
		cause = errors.New("not the protocol's answer")
	}
	return fmt.Errorf("x402: %s: HTTP %d: %w: %w: %s", op, status, ErrAnswerLost, cause, excerpt(body))
}

// excerpt is a short, single-line piece of an answer for errors and logs.
func excerpt(b []byte) string {
	s := strings.Join(strings.Fields(string(b)), " ")
	if s == "" {
		return "<empty>"
	}
	return clip(s)
}
