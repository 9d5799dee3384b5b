package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/chat"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/stripex"
	"42sisters.ai/oracle/shared/subscription"
)

// ChatAccounts is Sisters Chat's accounts (chat.Store).
type ChatAccounts interface {
	AccountOf(email string) string
	Usage(ctx context.Context, account string) (chat.Usage, error)
	GrantOnce(ctx context.Context, account string, n int, id string) (int, bool, error)
}

// ChatMessages is the chat's stored conversations, and the erasure of an
// account's every item (chat.Conversation).
type ChatMessages interface {
	Stored(ctx context.Context, account string) (chat.Stored, error)
	Recent(ctx context.Context, account string, maxChars int) ([]chat.Turn, error)
	Erase(ctx context.Context, account string, signIn chat.Window) (chat.Erased, error)
}

// ChatSubscriptions reads an account's subscriptions as Stripe's events
// left them (subscription.Store).
type ChatSubscriptions interface {
	Subscriptions(ctx context.Context, account string) ([]subscription.State, error)
}

// ChatBilling finds a chat subscription's paid invoice and cancels it in
// Stripe (stripex.Billing).
type ChatBilling interface {
	LatestPaidInvoice(ctx context.Context, id string) (stripex.Invoice, bool, error)
	CancelNow(ctx context.Context, id string) (stripex.Subscription, bool, error)
}

// ChatRefunder refunds a chat invoice's payment (stripex.Refunds).
type ChatRefunder interface {
	RefundInvoice(ctx context.Context, in stripex.Invoice) (stripex.Refund, error)
}

// MaxChatGrant bounds one chat-grant: a larger gift is a subscription.
const MaxChatGrant = 100

// revealChars bounds the conversation a reveal prints (the latest of it),
// so that the answer stays within Lambda's response size.
const revealChars = 100_000

// ChatAccount is what `chat` shows of an account: counts and states, never
// the address or a message.
type ChatAccount struct {
	Account     string     `json:"account"` // the address's keyed hash
	Created     time.Time  `json:"created"`
	TrialUsed   int        `json:"trial_used"`
	TrialLeft   int        `json:"trial_left"`
	Granted     int        `json:"granted_left"`
	TodayUsed   int        `json:"today_used"`
	DailyCap    int        `json:"daily_cap"`
	SignedOutAt *time.Time `json:"signed_out_at,omitempty"`
	// Subscription is the one the chat goes by (subscription.Current):
	// one that grants access, else the most recent.
	Subscription *ChatSub `json:"subscription,omitempty"`
	// Subscriptions is every subscription of the account, the newest
	// event's first: two when a second Checkout was paid before the
	// first's events came.
	Subscriptions []ChatSub  `json:"subscriptions,omitempty"`
	Messages      int        `json:"messages"`
	FirstMessage  *time.Time `json:"first_message,omitempty"`
	LastMessage   *time.Time `json:"last_message,omitempty"`
}

// ChatSub is the account's subscription as the chat table holds it.
type ChatSub struct {
	ID                string    `json:"id"`
	Customer          string    `json:"customer"`
	Status            string    `json:"status"`
	PeriodEnd         time.Time `json:"current_period_end"`
	CancelAtPeriodEnd bool      `json:"cancel_at_period_end"`
	Grants            bool      `json:"grants_access_now"`
}

// chatAccount finds the account of r's address by its keyed hash: a
// refusal when the address is not one or no account has it. The address is
// never echoed.
func (h *Handler) chatAccount(ctx context.Context, r Request) (string, chat.Usage, error) {
	account, err := h.chatName(r)
	if err != nil {
		return "", chat.Usage{}, err
	}
	u, err := h.Chat.Usage(ctx, account)
	if errors.Is(err, chat.ErrNoAccount) {
		return "", chat.Usage{}, refuse("no chat account has that address (an account is made by its first sign-in request)")
	}
	return account, u, err
}

// chatName is the name of the account r's address would have (its keyed
// hash), whether or not there is one: a refusal when the address is not
// one.
func (h *Handler) chatName(r Request) (string, error) {
	if h.Chat == nil {
		return "", refuse("the chat table is not configured (CHAT_TABLE)")
	}
	addr := strings.TrimSpace(r.Email)
	if addr == "" {
		return "", refuse("%s needs the account's address: email (make ops EMAIL=...)", r.Action)
	}
	if len(addr) > maxAddress || !audit.HasEmail(addr) {
		return "", refuse("email is not an address")
	}
	return h.Chat.AccountOf(addr), nil
}

// chatShow shows an account: its counts, its subscription and how much of
// its conversation is stored; with reveal (authorised and recorded, with
// no text in the record) the conversation too.
func (h *Handler) chatShow(ctx context.Context, r Request) (Answer, error) {
	account, u, err := h.chatAccount(ctx, r)
	if err != nil {
		return Answer{}, err
	}
	now := h.Now()
	v := ChatAccount{Account: account, Created: u.Created, TrialUsed: u.TrialUsed, TrialLeft: max(chat.TrialExchanges-u.TrialUsed, 0),
		Granted: max(u.Granted, 0), TodayUsed: u.DayUsed, DailyCap: h.ChatDailyCap}
	if !u.SignedOutAt.IsZero() {
		v.SignedOutAt = &u.SignedOutAt
	}
	all, err := h.ChatSubs.Subscriptions(ctx, account)
	if err != nil {
		return Answer{}, err
	}
	for _, st := range all {
		v.Subscriptions = append(v.Subscriptions, ChatSub{ID: st.ID, Customer: st.Customer, Status: st.Status, PeriodEnd: st.PeriodEnd,
			CancelAtPeriodEnd: st.CancelAtPeriodEnd, Grants: st.Grants(now)})
	}
	if cur, found := subscription.Current(all, now); found {
		v.Subscription = &v.Subscriptions[slices.IndexFunc(all, func(st subscription.State) bool { return st.ID == cur.ID })]
	}
	stored, err := h.ChatMessages.Stored(ctx, account)
	if err != nil {
		return Answer{}, err
	}
	v.Messages = stored.Messages
	if stored.Messages > 0 {
		v.FirstMessage, v.LastMessage = &stored.First, &stored.Last
	}
	text := chatText(v, now)
	msg := fmt.Sprintf("chat account %s: %d stored messages", account, v.Messages)
	if r.Reveal {
		turns, err := h.ChatMessages.Recent(ctx, account, revealChars)
		if err != nil {
			return Answer{}, err
		}
		// Recorded before it is shown: a reveal the log lacks never happens.
		if err := h.recordOn(ctx, r, oracle.Order{}, account, fmt.Sprintf("conversation revealed (%d of %d messages)", len(turns), v.Messages)); err != nil {
			return Answer{}, err
		}
		var b strings.Builder
		fmt.Fprintf(&b, "\nconversation (the latest %d of %d stored messages, at most %d characters):\n", len(turns), v.Messages, revealChars)
		for _, t := range turns {
			fmt.Fprintf(&b, "[%s] %s: %s\n", t.At.Format(time.RFC3339), t.Role, t.Text)
		}
		text += b.String()
		msg += "; the conversation is revealed, and the reveal recorded"
	}
	return Answer{Message: msg, Text: text, Data: v}, nil
}

// chatText is v for a terminal.
func chatText(v ChatAccount, now time.Time) string {
	var b strings.Builder
	day := func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") }
	fmt.Fprintf(&b, "account        %s\n", v.Account)
	if !v.Created.IsZero() {
		fmt.Fprintf(&b, "created        %s (%s ago)\n", day(v.Created), age(now, v.Created))
	}
	fmt.Fprintf(&b, "trial          %d of %d used, %d left\n", v.TrialUsed, chat.TrialExchanges, v.TrialLeft)
	fmt.Fprintf(&b, "granted        %d left\n", v.Granted)
	fmt.Fprintf(&b, "today          %d of the daily cap of %d (subscriber exchanges, UTC day %s)\n", v.TodayUsed, v.DailyCap, now.UTC().Format(time.DateOnly))
	if v.SignedOutAt != nil {
		fmt.Fprintf(&b, "signed out     %s (sessions issued before are refused)\n", day(*v.SignedOutAt))
	} else {
		fmt.Fprintf(&b, "signed out     never\n")
	}
	for _, s := range v.Subscriptions {
		fmt.Fprintf(&b, "subscription   %s %s, period ends %s, cancel at period end %t, grants access now %t\n", s.ID, s.Status, day(s.PeriodEnd), s.CancelAtPeriodEnd, s.Grants)
		fmt.Fprintf(&b, "customer       %s\n", s.Customer)
	}
	switch n := len(v.Subscriptions); {
	case n == 0:
		fmt.Fprintf(&b, "subscription   none\n")
	case n > 1:
		fmt.Fprintf(&b, "subscriptions  %d: access while any grants it (now %t); chat-refund refunds and ends every one Stripe has not ended\n", n, v.Subscription.Grants)
	}
	if v.Messages > 0 {
		fmt.Fprintf(&b, "messages       %d stored, from %s to %s\n", v.Messages, day(*v.FirstMessage), day(*v.LastMessage))
	} else {
		fmt.Fprintf(&b, "messages       none stored\n")
	}
	return b.String()
}

// chatGrant gives an account n free exchanges, spent after its trial and
// before a subscription's daily allowance. The same request twice (the
// same address, n, authorised_by and reason) grants once.
func (h *Handler) chatGrant(ctx context.Context, r Request) (Answer, error) {
	if r.N < 1 || r.N > MaxChatGrant {
		return Answer{}, refuse("chat-grant gives n free exchanges, n from 1 to %d (make ops N=...)", MaxChatGrant)
	}
	account, _, err := h.chatAccount(ctx, r)
	if err != nil {
		return Answer{}, err
	}
	granted, made, err := h.Chat.GrantOnce(ctx, account, r.N, "operator-"+h.digest(r, ""))
	if errors.Is(err, chat.ErrNoAccount) {
		return Answer{}, refuse("no chat account has that address")
	}
	if err != nil {
		return Answer{}, err
	}
	if err := h.recordOn(ctx, r, oracle.Order{}, account, fmt.Sprintf("granted %d exchanges", r.N)); err != nil {
		return Answer{}, err
	}
	if !made {
		return Answer{Message: fmt.Sprintf("this grant of %d was made already (the same address, n, authorised_by and reason): %d granted exchanges left; give another reason to grant more", r.N, granted)}, nil
	}
	return Answer{Changed: true, Message: fmt.Sprintf("granted %d free exchanges to %s: %d granted exchanges left", r.N, account, granted)}, nil
}

// chatRefund refunds the latest paid invoice of each of the account's
// subscriptions that Stripe has not ended, in full, and cancels each at
// once, so that access ends with Stripe's customer.subscription.deleted
// events (access lasts while any subscription grants it, so every one is
// ended). With all of them ended already, it acts on the most recent, as a
// second run of the same request does. Run again, it refunds nothing more
// (the refund's idempotency key, then Stripe's "already refunded") and
// finds the subscriptions canceled.
func (h *Handler) chatRefund(ctx context.Context, r Request) (Answer, error) {
	account, _, err := h.chatAccount(ctx, r)
	if err != nil {
		return Answer{}, err
	}
	all, err := h.ChatSubs.Subscriptions(ctx, account)
	if err != nil {
		return Answer{}, err
	}
	if len(all) == 0 {
		return Answer{}, refuse("the account has no subscription: nothing to refund")
	}
	if h.ChatBilling == nil || h.ChatRefunds == nil {
		return Answer{}, refuse("no Stripe key for the chat is configured")
	}
	var live []subscription.State
	for _, st := range all {
		if st.Status != subscription.Canceled && st.Status != subscription.IncompleteExpired {
			live = append(live, st)
		}
	}
	if len(live) == 0 {
		cur, _ := subscription.Current(all, h.Now())
		live = []subscription.State{cur}
	}
	var outcomes []string
	changed := false
	for _, st := range live {
		outcome, made, err := h.refundAndCancel(ctx, st.ID)
		if err != nil {
			return Answer{}, err
		}
		outcomes, changed = append(outcomes, outcome), changed || made
	}
	outcome := strings.Join(outcomes, "; ")
	if err := h.recordOn(ctx, r, oracle.Order{}, account, outcome); err != nil {
		return Answer{}, err
	}
	return Answer{Changed: changed, Message: outcome + "; access ends when Stripe's customer.subscription.deleted event arrives"}, nil
}

// refundAndCancel refunds subscription id's latest paid invoice and
// cancels it now; changed is whether either was done by this call.
func (h *Handler) refundAndCancel(ctx context.Context, id string) (outcome string, changed bool, err error) {
	in, paid, err := h.ChatBilling.LatestPaidInvoice(ctx, id)
	if err != nil {
		return "", false, err
	}
	var refunded string
	made := false
	switch {
	case !paid || in.AmountPaid == 0:
		refunded = "no paid invoice to refund"
	default:
		re, err := h.ChatRefunds.RefundInvoice(ctx, in)
		switch {
		case errors.Is(err, stripex.ErrAlreadyRefunded):
			refunded = fmt.Sprintf("invoice %s already refunded in Stripe", in.ID)
		case err != nil:
			return "", false, err
		case re.Replayed:
			refunded = fmt.Sprintf("invoice %s already refunded (%s)", in.ID, re.ID)
		default:
			refunded, made = fmt.Sprintf("refunded invoice %s: %s (%s)", in.ID, re.ID, oracle.FormatAmount(re.Amount, in.Currency)), true
		}
	}
	sub, canceled, err := h.ChatBilling.CancelNow(ctx, id)
	if err != nil {
		return "", false, err
	}
	cancelled := fmt.Sprintf("subscription %s canceled now", id)
	if !canceled {
		cancelled = fmt.Sprintf("subscription %s was already %s", id, sub.Status)
	}
	return refunded + "; " + cancelled, made || canceled, nil
}

// chatErase erases the account of an address at its owner's request by
// email, as DELETE /api/chat/account does at their word: a subscription
// Stripe has not ended is cancelled at once first (when Stripe cannot, or
// no key is configured, nothing is erased), then the address, the
// conversation, the sign-in tokens and rate windows, the subscriptions'
// states. The trial's count stays, under its own keyed hash. It prints
// counts, never a word. Run again it erases what is left, which is
// nothing, and the same request is recorded once.
func (h *Handler) chatErase(ctx context.Context, r Request) (Answer, error) {
	account, err := h.chatName(r)
	if err != nil {
		return Answer{}, err
	}
	states, err := h.ChatSubs.Subscriptions(ctx, account)
	if err != nil {
		return Answer{}, err
	}
	var cancelled []string
	for _, st := range states {
		if subscription.Ended(st.Status) {
			continue
		}
		if h.ChatBilling == nil {
			return Answer{}, refuse("the account's subscription %s is %s and no Stripe key for the chat is configured to cancel it: nothing was erased", st.ID, st.Status)
		}
		if _, _, err := h.ChatBilling.CancelNow(ctx, st.ID); err != nil {
			return Answer{}, fmt.Errorf("cancel subscription %s, so nothing was erased: %w", st.ID, err)
		}
		cancelled = append(cancelled, st.ID)
	}
	e, err := h.ChatMessages.Erase(ctx, account, chat.SignInPerAccount)
	if err != nil {
		return Answer{}, err
	}
	outcome := erasureText(e, cancelled)
	if err := h.recordOn(ctx, r, oracle.Order{}, account, outcome); err != nil {
		return Answer{}, err
	}
	if !e.Any() && len(cancelled) == 0 {
		return Answer{Message: fmt.Sprintf("nothing held for that address (%s): no chat account, or erased already", account), Data: e}, nil
	}
	return Answer{Changed: true, Message: fmt.Sprintf("erased chat account %s: %s", account, outcome), Data: e}, nil
}

// erasureText says what an erasure deleted, and the subscriptions it
// cancelled first.
func erasureText(e chat.Erased, cancelled []string) string {
	account := "no account item"
	if e.Account {
		account = "the account item (the address)"
	}
	sub := "no subscription to cancel"
	switch len(cancelled) {
	case 0:
	case 1:
		sub = "subscription " + cancelled[0] + " canceled at once in Stripe"
	default:
		sub = "subscriptions " + strings.Join(cancelled, ", ") + " canceled at once in Stripe"
	}
	return fmt.Sprintf("%s, %d messages, %d sign-in tokens, %d rate entries, %d other items deleted; %s",
		account, e.Messages, e.Tokens, e.RateEntries, e.Other, sub)
}
