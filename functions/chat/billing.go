package main

import (
	"context"
	"net/http"
	"net/url"

	"42sisters.ai/oracle/shared/chat"
	"42sisters.ai/oracle/shared/chatsession"
	"42sisters.ai/oracle/shared/httpapi"
	"42sisters.ai/oracle/shared/oracle"
)

// subscribe is POST /api/chat/subscribe: where to pay for the
// subscription (Stripe Checkout, subscription mode). The payment's return
// grants nothing: only Stripe's events do. While a subscription grants the
// chat, a second is refused (409) with the customer portal's link, where
// the person manages the one they have; two Checkouts opened before either
// was paid can still make two, each kept (shared/subscription).
func (h *Handler) subscribe(ctx context.Context, _ httpapi.Request, s chatsession.Session, us chat.Usage, r *read) httpapi.Response {
	sub, err := r.sub, r.subErr
	if err != nil {
		return h.fail(ctx, unavailable(err))
	}
	if sub.Grants {
		return h.subscribed(ctx, sub)
	}
	u, err := h.Billing.CheckoutURL(ctx, s.Account, us.Address)
	if err != nil {
		return h.fail(ctx, unavailable(err))
	}
	return h.redirect(ctx, u)
}

// subscribed is subscribe's 409 for an account whose subscription grants
// the chat: {error, portal}, the portal's link for its customer. Without a
// link (no customer known yet, or Stripe failed to make the session) the
// refusal stands alone: a second subscription is never the way round.
func (h *Handler) subscribed(ctx context.Context, sub Subscription) httpapi.Response {
	body := map[string]string{"error": "you are already subscribed: manage your subscription in the customer portal"}
	if sub.Customer != "" {
		u, err := h.Billing.PortalURL(ctx, sub.Customer)
		switch {
		case err != nil:
			h.Log.WarnContext(ctx, "no portal link for a second subscribe", "error", err.Error())
		case usableURL(u):
			body["portal"] = u
		}
	}
	return httpapi.JSON(http.StatusConflict, body)
}

// portal is POST /api/chat/portal: Stripe's customer portal, where the
// person manages or cancels the subscription.
func (h *Handler) portal(ctx context.Context, _ httpapi.Request, _ chatsession.Session, _ chat.Usage, r *read) httpapi.Response {
	sub, err := r.sub, r.subErr
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
	if !usableURL(u) {
		return h.fail(ctx, oracle.Errorf(oracle.CodeInternal, "billing answered an unusable URL"))
	}
	return httpapi.JSON(http.StatusOK, map[string]string{"url": u})
}

// usableURL reports whether u is an absolute https (or local http) URL.
func usableURL(u string) bool {
	p, err := url.Parse(u)
	return err == nil && p.Host != "" && (p.Scheme == "https" || p.Scheme == "http")
}

// signOut is POST /api/chat/signout: every session of the account ends
// (the cookies issued before are refused) and the browser's is cleared.
func (h *Handler) signOut(ctx context.Context, _ httpapi.Request, s chatsession.Session, _ chat.Usage) httpapi.Response {
	if err := h.Accounts.SignOut(ctx, s.Account); err != nil {
		return h.fail(ctx, unavailable(err))
	}
	resp := httpapi.JSON(http.StatusOK, map[string]bool{"signed_out": true})
	resp.Cookies = []string{chatsession.ClearCookie()}
	h.Log.InfoContext(ctx, "signed out", "account", s.Account)
	return resp
}
