package main

import (
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v76"

	fakestripe "42sisters.ai/oracle/infra/fakes/fakestripe"
	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/chat"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/secret"
	"42sisters.ai/oracle/shared/stripex"
	"42sisters.ai/oracle/shared/subscription"
)

// chatEnv is the webhook wired to moto, with the fake Stripe delivering
// its events to it over HTTP, and a chat account signed up.
type chatEnv struct {
	*env
	fake    *fakestripe.Server
	url     string
	billing *stripex.Billing
	subs    *subscription.Store
	account string
}

func newChatEnv(t *testing.T) *chatEnv {
	t.Helper()
	e := newEnv(t, Secrets{Test: testSecret})
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		resp, err := e.h.Handle(r.Context(), request(body, r.Header.Get("Stripe-Signature")))
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.WriteString(w, resp.Body)
	}))
	t.Cleanup(hook.Close)
	// The fake's wall clock stands still (its billing moves only by
	// /_clock), close enough to the real one for the webhook's tolerance.
	start := time.Now()
	fake := fakestripe.New(fakestripe.Options{WebhookURL: hook.URL, WebhookSecret: testSecret, Clock: func() time.Time { return start }})
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	c := &chatEnv{env: e, fake: fake, url: srv.URL,
		billing: stripex.NewBilling(secret.Static("sk_test_chat_webhook"), stripex.Options{BaseURL: srv.URL}),
		subs:    subscription.NewStore(e.db, awsenv.NewQueries(e.f.AWS), e.f.Ref("ChatTable"))}
	hasher, err := audit.NewHasher(pepper)
	if err != nil {
		t.Fatal(err)
	}
	c.account, _, err = chat.NewStore(e.db, e.f.Ref("ChatTable"), hasher, nil).SignUp(context.Background(), "ana@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.billing.CreateChatPrice(context.Background()); err != nil {
		t.Fatal(err)
	}
	return c
}

// noRedirect is a browser that stays on the fake's pages.
var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }, Timeout: 30 * time.Second}

// subscribe pays a subscription Checkout Session for account, its events
// shaped by ctl, and returns the subscription's id.
func (c *chatEnv) subscribe(t *testing.T, account string, ctl fakestripe.Control) string {
	t.Helper()
	return c.subscribeAt(t, account, ctl, time.Now())
}

// subscribeAt is subscribe with the Checkout Session made at at: another
// window of stripex.ChatCheckoutWindow is another session.
func (c *chatEnv) subscribeAt(t *testing.T, account string, ctl fakestripe.Control, at time.Time) string {
	t.Helper()
	cs, err := c.billing.CreateChatCheckout(context.Background(), stripex.ChatCheckout{Account: account, Email: "ana@example.com", SiteURL: "https://oracle.example"}, at)
	if err != nil {
		t.Fatal(err)
	}
	c.fake.SetControl(ctl)
	resp, err := noRedirect.PostForm(c.url+"/pay/"+cs.ID, url.Values{"email": {"ana@example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	s, ok := c.fake.Session(cs.ID)
	if !ok || s.Subscription == nil {
		t.Fatalf("the session %s made no subscription", cs.ID)
	}
	return s.Subscription.ID
}

// advance moves the fake's clock (its billing) as POST /_clock does.
func (c *chatEnv) advance(t *testing.T, body string) {
	t.Helper()
	resp, err := http.Post(c.url+"/_clock", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("clock %s: %d %s", body, resp.StatusCode, b)
	}
}

// stripeSub is the subscription as the fake Stripe has it now.
func (c *chatEnv) stripeSub(t *testing.T, id string) stripex.Subscription {
	t.Helper()
	var found *stripex.Subscription
	err := c.billing.ChatSubscriptions(context.Background(), time.Unix(0, 0), func(s stripex.Subscription) error {
		if s.ID == id {
			found = &s
		}
		return nil
	})
	if err != nil || found == nil {
		t.Fatalf("Stripe lists no subscription %s (%v)", id, err)
	}
	return *found
}

// stored is the account's one subscription as the chat table has it.
func (c *chatEnv) stored(t *testing.T) subscription.State {
	t.Helper()
	all, err := c.subs.Subscriptions(context.Background(), c.account)
	if err != nil || len(all) != 1 {
		t.Fatalf("stored subscriptions %+v (%v), want one", all, err)
	}
	return all[0]
}

// delivered checks every delivery so far was answered 200 and returns the
// distinct chat events delivered.
func (c *chatEnv) delivered(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, d := range c.fake.Deliveries() {
		if d.Status != http.StatusOK {
			t.Fatalf("delivery of %s (%s) answered %d %s", d.EventID, d.Type, d.Status, d.Error)
		}
		out[d.EventID] = d.Type
	}
	return out
}

// Stripe's events for a subscription's life, each delivered twice and in
// reverse: Checkout, a renewal whose payment fails (past_due), its retry
// paid, a cancellation in the portal, the period's end. After each step the
// stored state is Stripe's own, never an older one; the failed renewal
// sends one payment-failed email job, however often its event comes; each
// event is recorded once in the audit log, with no address.
func TestChatSubscriptionEventsOutOfOrderAndTwice(t *testing.T) {
	c := newChatEnv(t)
	twiceReversed := fakestripe.Control{Duplicate: 2, Reorder: true}
	id := c.subscribe(t, c.account, twiceReversed)
	same := func(step string) subscription.State {
		t.Helper()
		want, got := c.stripeSub(t, id), c.stored(t)
		if got.ID != id || got.Status != want.Status || !got.PeriodEnd.Equal(want.PeriodEnd) || got.CancelAtPeriodEnd != want.CancelAtPeriodEnd || got.Customer != want.Customer {
			t.Fatalf("%s: stored %+v, Stripe has %+v", step, got, want)
		}
		return got
	}
	if st := same("subscribed"); st.Status != subscription.Active || !st.Grants(time.Now()) {
		t.Fatalf("subscribed: %+v does not grant", st)
	}
	if acct, ok, err := c.subs.AccountOf(context.Background(), id); err != nil || !ok || acct != c.account {
		t.Fatalf("AccountOf(%s) = %q %v %v", id, acct, ok, err)
	}
	// The subscription's checkout, delivered twice, is one trial's
	// conversion, on the line that counts the event processed.
	if n := strings.Count(c.logs.String(), `"WebhookProcessed":1,"ChatTrialConversions":1}`); n != 1 {
		t.Fatalf("%d conversions counted, want 1:\n%s", n, c.logs.String())
	}

	// The renewal's payment fails, twice (Stripe's retry three days on
	// fails too: a new event of the same invoice), each event delivered
	// twice and reversed with the renewal's: past_due, access kept, one
	// email job for the invoice.
	c.fake.SetRenewals(fakestripe.Renewals{FailRenewals: 2})
	c.fake.SetControl(twiceReversed)
	c.advance(t, `{"next_period":true}`)
	if st := same("renewal failed"); st.Status != subscription.PastDue || !st.Grants(time.Now()) {
		t.Fatalf("renewal failed: %+v", st)
	}
	c.fake.SetControl(twiceReversed)
	c.advance(t, `{"advance":"73h"}`)
	if st := same("retry failed"); st.Status != subscription.PastDue {
		t.Fatalf("retry failed: %+v", st)
	}
	failures := 0
	for _, typ := range c.delivered(t) {
		if typ == string(stripe.EventTypeInvoicePaymentFailed) {
			failures++
		}
	}
	jobs := c.jobs("MailQueue")
	if failures != 2 || len(jobs) != 1 || jobs[0].Kind != oracle.MailChatPaymentFailed || jobs[0].Account != c.account || !strings.HasPrefix(jobs[0].Nonce, "in_") {
		t.Fatalf("mail jobs after %d failed payments of the renewal: %+v, want one chat_payment_failed", failures, jobs)
	}

	// The renewal came last (reversed): its record says the state after
	// it, past_due, not the active it carried; the audit log's last word
	// on a subscription is its state.
	renewed := c.stored(t).PeriodEnd
	for _, r := range c.auditRecords() {
		if r.Source == audit.SourceChat && r.Chat.PeriodEnd != nil && r.Chat.PeriodEnd.Equal(renewed) && r.Chat.SubscriptionStatus != subscription.PastDue {
			t.Errorf("the record of %s says %s after the renewal failed", r.EventID, r.Chat.SubscriptionStatus)
		}
	}

	// The next retry, five days on, is paid: active again.
	c.fake.SetControl(twiceReversed)
	c.advance(t, `{"advance":"121h"}`)
	same("retry paid")
	if st := c.stored(t); st.Status != subscription.Active {
		t.Fatalf("retry paid: %+v", st)
	}

	// Cancelled in the portal: access until the period's end, then none.
	portal, err := c.billing.CreatePortal(context.Background(), c.stored(t).Customer, "https://oracle.example")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := noRedirect.PostForm(portal, url.Values{"subscription": {id}, "action": {"cancel"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	st := same("cancelled")
	if !st.CancelAtPeriodEnd || !st.Grants(st.PeriodEnd.Add(-time.Second)) || st.Grants(st.PeriodEnd) {
		t.Fatalf("cancelled: %+v", st)
	}
	c.fake.SetControl(twiceReversed)
	c.advance(t, `{"next_period":true}`)
	st = c.stored(t)
	if st.Status != subscription.Canceled || st.Grants(st.PeriodEnd) {
		t.Fatalf("ended: %+v", st)
	}
	if jobs := c.jobs("MailQueue"); len(jobs) != 0 {
		t.Fatalf("more mail jobs: %+v", jobs)
	}

	// Each chat event once in the audit log: source chat, the account's
	// keyed hash, the subscription; the paid invoices with their amount.
	events := c.delivered(t)
	var records []audit.Record
	for _, r := range c.auditRecords() {
		if r.Source == audit.SourceChat {
			records = append(records, r)
		}
	}
	if len(records) != len(events) {
		t.Fatalf("%d chat audit records for %d distinct events", len(records), len(events))
	}
	for _, r := range records {
		if r.Event != audit.EventChatSubscription || r.Email != c.account || r.Chat == nil || r.Chat.Subscription != id || events[r.EventID] == "" {
			t.Errorf("record %+v", r)
		}
		if events[r.EventID] == string(stripe.EventTypeInvoicePaid) && (r.AmountTotal != 500 || r.Currency != "cad") {
			t.Errorf("paid invoice's record without its amount: %+v", r)
		}
	}
	if !slices.ContainsFunc(records, func(r audit.Record) bool { return r.Chat.SubscriptionStatus == subscription.PastDue }) {
		t.Error("no record of the failed renewal")
	}
}

// Two Checkouts of one account, the second paid before the first's events
// came (two tabs, ten minutes apart), make two subscriptions; the second,
// cancelled at once after the first is active, its events delivered twice
// and reversed, leaves the first's state and the account's access as they
// were: each subscription has its own state, and the account has the chat
// while either grants it.
func TestCancelledDuplicateSubscriptionKeepsAccess(t *testing.T) {
	c := newChatEnv(t)
	ctx := context.Background()
	paid := c.subscribe(t, c.account, fakestripe.Control{})
	twiceReversed := fakestripe.Control{Duplicate: 2, Reorder: true}
	dup := c.subscribeAt(t, c.account, twiceReversed, time.Now().Add(stripex.ChatCheckoutWindow))
	if dup == paid {
		t.Fatal("the second Checkout made no second subscription")
	}
	c.fake.SetControl(twiceReversed)
	if _, canceled, err := c.billing.CancelNow(ctx, dup); err != nil || !canceled {
		t.Fatalf("cancel the duplicate: %t %v", canceled, err)
	}
	c.delivered(t)

	all, err := c.subs.Subscriptions(ctx, c.account)
	if err != nil || len(all) != 2 {
		t.Fatalf("stored %+v (%v), want both subscriptions", all, err)
	}
	for _, id := range []string{paid, dup} {
		want := c.stripeSub(t, id)
		got, found, err := c.subs.Get(ctx, c.account, id)
		if err != nil || !found || got.Status != want.Status || !got.PeriodEnd.Equal(want.PeriodEnd) || got.Customer != want.Customer {
			t.Fatalf("%s stored %+v (%v), Stripe has %+v", id, got, err, want)
		}
	}
	now := time.Now()
	if cur, found := subscription.Current(all, now); !found || cur.ID != paid || cur.Status != subscription.Active || !cur.Grants(now) {
		t.Fatalf("the account's subscription is %+v: the cancelled duplicate took the paid one's access", cur)
	}
}

// A subscription whose account does not exist is alerted and answered
// 200 (nothing would change on a retry); nothing is stored or mailed.
func TestChatSubscriptionOfNoAccountIsAlerted(t *testing.T) {
	c := newChatEnv(t)
	stranger := "hmac-sha256:00000000000000000000000000000000"
	id := c.subscribe(t, stranger, fakestripe.Control{})
	c.delivered(t)
	if all, _ := c.subs.Subscriptions(context.Background(), stranger); len(all) != 0 {
		t.Fatal("a state was stored for no account")
	}
	if _, found, _ := c.subs.AccountOf(context.Background(), id); found {
		t.Fatal("the subscription was linked to no account")
	}
	alerts := strings.Join(c.alertTexts(), "\n")
	if !strings.Contains(alerts, string(alert.ChatSubscriptionUnknown)) || !strings.Contains(alerts, id) {
		t.Fatalf("alerts: %s", alerts)
	}
	for ev := range c.delivered(t) {
		if !c.eventRecorded(ev) {
			t.Errorf("event %s not recorded as processed", ev)
		}
	}
}

// An erasure cancels the account's subscription, then deletes the
// account: the customer.subscription.deleted that follows names an
// account that is gone, and needs no alert; nothing is stored.
func TestEndedSubscriptionOfAnErasedAccountIsNotAlerted(t *testing.T) {
	c := newChatEnv(t)
	ctx := context.Background()
	id := c.subscribe(t, c.account, fakestripe.Control{})
	c.delivered(t)
	hasher, err := audit.NewHasher(pepper)
	if err != nil {
		t.Fatal(err)
	}
	conv := chat.NewStore(c.db, c.f.Ref("ChatTable"), hasher, nil).Conversation(chat.NewClient(c.f.AWS), time.Hour)
	if _, err := conv.Erase(ctx, c.account, chat.SignInPerAccount); err != nil {
		t.Fatal(err)
	}
	if _, canceled, err := c.billing.CancelNow(ctx, id); err != nil || !canceled {
		t.Fatalf("cancel: %v %v", canceled, err)
	}
	types := c.delivered(t)
	if !slices.Contains(slices.Collect(maps.Values(types)), "customer.subscription.deleted") {
		t.Fatalf("no customer.subscription.deleted delivered: %v", types)
	}
	if alerts := strings.Join(c.alertTexts(), "\n"); strings.Contains(alerts, string(alert.ChatSubscriptionUnknown)) {
		t.Fatalf("alerts: %s", alerts)
	}
	if states, err := c.subs.Subscriptions(ctx, c.account); err != nil || len(states) != 0 {
		t.Fatalf("states stored for the erased account: %+v %v", states, err)
	}
}

// A signed subscription event that cannot be read goes where the
// webhook's garbage goes: 500 (Stripe retries) and WEBHOOK_UNREADABLE,
// nothing stored, the event not marked processed.
func TestUnreadableChatEvent(t *testing.T) {
	c := newChatEnv(t)
	for name, object := range map[string]any{
		"no status":      map[string]any{"id": "sub_garbage1", "object": "subscription", "metadata": map[string]string{"account": c.account}},
		"unknown status": map[string]any{"id": "sub_garbage2", "object": "subscription", "status": "splendid", "metadata": map[string]string{"account": c.account}},
		"not an object":  []any{1, 2},
	} {
		body, err := json.Marshal(map[string]any{"id": "evt_garbage_" + strings.ReplaceAll(name, " ", ""), "object": "event", "api_version": stripe.APIVersion,
			"type": "customer.subscription.updated", "created": time.Now().Unix(), "livemode": false, "data": map[string]any{"object": object}})
		if err != nil {
			t.Fatal(err)
		}
		if resp := c.send(body); resp.StatusCode != http.StatusInternalServerError {
			t.Errorf("%s: %s, want 500", name, status(resp))
		}
	}
	if all, _ := c.subs.Subscriptions(context.Background(), c.account); len(all) != 0 {
		t.Fatal("garbage was stored")
	}
	if alerts := strings.Join(c.alertTexts(), "\n"); !strings.Contains(alerts, string(alert.WebhookUnreadable)) {
		t.Fatalf("alerts: %s", alerts)
	}
}

// A verdict's completed session (mode payment) is still claimed as an
// order, never taken for the chat's.
func TestPaymentSessionIsStillAVerdict(t *testing.T) {
	c := newChatEnv(t)
	s := paidSession("cs_test_chatverdict", oracle.TierQuick, "Should I open a bakery?")
	if resp := c.send(c.event("evt_chatverdict", audit.EventCheckoutCompleted, s)); resp.StatusCode != http.StatusOK {
		t.Fatalf("%s", status(resp))
	}
	if o, ok := c.order(s.ID); !ok || o.Status != oracle.StatusPaid {
		t.Fatalf("order %+v %v", o, ok)
	}
	if jobs := c.jobs("GenerateQueue"); len(jobs) != 1 || jobs[0].SessionID != s.ID {
		t.Fatalf("generate jobs %+v", jobs)
	}

	// A subscription session's delayed payment is its subscription's
	// events' to tell: no order, no silent-drop notice, no job.
	sub := paidSession("cs_test_chatasync", oracle.TierQuick, "")
	sub.Meta = map[string]string{}
	obj := sub.object()
	obj["mode"] = "subscription"
	body, err := json.Marshal(map[string]any{"id": "evt_chatasync", "object": "event", "api_version": stripe.APIVersion,
		"type": audit.EventAsyncSucceeded, "created": time.Now().Unix(), "livemode": false, "data": map[string]any{"object": obj}})
	if err != nil {
		t.Fatal(err)
	}
	if resp := c.send(body); resp.StatusCode != http.StatusOK {
		t.Fatalf("%s", status(resp))
	}
	if _, ok := c.order(sub.ID); ok {
		t.Fatal("a subscription session became an order")
	}
	if jobs := append(c.jobs("GenerateQueue"), c.jobs("MailQueue")...); len(jobs) != 0 {
		t.Fatalf("jobs %+v", jobs)
	}
}

// Subscription events from an endpoint in a later API version (where a
// subscription's current_period_end moved onto its items, and would read
// as zero) are refused 409 and read not at all: nothing linked or stored.
func TestChatEventsOfAnotherAPIVersionAreRefused(t *testing.T) {
	c := newChatEnv(t)
	id := c.subscribe(t, c.account, fakestripe.Control{APIVersion: "2024-09-30.acacia"})
	deliveries := c.fake.Deliveries()
	if len(deliveries) != 3 {
		t.Fatalf("%d deliveries, want the subscription's three", len(deliveries))
	}
	for _, d := range deliveries {
		if d.Status != http.StatusConflict {
			t.Errorf("%s answered %d, want 409", d.Type, d.Status)
		}
		if c.eventRecorded(d.EventID) {
			t.Errorf("%s recorded as processed", d.Type)
		}
	}
	if all, _ := c.subs.Subscriptions(context.Background(), c.account); len(all) != 0 {
		t.Fatal("a state was stored from another version's event")
	}
	if _, found, _ := c.subs.AccountOf(context.Background(), id); found {
		t.Fatal("the subscription was linked from another version's event")
	}
	if alerts := strings.Join(c.alertTexts(), "\n"); !strings.Contains(alerts, string(alert.WebhookAPIVersion)) {
		t.Fatalf("alerts: %s", alerts)
	}
}
