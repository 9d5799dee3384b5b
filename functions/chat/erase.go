package main

import (
	"context"
	"net/http"
	"time"

	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/chat"
	"42sisters.ai/oracle/shared/chatsession"
	"42sisters.ai/oracle/shared/httpapi"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/stripex"
)

// erase is DELETE /api/chat/account {}: the person's account is erased at
// their request. A subscription Stripe has not ended is cancelled at once
// first, and when Stripe cannot do it nothing is erased (503: the person
// asks again). Then the address, the conversation, the sign-in tokens and
// rate windows go (chat.Conversation.Erase), and with the account every
// session cookie of it stops working; this browser's is cleared. The
// audit record counts what went, by the account's keyed hash. The trial's
// count is kept apart, under its own keyed hash: erasing buys no new
// trial.
func (h *Handler) erase(ctx context.Context, req httpapi.Request, s chatsession.Session, _ chat.Usage) httpapi.Response {
	var body struct{}
	if err := decode(req, &body); err != nil {
		return h.fail(ctx, err)
	}
	started := h.Now()
	cancelled, err := h.Canceller.CancelNow(ctx, s.Account)
	if err != nil {
		return h.fail(ctx, oracle.Wrap(oracle.CodeUnavailable, err,
			"your subscription could not be cancelled with Stripe just now, so nothing was erased: please try again in a moment"))
	}
	erased, err := h.Conversations.Erase(ctx, s.Account, h.SignInPerAccount)
	if err != nil {
		return h.fail(ctx, oracle.Wrap(oracle.CodeUnavailable, err,
			"your account could not be erased completely just now: please try again in a moment"))
	}
	// A second request that found nothing left (two tabs) records nothing.
	if erased.Any() || len(cancelled) > 0 {
		h.recordErasure(ctx, s.Account, erased, cancelled, started)
	}
	h.Log.InfoContext(ctx, "account erased", "account", s.Account, "messages", erased.Messages,
		"signin_tokens", erased.Tokens, "rate_entries", erased.RateEntries, "subscriptions_cancelled", len(cancelled))
	resp := httpapi.JSON(http.StatusOK, map[string]bool{"erased": true})
	resp.Cookies = []string{chatsession.ClearCookie()}
	return resp
}

// recordErasure writes the erasure's audit record: counts and Stripe's
// subscription ids, the account by its keyed hash; one per account and
// second.
func (h *Handler) recordErasure(ctx context.Context, account string, e chat.Erased, cancelled []string, started time.Time) {
	now := h.Now()
	r := audit.Record{
		Timestamp: now, SessionCreated: now, Source: audit.SourceChat, Event: audit.EventChatErased,
		Email: account, Status: audit.StatusOK, LatencyMS: max(now.Sub(started).Milliseconds(), 0),
		Chat: &audit.Chat{Outcome: audit.ChatErased, Erasure: &audit.Erasure{Account: e.Account, Messages: e.Messages,
			Tokens: e.Tokens, RateEntries: e.RateEntries, Other: e.Other, Cancelled: cancelled}},
		Smoke: account == h.Hasher.Email(stripex.SmokeEmail),
	}
	h.Audit.Record(ctx, r, audit.ChatAccountRecordID(account, audit.NameChatErased, now.Unix()))
}
