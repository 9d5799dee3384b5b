package smoke

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/chat"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/stripex"
)

// ChatMessage is the chat stage's one message: meta, as Query is.
const ChatMessage = "Is Sisters Chat operational? This is an automated smoke test."

// chatCookie is the chat's session cookie (functions/chat's CookieName).
const chatCookie = "oracle_chat"

// chatTrial is a fresh account's free exchanges.
const chatTrial = chat.TrialExchanges

// ChatAccounts is the chat table's accounts (chat.Store): the smoke
// account's name, a sign-in token minted as the mailer mints one, and the
// account's removal.
type ChatAccounts interface {
	AccountOf(email string) string
	IssueSignIn(ctx context.Context, account string) (token string, expires time.Time, err error)
	RemoveAccount(ctx context.Context, account string) (bool, error)
}

// ChatMailLog reads the mailer's records of a chat account's emails
// (audit.Reader).
type ChatMailLog interface {
	ChatMail(ctx context.Context, kind oracle.MailKind, account string, day time.Time) (map[string]audit.Record, error)
}

// chatRun is what the chat stage made, for the cleanup.
type chatRun struct {
	account   string
	cookie    string // the session, once signed in
	forgotten bool   // the conversation was deleted
}

// chat signs the smoke address in and has one exchange, as a person
// would: the sign-in link asked for (the mailer's record of the email sent
// is waited for, since SES's mailbox simulator cannot be read, and a link
// minted as the mailer mints it stands in for the one it carried), the
// link opened for the session cookie, the trial's count before and after
// one answered message, no subscription, and the conversation deleted.
func (r *Runner) chat(ctx context.Context, st *run) (string, error) {
	if r.Chat == nil || r.ChatMail == nil {
		return "", errors.New("no chat table to sign the smoke account in with (CHAT_TABLE)")
	}
	account := r.Chat.AccountOf(stripex.SmokeEmail)
	// A run cut short before its cleanup left the account as it was:
	// each run starts with a whole trial.
	if _, err := r.Chat.RemoveAccount(ctx, account); err != nil {
		return "", fmt.Errorf("the smoke account left by an earlier run: %w", err)
	}
	asked := r.now()
	before, err := r.signInEmails(ctx, account, asked)
	if err != nil {
		return "", err
	}
	body, err := json.Marshal(map[string]string{"email": stripex.SmokeEmail})
	if err != nil {
		return "", err
	}
	st.chat = &chatRun{account: account}
	if err := r.chatCall(ctx, http.MethodPost, "/api/chat/signin", body, "", http.StatusAccepted, nil); err != nil {
		return "", err
	}
	sent, err := r.signInSent(ctx, account, asked, before)
	if err != nil {
		return "", err
	}
	token, _, err := r.Chat.IssueSignIn(ctx, account)
	if err != nil {
		return "", err
	}
	if st.chat.cookie, err = r.openSignIn(ctx, token); err != nil {
		return "", err
	}
	var conv struct {
		ExchangesLeft *int            `json:"exchanges_left"`
		Subscription  json.RawMessage `json:"subscription"`
		Messages      []any           `json:"messages"`
	}
	if err := r.chatCall(ctx, http.MethodGet, "/api/chat", nil, st.chat.cookie, http.StatusOK, &conv); err != nil {
		return "", err
	}
	switch {
	case conv.ExchangesLeft == nil || *conv.ExchangesLeft != chatTrial:
		return "", fmt.Errorf("the fresh smoke account has %s free exchanges, want %d", count(conv.ExchangesLeft), chatTrial)
	case hasSubscription(conv.Subscription):
		return "", errors.New("the smoke account has a subscription: " + oracle.Clip(string(conv.Subscription), 200))
	case len(conv.Messages) != 0:
		return "", fmt.Errorf("the fresh smoke account shows %d messages, want none", len(conv.Messages))
	}
	body, err = json.Marshal(map[string]string{"message": ChatMessage})
	if err != nil {
		return "", err
	}
	var ex struct {
		Reply         string          `json:"reply"`
		Plan          string          `json:"plan"`
		ExchangesLeft *int            `json:"exchanges_left"`
		Subscription  json.RawMessage `json:"subscription"`
	}
	if err := r.chatCall(ctx, http.MethodPost, "/api/chat", body, st.chat.cookie, http.StatusOK, &ex); err != nil {
		return "", err
	}
	switch {
	case strings.TrimSpace(ex.Reply) == "":
		return "", errors.New("POST /api/chat answered an empty reply")
	case ex.Plan != string(chat.PlanTrial) || hasSubscription(ex.Subscription):
		return "", fmt.Errorf("the exchange was paid by %q, want the trial and no subscription", oracle.Clip(ex.Plan, 40))
	case ex.ExchangesLeft == nil || *ex.ExchangesLeft != chatTrial-1:
		return "", fmt.Errorf("after one exchange the trial has %s left, want %d", count(ex.ExchangesLeft), chatTrial-1)
	}
	forgotten, err := r.forget(ctx, st.chat)
	if err != nil {
		return "", err
	}
	if forgotten != 2 {
		return "", fmt.Errorf("DELETE /api/chat forgot %d messages, want the exchange's 2", forgotten)
	}
	return fmt.Sprintf("signin_email=%s exchanges_left=%d→%d subscription=none forgotten=%d",
		strings.ToLower(strings.TrimPrefix(string(sent), "EMAIL_")), chatTrial, *ex.ExchangesLeft, forgotten), nil
}

// signInEmails are the nonces of the smoke account's sign-in emails the
// mailer has recorded on the days a stage begun at asked may see.
func (r *Runner) signInEmails(ctx context.Context, account string, asked time.Time) (map[string]audit.Record, error) {
	out := map[string]audit.Record{}
	for _, day := range days(asked, r.now()) {
		recs, err := r.ChatMail.ChatMail(ctx, oracle.MailChatSignIn, account, day)
		if err != nil {
			return nil, err
		}
		for nonce, rec := range recs {
			out[nonce] = rec
		}
	}
	return out, nil
}

// days are the UTC days from a to b, at most two: a stage is short.
func days(a, b time.Time) []time.Time {
	a, b = a.UTC(), b.UTC()
	if a.Format(time.DateOnly) == b.Format(time.DateOnly) {
		return []time.Time{a}
	}
	return []time.Time{a, b}
}

// signInSent waits for the mailer's last word on a sign-in email to the
// smoke account that was not there before the request: sent, or why not,
// and flagged smoke.
func (r *Runner) signInSent(ctx context.Context, account string, asked time.Time, before map[string]audit.Record) (audit.Status, error) {
	var rec *audit.Record
	err := r.until(ctx, func() (bool, error) {
		recs, err := r.signInEmails(ctx, account, asked)
		if err != nil {
			return false, err
		}
		for nonce, x := range recs {
			if _, old := before[nonce]; !old {
				rec = &x
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return "", fmt.Errorf("the sign-in email is not recorded sent (the mail queue and the mailer; or the account's %d sign-in requests an hour are used): %w", signInsPerHour, err)
	}
	if rec.Status != audit.StatusEmailSent {
		detail := ""
		if rec.ErrorDetail != nil {
			detail = ": " + oracle.Clip(*rec.ErrorDetail, 200)
		}
		return "", fmt.Errorf("the sign-in email is %s%s", rec.Status, detail)
	}
	if !rec.Smoke {
		return "", errors.New("the sign-in email's audit record is not flagged smoke: the mailer counts it as a person's")
	}
	return rec.Status, nil
}

// signInsPerHour is the chat's limit of sign-in links an account may ask
// for an hour, named when none comes.
var signInsPerHour = chat.SignInPerAccount.Limit

// openSignIn opens the sign-in link and presses its button as a browser
// does (the link's page, which spends nothing, then its form posted from
// the site's origin) and returns the session cookie the button sets. Its
// errors never show the token.
func (r *Runner) openSignIn(ctx context.Context, token string) (string, error) {
	const route = "/chat/signin"
	// The button's answer is a redirect to /chat; its cookie is what is
	// wanted.
	c := *r.HTTP
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	status, h, b, err := r.exchange(ctx, &c, http.MethodGet, r.APIURL+route+"?token="+url.QueryEscape(token), route, nil, nil)
	if err != nil {
		return "", r.late(ctx, err)
	}
	if status != http.StatusOK || len(h.Values("Set-Cookie")) != 0 || !strings.Contains(string(b), `action="/chat/signin"`) {
		return "", fmt.Errorf("GET %s → %d, want 200, the sign-in button and no cookie: %s", route, status, oracle.Clip(pageTitle(b), 120))
	}
	form := []byte(url.Values{"token": {token}}.Encode())
	headers := map[string]string{"Origin": r.Origin, "Content-Type": "application/x-www-form-urlencoded"}
	status, h, b, err = r.exchange(ctx, &c, http.MethodPost, r.APIURL+route, route, form, headers)
	if err != nil {
		return "", r.late(ctx, err)
	}
	if status != http.StatusSeeOther || h.Get("Location") != "/chat" {
		return "", fmt.Errorf("POST %s → %d (Location %q), want 303 to /chat: %s", route, status, oracle.Clip(h.Get("Location"), 80), oracle.Clip(pageTitle(b), 120))
	}
	for _, line := range h.Values("Set-Cookie") {
		if ck, err := http.ParseSetCookie(line); err == nil && ck.Name == chatCookie && ck.Value != "" {
			if !ck.HttpOnly || !ck.Secure || ck.SameSite != http.SameSiteLaxMode {
				return "", fmt.Errorf("the session cookie is not HttpOnly, Secure and SameSite=Lax")
			}
			return ck.Value, nil
		}
	}
	return "", fmt.Errorf("POST %s set no %s session cookie", route, chatCookie)
}

// pageTitle is an HTML page's title, what a refused link's page says.
func pageTitle(b []byte) string {
	s := string(b)
	_, after, ok := strings.Cut(s, "<title>")
	if !ok {
		return s
	}
	title, _, _ := strings.Cut(after, "</title>")
	return title
}

// forget deletes the smoke account's conversation (DELETE /api/chat).
func (r *Runner) forget(ctx context.Context, c *chatRun) (int, error) {
	var out struct {
		Forgotten int `json:"forgotten"`
	}
	if err := r.chatCall(ctx, http.MethodDelete, "/api/chat", []byte("{}"), c.cookie, http.StatusOK, &out); err != nil {
		return 0, err
	}
	c.forgotten = true
	return out.Forgotten, nil
}

// cleanChat forgets the conversation if the stage could not, and removes
// the smoke account, so the next run starts with a whole trial.
func (r *Runner) cleanChat(ctx context.Context, c *chatRun) (string, error) {
	var done []string
	if c.cookie != "" && !c.forgotten {
		n, err := r.forget(ctx, c)
		if err != nil {
			return "", fmt.Errorf("the smoke chat's conversation: %w", err)
		}
		done = append(done, fmt.Sprintf("chat: %d messages forgotten", n))
	}
	removed, err := r.Chat.RemoveAccount(ctx, c.account)
	switch {
	case err != nil:
		return "", fmt.Errorf("the smoke chat account: %w", err)
	case removed:
		done = append(done, "chat account removed")
	default:
		done = append(done, "no chat account to remove")
	}
	return strings.Join(done, ", "), nil
}

// chatCall sends one request to the chat's API as its page's script does
// (JSON, from the site's origin, with the session cookie) and decodes the
// answer of status want into out.
func (r *Runner) chatCall(ctx context.Context, method, route string, body []byte, cookie string, want int, out any) error {
	headers := map[string]string{"Origin": r.Origin}
	if cookie != "" {
		headers["Cookie"] = chatCookie + "=" + cookie
	}
	c := r.HTTP
	if method == http.MethodPost && route == "/api/chat" {
		// The model's reply takes up to the chat's own limit (25 s): the
		// stage's deadline bounds this call, not the per-call one.
		patient := *r.HTTP
		patient.Timeout = 0
		c = &patient
	}
	status, _, b, err := r.exchange(ctx, c, method, r.APIURL+route, route, body, headers)
	if err != nil {
		return r.late(ctx, err)
	}
	if status != want {
		return fmt.Errorf("%s %s → %d %s, want %d", method, route, status, oracle.Clip(strings.TrimSpace(string(b)), 200), want)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%s %s: the answer is not JSON: %w", method, route, err)
	}
	return nil
}

// late says a call the stage's deadline cut short was late, plainly.
func (r *Runner) late(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		route, _, _ := strings.Cut(err.Error(), ":")
		return fmt.Errorf("%s: not within the stage's %s", route, r.timeout())
	}
	return err
}

func hasSubscription(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return s != "" && s != "null"
}

func count(n *int) string {
	if n == nil {
		return "no count of"
	}
	return fmt.Sprint(*n)
}
