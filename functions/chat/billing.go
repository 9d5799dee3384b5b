package main

import (
	"context"
	"net/http"
	"net/url"

	"42sisters.ai/oracle/shared/chat"
	"42sisters.ai/oracle/shared/httpapi"
	"42sisters.ai/oracle/shared/oracle"
)

// subscribe is POST /api/chat/subscribe: where to pay for the
// subscription (Stripe Checkout, subscription mode). The payment's return
// grants nothing: only Stripe's events do.
func (h *Handler) subscribe(ctx context.Context, _ httpapi.Request, s session, _ chat.Usage) httpapi.Response {
	sub, err := h.Subscriptions.Subscription(ctx, s.Account)
	if err != nil {
		return h.fail(ctx, unavailable(err))
	}
	if sub.Grants {
		return h.fail(ctx, oracle.Errorf(oracle.CodeConflict, "you are already subscribed: manage your subscription from the chat page"))
	}
	email, err := h.Accounts.Address(ctx, s.Account)
	if err != nil {
		return h.fail(ctx, unavailable(err))
	}
	u, err := h.Billing.CheckoutURL(ctx, s.Account, email)
	if err != nil {
		return h.fail(ctx, unavailable(err))
	}
	return h.redirect(ctx, u)
}

// portal is POST /api/chat/portal: Stripe's customer portal, where the
// person manages or cancels the subscription.
func (h *Handler) portal(ctx context.Context, _ httpapi.Request, s session, _ chat.Usage) httpapi.Response {
	sub, err := h.Subscriptions.Subscription(ctx, s.Account)
	if err != nil {
		return h.fail(ctx, unavailable(err))
	}
	if sub.Customer == "" {
		return h.fail(ctx, oracle.Errorf(oracle.CodeNotFound, "there is no subscription to manage yet"))
	}
	u, err := h.Billing.PortalURL(ctx, sub.Customer)
	if err != nil {
		return h.fail(ctx, unavailable(err))
	}
	return h.redirect(ctx, u)
}

// redirect answers {url}, once it is an https (or local http) URL: the
// page sends the browser there.
func (h *Handler) redirect(ctx context.Context, u string) httpapi.Response {
	p, err := url.Parse(u)
	if err != nil || p.Host == "" || (p.Scheme != "https" && p.Scheme != "http") {
		return h.fail(ctx, oracle.Errorf(oracle.CodeInternal, "billing answered an unusable URL"))
	}
	return httpapi.JSON(http.StatusOK, map[string]string{"url": u})
}

// signOut is POST /api/chat/signout: every session of the account ends
// (the cookies issued before are refused) and the browser's is cleared.
func (h *Handler) signOut(ctx context.Context, _ httpapi.Request, s session, _ chat.Usage) httpapi.Response {
	if err := h.Accounts.SignOut(ctx, s.Account); err != nil {
		return h.fail(ctx, unavailable(err))
	}
	resp := httpapi.JSON(http.StatusOK, map[string]bool{"signed_out": true})
	resp.Cookies = []string{clearCookie()}
	h.Log.InfoContext(ctx, "signed out", "account", s.Account)
	return resp
}
