package main

import (
	"context"
	"net/http"

	"42sisters.ai/oracle/shared/httpapi"
	"42sisters.ai/oracle/shared/obs"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/stripex"
)

// Smoke makes the smoke test's sessions, in test mode only.
type Smoke struct {
	Stripe        SessionCreator // with the test-mode key
	SigningSecret string
	Email         string
}

// smoke serves a request that carries the smoke signature. It is a server
// to server call, so no origin applies; the signature is what admits it.
// The session is the ordinary one for the same body, but made with the
// test-mode key, flagged smoke and made out to the smoke address, and the
// answer names its id so the smoke test can follow it.
func (h *Handler) smoke(ctx context.Context, req httpapi.Request) httpapi.Response {
	if h.Smoke == nil {
		// The caller learns nothing of how the deployment is configured.
		h.Log.WarnContext(ctx, "smoke request refused: no test-mode key and signing secret configured")
		return httpapi.Error(ctx, h.Log, oracle.Errorf(oracle.CodeForbidden, "forbidden"))
	}
	body, err := httpapi.Body(req, MaxBody)
	if err != nil {
		return httpapi.Error(ctx, h.Log, err)
	}
	if err := stripex.VerifySmoke(body, httpapi.Header(req, stripex.SmokeHeader), h.Smoke.SigningSecret); err != nil {
		return httpapi.Error(ctx, h.Log, oracle.Wrap(oracle.CodeForbidden, err, "invalid smoke signature"))
	}
	r, err := h.request(body)
	if err != nil {
		return httpapi.Error(ctx, h.Log, err)
	}
	r.Smoke, r.Email = true, h.Smoke.Email
	s, err := h.Smoke.Stripe.CreateCheckoutSession(ctx, r)
	if err != nil {
		return httpapi.Error(ctx, h.Log, err)
	}
	h.Log.InfoContext(ctx, "smoke checkout session created", obs.Order(s.ID))
	return httpapi.JSON(http.StatusOK, map[string]string{"url": s.URL, "session_id": s.ID})
}
