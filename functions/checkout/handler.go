package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"

	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/ascii"
	"42sisters.ai/oracle/shared/httpapi"
	"42sisters.ai/oracle/shared/obs"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/stripex"
	"42sisters.ai/oracle/shared/tracing"
)

// MaxBody bounds the request: the longest query, JSON-escaped as \uXXXX
// (6 bytes per UTF-16 unit), fits with room to spare.
const MaxBody = 256 << 10

// SessionCreator creates Stripe Checkout Sessions.
type SessionCreator interface {
	CreateCheckoutSession(ctx context.Context, r stripex.CheckoutRequest) (stripex.CheckoutSession, error)
}

// Alerter raises operator alerts.
type Alerter interface {
	Raise(ctx context.Context, a alert.Alert)
}

// Handler serves POST (and the CORS preflight OPTIONS) /api/checkout.
type Handler struct {
	Stripe SessionCreator
	// Smoke, when test mode is configured, serves the smoke test's signed
	// requests: a test-mode session made out to an address no person reads.
	Smoke   *Smoke
	BaseURL string // the site, for Stripe's redirect URLs
	CORS    httpapi.CORS
	Alerts  Alerter
	Log     *slog.Logger
}

// request is the checkout body. Unknown fields (a smuggled "amount" or
// "price") are ignored: the price comes only from the tier table.
type request struct {
	Tier     *string `json:"tier"`
	Query    *string `json:"query"`
	Referral string  `json:"referral_code"`
}

// referralChars make a referral code, 1 to 64 of them.
var referralChars = ascii.NewSet("A-Za-z0-9_-")

// Handle validates the request and answers {"url": <hosted checkout page>}.
// Invalid input is refused before Stripe is called.
func (h *Handler) Handle(ctx context.Context, req httpapi.Request) (httpapi.Response, error) {
	if req.RequestContext.HTTP.Method == http.MethodOptions {
		return h.CORS.Preflight(req), nil
	}
	if httpapi.Header(req, stripex.SmokeHeader) != "" {
		return h.smoke(ctx, req), nil
	}
	if !h.CORS.Allowed(req) {
		return httpapi.JSON(http.StatusForbidden, map[string]string{"error": "origin not allowed"}), nil
	}
	url, err := h.checkout(ctx, req)
	if err != nil {
		return h.CORS.Apply(req, httpapi.Error(ctx, h.Log, err)), nil
	}
	return h.CORS.Apply(req, httpapi.JSON(http.StatusOK, map[string]string{"url": url})), nil
}

func (h *Handler) checkout(ctx context.Context, req httpapi.Request) (string, error) {
	body, err := httpapi.Body(req, MaxBody)
	if err != nil {
		return "", err
	}
	r, err := h.request(body)
	if err != nil {
		return "", err
	}
	s, err := h.Stripe.CreateCheckoutSession(ctx, r)
	if err != nil {
		if errors.Is(err, stripex.ErrAuth) {
			h.Alerts.Raise(ctx, alert.Alert{Severity: alert.Critical, Kind: alert.StripeAuth, Detail: "Stripe rejected the API key; no customer can pay"})
		}
		return "", err
	}
	tracing.WithOrder(ctx, s.ID)
	h.Log.InfoContext(ctx, "checkout session created", obs.Order(s.ID), "tier", string(r.Tier))
	return s.URL, nil
}

// request is the session a checkout body asks for, with this site's
// redirect URLs.
func (h *Handler) request(body []byte) (stripex.CheckoutRequest, error) {
	r, err := parse(body)
	r.SuccessURL = h.BaseURL + "/oracle/result?session_id={CHECKOUT_SESSION_ID}"
	r.CancelURL = h.BaseURL + "/?cancelled=1"
	return r, err
}

// parse validates a checkout body into a request for Stripe, without the
// redirect URLs.
func parse(body []byte) (stripex.CheckoutRequest, error) {
	var r request
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&r); err != nil {
		return stripex.CheckoutRequest{}, oracle.Wrap(oracle.CodeInvalid, err, "request body must be a JSON object with tier and query")
	}
	if dec.More() {
		return stripex.CheckoutRequest{}, oracle.Errorf(oracle.CodeInvalid, "request body must be a single JSON object")
	}
	if r.Tier == nil {
		return stripex.CheckoutRequest{}, oracle.Errorf(oracle.CodeInvalid, "tier is required: choose quick, full or strategy")
	}
	tier, err := oracle.ParseTier(*r.Tier)
	if err != nil {
		return stripex.CheckoutRequest{}, err
	}
	if r.Query == nil {
		return stripex.CheckoutRequest{}, oracle.Errorf(oracle.CodeInvalid, "query is required: describe your idea or question")
	}
	if err := oracle.ValidateQuery(*r.Query); err != nil {
		return stripex.CheckoutRequest{}, err
	}
	if r.Referral != "" && !referralChars.Run(r.Referral, 1, 64) {
		return stripex.CheckoutRequest{}, oracle.Errorf(oracle.CodeInvalid, "referral_code may hold up to 64 letters, digits, dashes and underscores")
	}
	return stripex.CheckoutRequest{Tier: tier, Query: *r.Query, Referral: r.Referral}, nil
}
