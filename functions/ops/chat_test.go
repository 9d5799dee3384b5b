package main

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v76"

	fakestripe "42sisters.ai/oracle/infra/fakes/fakestripe"
	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/chat"
	"42sisters.ai/oracle/shared/secret"
	"42sisters.ai/oracle/shared/stripex"
	"42sisters.ai/oracle/shared/subscription"
)

// chatEnv is env with the chat table (moto) and, for refunds, the fake
// Stripe over HTTP.
type chatEnv struct {
	*env
	accounts *chat.Store
	subs     *subscription.Store
	conv     *chat.Conversation
}

const chatAddr = "ada@example.com"

func newChatEnv(t *testing.T) *chatEnv {
	t.Helper()
	e := newEnv(t)
	db := awsenv.NewTables(e.f.AWS)
	c := &chatEnv{env: e, accounts: chat.NewStore(db, e.f.Ref("ChatTable"), e.h.Hasher, e.clock.Now), subs: subscription.NewStore(db, awsenv.NewQueries(e.f.AWS), e.f.Ref("ChatTable"))}
	c.conv = c.accounts.Conversation(chat.NewClient(e.f.AWS), 30*24*time.Hour)
	e.h.Chat, e.h.ChatSubs, e.h.ChatMessages, e.h.ChatDailyCap = c.accounts, c.subs, c.conv, 25
	return c
}

// take spends one exchange of account as the chat does: its usage read
// first.
func (c *chatEnv) take(ctx context.Context, account string) (chat.Spent, error) {
	u, err := c.accounts.Usage(ctx, account)
	if err != nil {
		return chat.Spent{}, err
	}
	return c.accounts.TakeExchange(ctx, u, chat.Policy{DailyCap: 25, NewTrialsPerDay: 1000})
}

// signUp makes the account of addr, with one exchange of the trial spent
// and n exchanges stored.
func (c *chatEnv) signUp(addr string, exchanges int) string {
	c.t.Helper()
	ctx := context.Background()
	account, _, err := c.accounts.SignUp(ctx, addr)
	if err != nil {
		c.t.Fatal(err)
	}
	for i := range exchanges {
		sp, err := c.take(ctx, account)
		if err != nil {
			c.t.Fatal(err)
		}
		if err := c.accounts.Settle(ctx, sp); err != nil {
			c.t.Fatal(err)
		}
		at := c.clock.Now().Add(time.Duration(i) * time.Hour)
		if err := c.conv.Append(ctx, account, "my secret plan number "+string(rune('A'+i)), "AETHER's answer", at); err != nil {
			c.t.Fatal(err)
		}
	}
	return account
}

// chatRecords are the operator records of chat actions.
func (c *chatEnv) chatRecords() []audit.Record {
	var out []audit.Record
	for _, r := range c.operatorRecords() {
		if strings.HasPrefix(r.Operator.Action, "chat") {
			out = append(out, r)
		}
	}
	return out
}

// TestChatShowsAnAccountWithoutItsWords: the account's counts, its
// subscription and how many messages are stored, found by the address's
// keyed hash; no message text and no record without reveal; the address
// never echoed.
func TestChatShowsAnAccountWithoutItsWords(t *testing.T) {
	c := newChatEnv(t)
	ctx := context.Background()
	account := c.signUp(chatAddr, 2)
	if _, err := c.accounts.Grant(ctx, account, 4); err != nil {
		t.Fatal(err)
	}
	st := subscription.State{Account: account, ID: "sub_showMe", Customer: "cus_showMe", Status: subscription.Active,
		PeriodEnd: c.clock.Now().Add(20 * 24 * time.Hour), CancelAtPeriodEnd: true, EventCreated: c.clock.Now(), EventID: "evt_showMe"}
	if _, _, err := c.subs.Apply(ctx, st); err != nil {
		t.Fatal(err)
	}
	a := c.do(Request{Action: "chat", Email: " Ada@Example.com "})
	v, _ := a.Data.(ChatAccount)
	if !a.OK || v.Account != account || v.TrialUsed != 2 || v.TrialLeft != 1 || v.Granted != 4 || v.Messages != 4 || v.DailyCap != 25 {
		t.Fatalf("chat: %+v\n%s", a, a.Text)
	}
	if v.Subscription == nil || v.Subscription.ID != "sub_showMe" || v.Subscription.Customer != "cus_showMe" || !v.Subscription.CancelAtPeriodEnd || !v.Subscription.Grants {
		t.Fatalf("subscription shown: %+v", v.Subscription)
	}
	if v.FirstMessage == nil || !v.FirstMessage.Equal(c.clock.Now()) || v.Created.IsZero() {
		t.Fatalf("dates: first %v, created %v", v.FirstMessage, v.Created)
	}
	for _, want := range []string{"2 of 3 used, 1 left", "granted        4 left", "4 stored", "sub_showMe active", "cus_showMe", "signed out     never"} {
		if !strings.Contains(a.Text, want) {
			t.Errorf("the text lacks %q:\n%s", want, a.Text)
		}
	}
	all, _ := json.Marshal(a)
	if strings.Contains(string(all), "secret plan") || strings.Contains(strings.ToLower(string(all)), "ada@") {
		t.Fatalf("chat without reveal shows a message or the address:\n%s", all)
	}
	if recs := c.chatRecords(); len(recs) != 0 {
		t.Fatalf("a look without reveal was recorded: %+v", recs)
	}
}

// TestChatRevealIsAuthorisedAndRecordedWithoutText: reveal needs who and
// why; with them the conversation is printed and the reveal recorded,
// naming the account by its hash, with no text in the record.
func TestChatRevealIsAuthorisedAndRecordedWithoutText(t *testing.T) {
	c := newChatEnv(t)
	account := c.signUp(chatAddr, 2)
	for _, r := range []Request{
		{Action: "chat", Email: chatAddr, Reveal: true},
		{Action: "chat", Email: chatAddr, Reveal: true, AuthorisedBy: by},
		{Action: "chat", Email: chatAddr, Reveal: true, Reason: why},
	} {
		if a := c.do(r); a.OK || strings.Contains(a.Text, "secret plan") || !strings.Contains(a.Message, "authorised_by") {
			t.Fatalf("reveal without authorisation: %+v", a)
		}
	}
	a := c.do(Request{Action: "chat", Email: chatAddr, Reveal: true, AuthorisedBy: by, Reason: why})
	if !a.OK || !strings.Contains(a.Text, "user: my secret plan number A") || !strings.Contains(a.Text, "aether: AETHER's answer") || !strings.Contains(a.Text, "secret plan number B") {
		t.Fatalf("reveal:\n%s", a.Text)
	}
	recs := c.chatRecords()
	if len(recs) != 1 || recs[0].Email != account || recs[0].Operator.Outcome != "conversation revealed (4 of 4 messages)" || recs[0].SessionID != "" {
		t.Fatalf("records %+v", recs)
	}
	raw, _ := json.Marshal(recs[0])
	if strings.Contains(string(raw), "secret") || strings.Contains(string(raw), "AETHER") || strings.Contains(string(raw), "ada@") {
		t.Fatalf("the reveal's record holds text or the address: %s", raw)
	}
}

// TestChatRefusesWhatItCannotDo: an unknown address, no address, a
// non-address, a grant out of bounds or without who and why: each a clear
// refusal that changes nothing.
func TestChatRefusesWhatItCannotDo(t *testing.T) {
	c := newChatEnv(t)
	account := c.signUp(chatAddr, 0)
	for _, tc := range []struct {
		name string
		r    Request
		says string
	}{
		{"unknown address", Request{Action: "chat", Email: "nobody@example.com"}, "no chat account has that address"},
		{"no address", Request{Action: "chat"}, "needs the account's address"},
		{"not an address", Request{Action: "chat", Email: "ada"}, "not an address"},
		{"grant to an unknown address", Request{Action: "chat-grant", Email: "nobody@example.com", N: 3, AuthorisedBy: by, Reason: why}, "no chat account"},
		{"grant of none", Request{Action: "chat-grant", Email: chatAddr, AuthorisedBy: by, Reason: why}, "n from 1 to 100"},
		{"grant of a negative number", Request{Action: "chat-grant", Email: chatAddr, N: -2, AuthorisedBy: by, Reason: why}, "n from 1 to 100"},
		{"grant of too many", Request{Action: "chat-grant", Email: chatAddr, N: 101, AuthorisedBy: by, Reason: why}, "n from 1 to 100"},
		{"grant without who", Request{Action: "chat-grant", Email: chatAddr, N: 3, Reason: why}, "authorised_by"},
		{"grant without why", Request{Action: "chat-grant", Email: chatAddr, N: 3, AuthorisedBy: by}, "authorised_by"},
		{"refund without who", Request{Action: "chat-refund", Email: chatAddr, Reason: why}, "authorised_by"},
		{"refund without a subscription", Request{Action: "chat-refund", Email: chatAddr, AuthorisedBy: by, Reason: why}, "no subscription"},
		{"refund of an unknown address", Request{Action: "chat-refund", Email: "nobody@example.com", AuthorisedBy: by, Reason: why}, "no chat account"},
		{"erase without who", Request{Action: "chat-erase", Email: chatAddr, Reason: why}, "authorised_by"},
		{"erase without why", Request{Action: "chat-erase", Email: chatAddr, AuthorisedBy: by}, "authorised_by"},
		{"erase of no address", Request{Action: "chat-erase", AuthorisedBy: by, Reason: why}, "needs the account's address"},
		{"erase of a non-address", Request{Action: "chat-erase", Email: "ada", AuthorisedBy: by, Reason: why}, "not an address"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := c.do(tc.r)
			if a.OK || !strings.Contains(a.Message, tc.says) || strings.Contains(a.Message, "nobody@") {
				t.Fatalf("%+v", a)
			}
		})
	}
	u, err := c.accounts.Usage(context.Background(), account)
	if err != nil || u.Granted != 0 || len(c.chatRecords()) != 0 {
		t.Fatalf("a refusal changed something: %+v, %v, records %d", u, err, len(c.chatRecords()))
	}
}

// TestChatGrantGivesExchangesOncePerRequest: the grant is spent after the
// trial; the same request again grants nothing more, another reason
// grants again; each distinct grant recorded once.
func TestChatGrantGivesExchangesOncePerRequest(t *testing.T) {
	c := newChatEnv(t)
	ctx := context.Background()
	account := c.signUp(chatAddr, 3)
	if _, err := c.take(ctx, account); err == nil {
		t.Fatal("the trial is used: the fourth exchange was taken")
	}
	r := Request{Action: "chat-grant", Email: chatAddr, N: 5, AuthorisedBy: by, Reason: why}
	if a := c.do(r); !a.OK || !a.Changed || !strings.Contains(a.Message, "5 granted exchanges left") {
		t.Fatalf("grant: %+v", a)
	}
	if a := c.do(r); !a.OK || a.Changed || !strings.Contains(a.Message, "made already") {
		t.Fatalf("the same grant again: %+v", a)
	}
	r.Reason = "a second apology"
	if a := c.do(r); !a.OK || !a.Changed || !strings.Contains(a.Message, "10 granted exchanges left") {
		t.Fatalf("another grant: %+v", a)
	}
	sp, err := c.take(ctx, account)
	if err != nil || sp.Plan != chat.PlanGranted || sp.Left != 9 {
		t.Fatalf("an exchange after the grant: %+v, %v", sp, err)
	}
	recs := c.chatRecords()
	if len(recs) != 2 || recs[0].Email != account || recs[0].Operator.Outcome != "granted 5 exchanges" {
		t.Fatalf("records %+v", recs)
	}
}

// stripeChat is the fake Stripe over HTTP with the chat's Price, and a
// paid subscription of the account, as Checkout makes it.
func (c *chatEnv) stripeChat(account string) (*fakestripe.Server, *httptest.Server, *stripex.Billing, subscription.State) {
	c.t.Helper()
	ctx := context.Background()
	fake := fakestripe.New(fakestripe.Options{Rand: rand.NewChaCha8([32]byte{29})})
	srv := httptest.NewServer(fake)
	c.t.Cleanup(srv.Close)
	key := secret.Static("sk_test_ops_chat")
	billing := stripex.NewBilling(key, stripex.Options{BaseURL: srv.URL})
	c.h.ChatBilling, c.h.ChatRefunds = billing, stripex.NewRefundsWithKey(key, stripex.Options{BaseURL: srv.URL})
	if _, err := billing.CreateChatPrice(ctx); err != nil {
		c.t.Fatal(err)
	}
	cs, err := billing.CreateChatCheckout(ctx, stripex.ChatCheckout{Account: account, Email: chatAddr, SiteURL: "https://42sisters.ai"}, c.clock.Now())
	if err != nil {
		c.t.Fatal(err)
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.PostForm(srv.URL+"/pay/"+cs.ID, url.Values{"email": {chatAddr}})
	if err != nil {
		c.t.Fatal(err)
	}
	resp.Body.Close()
	var sub stripex.Subscription
	if err := billing.ChatSubscriptions(ctx, time.Time{}, func(s stripex.Subscription) error { sub = s; return nil }); err != nil || sub.ID == "" {
		c.t.Fatalf("the subscription: %+v, %v", sub, err)
	}
	st := subscription.State{Account: account, ID: sub.ID, Customer: sub.Customer, Status: sub.Status, PeriodEnd: sub.PeriodEnd,
		EventCreated: c.clock.Now(), EventID: "evt_subscribed"}
	if _, _, err := c.subs.Apply(ctx, st); err != nil {
		c.t.Fatal(err)
	}
	return fake, srv, billing, st
}

// fakeEvents are the fake Stripe's events of type typ, oldest first.
func fakeEvents(t *testing.T, srv *httptest.Server, typ string) []stripe.Event {
	t.Helper()
	resp, err := http.Get(srv.URL + "/_events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var all []stripe.Event
	if err := json.NewDecoder(resp.Body).Decode(&all); err != nil {
		t.Fatal(err)
	}
	var out []stripe.Event
	for _, ev := range all {
		if string(ev.Type) == typ {
			out = append(out, ev)
		}
	}
	return out
}

// TestChatRefundRefundsOnceAndCancels: the latest paid invoice's payment
// is refunded in full and the subscription canceled at once, through the
// fake Stripe over HTTP; run twice, Stripe makes one refund and one
// cancellation; the action is recorded once per request.
func TestChatRefundRefundsOnceAndCancels(t *testing.T) {
	c := newChatEnv(t)
	account := c.signUp(chatAddr, 3)
	fake, srv, billing, st := c.stripeChat(account)
	r := Request{Action: "chat-refund", Email: chatAddr, AuthorisedBy: by, Reason: why}
	first := c.do(r)
	if !first.OK || !first.Changed || !strings.Contains(first.Message, "refunded invoice in_") || !strings.Contains(first.Message, "500_CAD") || !strings.Contains(first.Message, "canceled now") {
		t.Fatalf("chat-refund: %+v", first)
	}
	again := c.do(r)
	if !again.OK || again.Changed || !strings.Contains(again.Message, "already refunded") || !strings.Contains(again.Message, "already canceled") {
		t.Fatalf("chat-refund again: %+v", again)
	}
	cancels := 0
	for _, call := range fake.Calls() {
		if call.Method == http.MethodDelete && call.Path == "/v1/subscriptions/"+st.ID && call.Status == http.StatusOK {
			cancels++
		}
	}
	if refunds := fakeEvents(t, srv, "charge.refunded"); len(refunds) != 1 || cancels != 1 {
		t.Fatalf("Stripe made %d refunds and %d cancellations", len(refunds), cancels)
	}
	sub, canceled, err := billing.CancelNow(context.Background(), st.ID)
	if err != nil || canceled || sub.Status != subscription.Canceled {
		t.Fatalf("the subscription after the refund: %+v, canceled now %t, %v", sub, canceled, err)
	}
	recs := c.chatRecords()
	if len(recs) != 1 || recs[0].Email != account || !strings.Contains(recs[0].Operator.Outcome, "refunded invoice") {
		t.Fatalf("records %+v", recs)
	}
}

// TestChatSeesAndEndsEverySubscription: an account with two paid
// subscriptions (a second Checkout paid before the first's events came)
// shows both in `chat`, and chat-refund refunds and cancels both, since
// access lasts while either grants it.
func TestChatSeesAndEndsEverySubscription(t *testing.T) {
	c := newChatEnv(t)
	ctx := context.Background()
	account := c.signUp(chatAddr, 3)
	fake, srv, billing, first := c.stripeChat(account)
	cs, err := billing.CreateChatCheckout(ctx, stripex.ChatCheckout{Account: account, Email: chatAddr, SiteURL: "https://42sisters.ai"}, c.clock.Now().Add(stripex.ChatCheckoutWindow))
	if err != nil {
		t.Fatal(err)
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.PostForm(srv.URL+"/pay/"+cs.ID, url.Values{"email": {chatAddr}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var second stripex.Subscription
	if err := billing.ChatSubscriptions(ctx, time.Time{}, func(s stripex.Subscription) error {
		if s.ID != first.ID {
			second = s
		}
		return nil
	}); err != nil || second.ID == "" {
		t.Fatalf("the second subscription: %+v, %v", second, err)
	}
	if _, _, err := c.subs.Apply(ctx, subscription.State{Account: account, ID: second.ID, Customer: second.Customer, Status: second.Status,
		PeriodEnd: second.PeriodEnd, EventCreated: c.clock.Now().Add(time.Second), EventID: "evt_second"}); err != nil {
		t.Fatal(err)
	}

	a := c.do(Request{Action: "chat", Email: chatAddr})
	v, _ := a.Data.(ChatAccount)
	if !a.OK || len(v.Subscriptions) != 2 || v.Subscription == nil || !v.Subscription.Grants {
		t.Fatalf("chat: %+v\n%s", v, a.Text)
	}
	for _, want := range []string{first.ID + " active", second.ID + " active", first.Customer, second.Customer, "subscriptions  2"} {
		if !strings.Contains(a.Text, want) {
			t.Errorf("the text lacks %q:\n%s", want, a.Text)
		}
	}

	r := Request{Action: "chat-refund", Email: chatAddr, AuthorisedBy: by, Reason: why}
	if a := c.do(r); !a.OK || !a.Changed || strings.Count(a.Message, "refunded invoice in_") != 2 || strings.Count(a.Message, "canceled now") != 2 {
		t.Fatalf("chat-refund: %+v", a)
	}
	cancels := map[string]bool{}
	for _, call := range fake.Calls() {
		if call.Method == http.MethodDelete && call.Status == http.StatusOK {
			cancels[call.Path] = true
		}
	}
	if refunds := fakeEvents(t, srv, "charge.refunded"); len(refunds) != 2 || !cancels["/v1/subscriptions/"+first.ID] || !cancels["/v1/subscriptions/"+second.ID] {
		t.Fatalf("Stripe made %d refunds and cancelled %v", len(refunds), cancels)
	}
}

// held is the chat table's items that name account, but a trial item
// (kept under the trial identity's keyed hash, which an erasure keeps).
func (c *chatEnv) held(account string) []string {
	c.t.Helper()
	var out []string
	for _, it := range testkit.TableItems(c.t, c.f.AWS, c.f.Ref("ChatTable")) {
		if !strings.Contains(it, `"pk":"trial#`) && (strings.Contains(it, strings.TrimPrefix(account, audit.HashPrefix)) || strings.Contains(it, chatAddr)) {
			out = append(out, it)
		}
	}
	return out
}

// TestChatEraseErasesOnceAndCancels: chat-erase, for a request that
// arrives by email, cancels the subscription at once through the fake
// Stripe, then deletes every item of the account and prints what went,
// counted, never a word; run again it changes nothing, cancels nothing
// more, and the request is recorded once, naming the account by its hash.
func TestChatEraseErasesOnceAndCancels(t *testing.T) {
	c := newChatEnv(t)
	ctx := context.Background()
	other := c.signUp("grace@example.com", 1)
	account := c.signUp(chatAddr, 2)
	if _, _, err := c.accounts.IssueSignIn(ctx, account); err != nil {
		t.Fatal(err)
	}
	fake, _, _, st := c.stripeChat(account)
	r := Request{Action: "chat-erase", Email: " Ada@Example.com ", AuthorisedBy: by, Reason: why}
	first := c.do(r)
	e, _ := first.Data.(chat.Erased)
	if !first.OK || !first.Changed || e != (chat.Erased{Account: true, Messages: 4, Tokens: 1, Other: 1}) ||
		!strings.Contains(first.Message, "4 messages, 1 sign-in tokens") || !strings.Contains(first.Message, st.ID+" canceled at once") {
		t.Fatalf("chat-erase: %+v", first)
	}
	if held := c.held(account); len(held) != 0 {
		t.Fatalf("the chat table still holds the account's items:\n%s", strings.Join(held, "\n"))
	}
	if _, err := c.accounts.Usage(ctx, other); err != nil {
		t.Fatalf("another account: %v", err)
	}
	again := c.do(r)
	if !again.OK || again.Changed || !strings.Contains(again.Message, "nothing held") {
		t.Fatalf("chat-erase again: %+v", again)
	}
	cancels := 0
	for _, call := range fake.Calls() {
		if call.Method == http.MethodDelete && call.Path == "/v1/subscriptions/"+st.ID && call.Status == http.StatusOK {
			cancels++
		}
	}
	if cancels != 1 {
		t.Fatalf("Stripe cancelled %d times, want once", cancels)
	}
	recs := c.chatRecords()
	if len(recs) != 1 || recs[0].Email != account || recs[0].Operator.Action != "chat-erase" || !strings.Contains(recs[0].Operator.Outcome, "4 messages") {
		t.Fatalf("records %+v", recs)
	}
	all, _ := json.Marshal([]any{first, again, recs})
	if strings.Contains(strings.ToLower(string(all)), "ada@") || strings.Contains(string(all), "secret plan") {
		t.Fatalf("the answers or the record hold the address or a message:\n%s", all)
	}
}

// TestChatEraseWhenStripeCannotCancelErasesNothing: Stripe down is a
// failure to be retried, and nothing is erased; no Stripe key, with a
// subscription to cancel, is a refusal that erases nothing.
func TestChatEraseWhenStripeCannotCancelErasesNothing(t *testing.T) {
	c := newChatEnv(t)
	account := c.signUp(chatAddr, 2)
	_, srv, _, _ := c.stripeChat(account)
	before := len(c.held(account))
	r := Request{Action: "chat-erase", Email: chatAddr, AuthorisedBy: by, Reason: why}
	srv.Close()
	if ans, err := c.h.Handle(context.Background(), r); err == nil || !strings.Contains(err.Error(), "nothing was erased") {
		t.Fatalf("Stripe down: %+v %v, want a failure saying nothing was erased", ans, err)
	}
	c.h.ChatBilling = nil
	if a := c.do(r); a.OK || !strings.Contains(a.Message, "nothing was erased") {
		t.Fatalf("no Stripe key: %+v", a)
	}
	if after := len(c.held(account)); after != before || len(c.chatRecords()) != 0 {
		t.Fatalf("%d of the account's items before, %d after, %d records", before, after, len(c.chatRecords()))
	}
}
