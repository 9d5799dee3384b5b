package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"
	"unicode/utf8"

	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/chat"
	"42sisters.ai/oracle/shared/chatreply"
	"42sisters.ai/oracle/shared/chatsession"
	"42sisters.ai/oracle/shared/httpapi"
	"42sisters.ai/oracle/shared/obs"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/stripex"
)

// MaxMessageChars is the longest message, in visible characters: the
// model's own bound (chatreply.Validate).
const MaxMessageChars = chatreply.MaxMessageChars

// messageBody is POST /api/chat's body.
type messageBody struct {
	Message *string `json:"message"`
}

// validMessage refuses what cannot be a message, by the model's rule:
// missing, empty or invisible only, not text, or over MaxMessageChars.
func validMessage(m *string) error {
	if m == nil {
		return oracle.Errorf(oracle.CodeInvalid, "message is required")
	}
	return chatreply.Validate(*m)
}

// subscriptionView is a subscription as the page shows it.
type subscriptionView struct {
	Status            string     `json:"status"`
	Active            bool       `json:"active"`
	PeriodEnd         *time.Time `json:"current_period_end,omitempty"`
	CancelAtPeriodEnd bool       `json:"cancel_at_period_end"`
	// LeftToday is today's exchanges left under the daily cap.
	LeftToday int `json:"left_today"`
	DailyCap  int `json:"daily_cap"`
	// Manage says whether the portal can be opened (a Stripe customer).
	Manage bool `json:"manage"`
}

func (h *Handler) subscriptionView(s Subscription, dayUsed int) *subscriptionView {
	if s.Status == "" && s.Customer == "" {
		return nil
	}
	v := &subscriptionView{Status: s.Status, Active: s.Grants, CancelAtPeriodEnd: s.CancelAtPeriodEnd,
		LeftToday: max(h.DailyCap-dayUsed, 0), DailyCap: h.DailyCap, Manage: s.Customer != ""}
	if !s.PeriodEnd.IsZero() {
		end := s.PeriodEnd.UTC()
		v.PeriodEnd = &end
	}
	return v
}

// trialUsed is the 402 body: the free exchanges are used, subscribe.
var trialUsed = map[string]any{"error": "trial_used", "subscribe": true}

// trialsPaused is the 402 body when a trial would start and today's new
// trials are all taken: subscribe, or come back tomorrow.
var trialsPaused = map[string]any{"error": "trials_paused", "subscribe": true}

// exchange is what one message became, for its audit record.
type exchange struct {
	started time.Time
	account string
	plan    chat.Plan
	outcome string
	filter  Filter
	message int // characters
	reply   int
	failure string
}

// message is POST /api/chat {message}: an exchange is taken (trial,
// granted, or a subscriber's day), the model answers, and the exchange is
// kept, or given back when the model failed or the apology stood in.
func (h *Handler) message(ctx context.Context, req httpapi.Request, s chatsession.Session, u chat.Usage, r *read) httpapi.Response {
	x := &exchange{started: h.Now(), account: s.Account}
	var body messageBody
	if err := decode(req, &body); err != nil {
		return h.fail(ctx, err)
	}
	if err := validMessage(body.Message); err != nil {
		return h.fail(ctx, err)
	}
	msg := *body.Message
	x.message = utf8.RuneCountInString(msg)
	sub, err := r.sub, r.subErr
	if err != nil {
		return h.fail(ctx, unavailable(err))
	}
	// The conversation the model is given, and the model's circuit, are
	// read while the exchange is taken, when the counts just read say one
	// can be: a message they refuse reads neither.
	var history func() ([]chat.Turn, error)
	prepared := func() {}
	if u.FreeLeft > 0 || (sub.Grants && u.DayUsed < h.DailyCap) {
		history = h.recent(ctx, s.Account)
		ctx, prepared = h.prepareReply(ctx)
	}
	spent, err := h.Accounts.TakeExchange(ctx, u, chat.Policy{Subscribed: sub.Grants, DailyCap: h.DailyCap, NewTrialsPerDay: h.NewTrialsPerDay})
	if err != nil && history != nil {
		// Read for nothing: the exchange is refused.
		_, _ = history()
		prepared()
	}
	switch {
	case errors.Is(err, chat.ErrTrialUsed):
		x.outcome = audit.ChatTrialUsed
		h.record(ctx, x)
		return httpapi.JSON(http.StatusPaymentRequired, trialUsed)
	case errors.Is(err, chat.ErrTrialsPaused):
		x.outcome = audit.ChatTrialUsed
		h.record(ctx, x)
		h.trialsPaused(ctx)
		resp := httpapi.JSON(http.StatusPaymentRequired, trialsPaused)
		resp.Headers["Retry-After"] = retryAfter(h.Now(), 24*time.Hour)
		return resp
	case errors.Is(err, chat.ErrDailyCap):
		x.outcome, x.plan = audit.ChatCapped, chat.PlanSubscriber
		h.record(ctx, x)
		resp := httpapi.JSON(http.StatusTooManyRequests, map[string]any{
			"error":     "today's exchanges are used: the daily fair-use cap resets at midnight UTC",
			"daily_cap": h.DailyCap,
		})
		resp.Headers["Retry-After"] = retryAfter(h.Now(), 24*time.Hour)
		return resp
	case errors.Is(err, chat.ErrNoAccount):
		return httpapi.JSON(http.StatusUnauthorized, map[string]any{"error": "please sign in: your session is missing or has expired", "signin": true})
	case err != nil:
		return h.fail(ctx, unavailable(err))
	}
	x.plan = spent.Plan
	if history == nil {
		history = h.recent(ctx, s.Account)
		ctx, prepared = h.prepareReply(ctx)
	}
	reply, err := h.reply(ctx, history, msg)
	// A reply that never reached the model (the conversation unread) did
	// not wait for its circuit's read: nothing is left running.
	prepared()
	if err != nil {
		h.giveBack(ctx, spent)
		x.outcome, x.failure = audit.ChatModelFailed, "model unavailable"
		h.Log.WarnContext(ctx, "no reply; the exchange is given back", "account", s.Account, "error", err.Error())
		// A 503: API Gateway's 5xx, and ApiServerErrorsAlarm, count it
		// with every route's; this tells the chat's apart.
		h.Metrics.Count(obs.ChatModelFailures, 1)
		h.record(ctx, x)
		return httpapi.JSON(http.StatusServiceUnavailable, map[string]any{
			"error": "the Oracle could not answer just now: please try again in a moment (this message did not count)",
			"retry": true,
		})
	}
	x.outcome, x.filter, x.reply = audit.ChatAnswered, reply.Filter, utf8.RuneCountInString(reply.Text)
	left, counted := spent.Left, true
	if reply.Filter == FilterApology {
		// The apology is not a reply: nothing stored, and the exchange
		// given back, a few times a day: each cost four model calls.
		// Each also raised CHAT_REPLY_FILTERED.
		h.Metrics.Count(obs.ChatApologies, 1)
		if h.mayGiveBack(ctx, s.Account) {
			counted = false
			if h.giveBack(ctx, spent) {
				left++
			}
		} else if err := h.Accounts.Settle(ctx, spent); err != nil {
			h.Log.ErrorContext(ctx, "exchange not settled", "account", s.Account, "error", err.Error())
		}
	} else {
		// The exchange is stored, settled and recorded at once: none
		// needs another's answer, and the answer waits for all three.
		var wg sync.WaitGroup
		var stored error
		wg.Go(func() { stored = h.Conversations.Append(ctx, s.Account, msg, reply.Text, x.started) })
		wg.Go(func() { h.record(ctx, x) })
		settled := h.Accounts.Settle(ctx, spent)
		wg.Wait()
		if stored != nil {
			h.Log.ErrorContext(ctx, "exchange answered but not stored", "account", s.Account, "error", stored.Error())
		}
		switch err := settled; {
		case errors.Is(err, chat.ErrNoAccount):
			// Erased while the model answered, maybe after the erasure's
			// last look: what was just stored goes too.
			if _, err := h.Conversations.Forget(ctx, s.Account); err != nil {
				h.Log.ErrorContext(ctx, "an erased account's exchange not forgotten", "account", s.Account, "error", err.Error())
			}
		case err != nil:
			h.Log.ErrorContext(ctx, "exchange not settled", "account", s.Account, "error", err.Error())
		}
		h.Metrics.Count(obs.ChatExchanges, 1)
	}
	if reply.Filter == FilterApology {
		h.record(ctx, x)
	}
	out := map[string]any{"reply": reply.Text, "plan": string(spent.Plan)}
	if reply.Filter == FilterApology {
		out["counted"] = counted
	}
	if spent.Plan == chat.PlanSubscriber {
		out["subscription"] = h.subscriptionView(sub, h.DailyCap-left)
	} else {
		out["exchanges_left"] = left
	}
	return httpapi.JSON(http.StatusOK, out)
}

// recent reads the conversation the model is given with a message
// (HistoryChars), returning at once: the function it returns waits for
// the read.
func (h *Handler) recent(ctx context.Context, account string) func() ([]chat.Turn, error) {
	var turns []chat.Turn
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		turns, err = h.Conversations.Recent(ctx, account, h.HistoryChars)
	}()
	return func() ([]chat.Turn, error) {
		<-done
		return turns, err
	}
}

// prepareReply starts the reads the Replier needs ahead of its reply, when
// it has any (replyPreparer).
func (h *Handler) prepareReply(ctx context.Context) (context.Context, func()) {
	if p, ok := h.Replier.(replyPreparer); ok {
		return p.Prepare(ctx)
	}
	return ctx, func() {}
}

// reply asks the model, with the conversation so far (history's), within
// ReplyTimeout.
func (h *Handler) reply(ctx context.Context, history func() ([]chat.Turn, error), msg string) (ReplyResult, error) {
	turns, err := history()
	if err != nil {
		return ReplyResult{}, err
	}
	past := make([]Turn, 0, len(turns))
	for _, t := range turns {
		past = append(past, Turn{Role: t.Role, Text: t.Text})
	}
	ctx, cancel := context.WithTimeout(ctx, h.ReplyTimeout)
	defer cancel()
	r, err := h.Replier.Reply(ctx, ReplyRequest{History: past, Message: msg})
	if err != nil {
		return ReplyResult{}, err
	}
	switch r.Filter {
	case FilterPass, FilterRegenerated, FilterApology:
	default:
		return ReplyResult{}, errors.New("reply without the content filter's outcome")
	}
	if oracle.Blank(r.Text) {
		return ReplyResult{}, errors.New("empty reply")
	}
	return r, nil
}

// mayGiveBack counts one give-back of an apology against the account's
// daily allowance (GiveBacksPerDay), reporting whether it is within it. A
// store that cannot count gives nothing back: the exchange counts.
func (h *Handler) mayGiveBack(ctx context.Context, account string) bool {
	ok, err := h.Accounts.Allow(ctx, chat.GiveBackLimit(account), h.GiveBacksPerDay)
	if err != nil {
		h.Log.ErrorContext(ctx, "give-backs not counted; the exchange counts", "account", account, "error", err.Error())
		return false
	}
	return ok
}

// trialsPaused tells the operator, once a UTC day, that today's new trials
// reached their cap (the first refusal of the day raises it).
func (h *Handler) trialsPaused(ctx context.Context) {
	first, err := h.Accounts.Allow(ctx, "alert#trials-paused", chat.Window{Limit: 1, Per: 24 * time.Hour})
	if err != nil {
		h.Log.ErrorContext(ctx, "trials paused; the alert's daily mark not read", "error", err.Error())
	}
	if err != nil || first {
		h.Alerts.Raise(ctx, alert.Alert{Severity: alert.Warn, Kind: alert.ChatTrialsPaused, Subject: h.Now().UTC().Format(time.DateOnly),
			Detail: fmt.Sprintf("today's %d new Sisters Chat trials are all taken: new ones are refused until midnight UTC (subscribers and trials already started go on). Many sign-ups at once can be an abuse of the trial: read the chat's sign-in requests in the logs; raise ChatNewTrialsPerDay if it is real demand", h.NewTrialsPerDay)})
	}
}

// giveBack returns an exchange, reporting whether it was; a failure is
// logged (the pending spend stays visible on the account item).
func (h *Handler) giveBack(ctx context.Context, sp chat.Spent) bool {
	// The request's own deadline may be what ended the model's call.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	given, err := h.Accounts.GiveBack(ctx, sp)
	if err != nil {
		h.Log.ErrorContext(ctx, "exchange not given back", "account", sp.Account, "plan", string(sp.Plan), "error", err.Error())
	}
	return given
}

// record writes the exchange's audit record: counts and states only.
func (h *Handler) record(ctx context.Context, x *exchange) {
	id, err := h.randomID()
	if err != nil {
		h.Log.ErrorContext(ctx, "audit record not written", "error", err.Error())
		return
	}
	now := h.Now()
	r := audit.Record{
		Timestamp: now, SessionCreated: now, Source: audit.SourceChat, Event: audit.EventChatExchange,
		Email: x.account, Status: audit.StatusOK, LatencyMS: max(now.Sub(x.started).Milliseconds(), 0),
		Chat: &audit.Chat{Plan: string(x.plan), Outcome: x.outcome, MessageChars: x.message, ReplyChars: x.reply, Filter: string(x.filter)},
		// The smoke test's account (SES's mailbox simulator, which no
		// person reads) is flagged so that no figure counts its exchanges.
		Smoke: x.account == h.Hasher.Email(stripex.SmokeEmail),
	}
	if x.failure != "" {
		r.Status, r.ErrorDetail = audit.StatusError, audit.Detail(x.failure)
	}
	h.Audit.Record(ctx, r, "chat-exchange-"+id)
}

// turnView is one message as GET /api/chat returns it.
type turnView struct {
	Role string    `json:"role"`
	Text string    `json:"text"`
	At   time.Time `json:"at"`
}

// conversation is GET /api/chat: the signed-in address, the conversation
// and what is left.
func (h *Handler) conversation(ctx context.Context, _ httpapi.Request, _ chatsession.Session, u chat.Usage, r *read) httpapi.Response {
	turns, err := r.turns, r.turnsErr
	if err != nil {
		return h.fail(ctx, unavailable(err))
	}
	sub, err := r.sub, r.subErr
	if err != nil {
		return h.fail(ctx, unavailable(err))
	}
	// The page says whose account this is (the address the session's read
	// of the account found), so that no one types into an account that is
	// not theirs without seeing it.
	messages := make([]turnView, 0, len(turns))
	for _, t := range turns {
		messages = append(messages, turnView{Role: t.Role, Text: t.Text, At: t.At})
	}
	return httpapi.JSON(http.StatusOK, map[string]any{
		"address":         u.Address,
		"messages":        messages,
		"exchanges_left":  u.FreeLeft,
		"trial_exchanges": chat.TrialExchanges,
		"subscription":    h.subscriptionView(sub, u.DayUsed),
		"max_message":     MaxMessageChars,
	})
}

// forget is DELETE /api/chat: every message of the account, at once.
func (h *Handler) forget(ctx context.Context, _ httpapi.Request, s chatsession.Session, _ chat.Usage) httpapi.Response {
	n, err := h.Conversations.Forget(ctx, s.Account)
	if err != nil {
		return h.fail(ctx, unavailable(err))
	}
	h.Log.InfoContext(ctx, "conversation forgotten", "account", s.Account, "messages", n)
	return httpapi.JSON(http.StatusOK, map[string]any{"forgotten": n})
}

// HistoryChars bounds the conversation given to the model with a message;
// ShowChars the conversation the page shows.
const (
	HistoryChars = chatreply.MaxHistoryChars
	ShowChars    = 100000
)
