package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stripe/stripe-go/v76"

	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/awsenv"
	"42sisters.ai/oracle/shared/chatsession"
	"42sisters.ai/oracle/shared/httpapi"
	"42sisters.ai/oracle/shared/obs"
	"42sisters.ai/oracle/shared/secret"
	"42sisters.ai/oracle/shared/stripex"
	"42sisters.ai/oracle/shared/subscription"
)

// subscribe makes account a paying subscriber as Stripe's Checkout does,
// on the fake Stripe over HTTP, and stores the subscription's state as its
// events would.
func (x *harness) subscribe(t *testing.T, account string) subscription.State {
	t.Helper()
	ctx := context.Background()
	billing := stripex.NewBilling(secret.Static(stripeKey), stripex.Options{BaseURL: x.stripeURL})
	if _, err := billing.CreateChatPrice(ctx); err != nil {
		t.Fatal(err)
	}
	cs, err := billing.CreateChatCheckout(ctx, stripex.ChatCheckout{Account: account, Email: address, SiteURL: origin}, x.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.PostForm(x.stripeURL+"/pay/"+cs.ID, url.Values{"email": {address}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var sub stripex.Subscription
	if err := billing.ChatSubscriptions(ctx, time.Time{}, func(s stripex.Subscription) error { sub = s; return nil }); err != nil || sub.ID == "" {
		t.Fatalf("the subscription: %+v, %v", sub, err)
	}
	st := subscription.State{Account: account, ID: sub.ID, Customer: sub.Customer, Status: sub.Status, PeriodEnd: sub.PeriodEnd,
		EventCreated: x.clock.Now(), EventID: "evt_subscribed"}
	if _, _, err := x.subStore.Apply(ctx, st); err != nil {
		t.Fatal(err)
	}
	return st
}

// cancels counts the fake Stripe's cancellations of subscription id, and
// says whether each carried an idempotency key.
func (x *harness) cancels(id string) (n int, keyed bool) {
	keyed = true
	for _, c := range x.stripe.Calls() {
		if c.Method == http.MethodDelete && c.Path == "/v1/subscriptions/"+id && c.Status == http.StatusOK {
			n++
			keyed = keyed && c.IdempotencyKey != ""
		}
	}
	return n, keyed
}

// events are the fake Stripe's events of type typ.
func (x *harness) events(t *testing.T, typ string) []stripe.Event {
	t.Helper()
	resp, err := http.Get(x.stripeURL + "/_events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var all, out []stripe.Event
	if err := json.NewDecoder(resp.Body).Decode(&all); err != nil {
		t.Fatal(err)
	}
	for _, ev := range all {
		if string(ev.Type) == typ {
			out = append(out, ev)
		}
	}
	return out
}

// writeAudit makes the handler write its audit records to the audit
// bucket (moto), as in Lambda.
func (x *harness) writeAudit() {
	x.h.Audit = &audit.Recorder{Writer: audit.NewWriter(awsenv.S3(x.aws), x.f.Ref("AuditBucket")), Alerts: &testkit.Alerts{}, Log: obs.NewLogger(io.Discard, "DEBUG")}
}

// auditObjects are the audit bucket's objects, by key.
func (x *harness) auditObjects(t *testing.T) map[string]string {
	t.Helper()
	ctx := context.Background()
	c, bucket := awsenv.S3(x.aws), x.f.Ref("AuditBucket")
	out := map[string]string{}
	p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Contents {
			obj, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: o.Key})
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(obj.Body)
			obj.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			out[aws.ToString(o.Key)] = string(b)
		}
	}
	return out
}

// held is the table's items that name account (its name, or its hash's
// hex), but a trial item, which is kept under the trial identity's hash.
func (x *harness) held(t *testing.T, account string) []string {
	t.Helper()
	var out []string
	for _, it := range testkit.TableItems(t, x.aws, x.table) {
		if strings.Contains(it, `"pk":"trial#`) {
			continue
		}
		if strings.Contains(it, strings.TrimPrefix(account, audit.HashPrefix)) || strings.Contains(it, address) {
			out = append(out, it)
		}
	}
	return out
}

func erase(cookie string) httpapi.Request {
	return req(http.MethodDelete, "/api/chat/account", `{}`, cookie)
}

// TestEraseForgetsTheAccountAndCancelsItsSubscription: a subscriber's
// DELETE /api/chat/account cancels the subscription at once in Stripe
// (one DELETE with an idempotency key; customer.subscription.deleted
// follows), then deletes every item of the account, answers
// {"erased":true} with the cookie cleared, and writes one audit record
// that counts what went, naming the account by its keyed hash only.
func TestEraseForgetsTheAccountAndCancelsItsSubscription(t *testing.T) {
	x := newHarness(t)
	x.writeAudit()
	ctx := context.Background()
	other, _ := x.signIn(t, "someone.else@example.com")
	account, cookie := x.signIn(t, address)
	for _, m := range []string{"My secret plan about Zanzibar", "And another"} {
		if resp, _ := x.send(t, cookie, m); resp.StatusCode != http.StatusOK {
			t.Fatalf("message: %d", resp.StatusCode)
		}
	}
	if resp, _ := x.do(t, req(http.MethodPost, "/api/chat/signin", `{"email":"`+address+`"}`, "")); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("sign-in request: %d", resp.StatusCode)
	}
	if _, _, err := x.store.IssueSignIn(ctx, account); err != nil { // the link that request's email carries
		t.Fatal(err)
	}
	st := x.subscribe(t, account)
	if len(x.held(t, account)) == 0 {
		t.Fatal("nothing held before the erasure")
	}

	resp, body := x.do(t, erase(cookie))
	if resp.StatusCode != http.StatusOK || body["erased"] != true {
		t.Fatalf("erase: %d %v", resp.StatusCode, body)
	}
	if len(resp.Cookies) != 1 || !strings.Contains(resp.Cookies[0], "Max-Age=0") || !strings.HasPrefix(resp.Cookies[0], chatsession.CookieName+"=;") {
		t.Fatalf("the cookie is not cleared: %v", resp.Cookies)
	}
	if held := x.held(t, account); len(held) != 0 {
		t.Fatalf("the table still holds the account's items:\n%s", strings.Join(held, "\n"))
	}
	if _, err := x.store.Address(ctx, other); err != nil {
		t.Fatalf("another account: %v", err)
	}
	if n, keyed := x.cancels(st.ID); n != 1 || !keyed {
		t.Fatalf("Stripe cancelled %s %d times (idempotency key on each: %v), want once", st.ID, n, keyed)
	}
	if ev := x.events(t, "customer.subscription.deleted"); len(ev) != 1 {
		t.Fatalf("%d customer.subscription.deleted events, want 1", len(ev))
	}

	objects := x.auditObjects(t)
	var erasures []audit.Record
	for key, raw := range objects {
		for _, secret := range []string{address, strings.ToLower(address), "Person.Private", "Zanzibar"} {
			if strings.Contains(raw, secret) {
				t.Errorf("the audit object %s holds %q", key, secret)
			}
		}
		var r audit.Record
		if err := json.Unmarshal([]byte(raw), &r); err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		if r.Event == audit.EventChatErased {
			erasures = append(erasures, r)
		}
	}
	want := audit.Erasure{Account: true, Messages: 4, Tokens: 2, RateEntries: 1, Other: 1, Cancelled: []string{st.ID}}
	if len(erasures) != 1 || erasures[0].Email != account || erasures[0].Source != audit.SourceChat || erasures[0].Chat.Erasure == nil {
		t.Fatalf("erasure records %+v, want one naming the account", erasures)
	}
	if got := *erasures[0].Chat.Erasure; got.Account != want.Account || got.Messages != want.Messages || got.Tokens != want.Tokens ||
		got.RateEntries != want.RateEntries || got.Other != want.Other || strings.Join(got.Cancelled, ",") != st.ID {
		t.Fatalf("the erasure counted %+v, want %+v", got, want)
	}
}

// TestEraseWhenStripeCannotCancelErasesNothing: Stripe down, or refusing
// the cancellation, is a 503 that says nothing was erased, and nothing
// is: the person is still signed in, to ask again.
func TestEraseWhenStripeCannotCancelErasesNothing(t *testing.T) {
	for _, tc := range []struct {
		name   string
		breaks func(t *testing.T, x *harness, st subscription.State)
	}{
		{"Stripe down", func(_ *testing.T, x *harness, _ subscription.State) {
			x.h.Canceller = canceller{store: x.subStore, stripe: stripex.NewBilling(secret.Static(stripeKey), stripex.Options{BaseURL: "http://127.0.0.1:1"})}
		}},
		{"Stripe refuses", func(t *testing.T, x *harness, st subscription.State) {
			// A subscription this Stripe account does not have: 404.
			st.ID, st.EventID, st.EventCreated = "sub_notInThisAccount", "evt_other", st.EventCreated.Add(time.Second)
			if _, _, err := x.subStore.Apply(context.Background(), st); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := newHarness(t)
			x.writeAudit()
			account, cookie := x.signIn(t, address)
			if resp, _ := x.send(t, cookie, "hello"); resp.StatusCode != http.StatusOK {
				t.Fatalf("message: %d", resp.StatusCode)
			}
			tc.breaks(t, x, x.subscribe(t, account))
			before := x.held(t, account)
			resp, body := x.do(t, erase(cookie))
			if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body["error"].(string), "nothing was erased") || len(resp.Cookies) != 0 {
				t.Fatalf("erase: %d %v %v, want 503 saying nothing was erased", resp.StatusCode, body, resp.Cookies)
			}
			if after := x.held(t, account); len(after) != len(before) {
				t.Fatalf("%d of the account's items before, %d after", len(before), len(after))
			}
			if resp, _ := x.do(t, req(http.MethodGet, "/api/chat", "", cookie)); resp.StatusCode != http.StatusOK {
				t.Fatalf("still signed in: %d", resp.StatusCode)
			}
			for key := range x.auditObjects(t) {
				if strings.Contains(key, ".erased-") {
					t.Fatalf("an erasure that did not happen was recorded: %s", key)
				}
			}
		})
	}
}

// TestErasedAccountsCookiesStopWorking: every cookie of an erased account
// is refused, a second erasure with one is a harmless 401 that writes
// nothing, and after the address signs up again the old cookies still do
// not open the new account.
func TestErasedAccountsCookiesStopWorking(t *testing.T) {
	x := newHarness(t)
	x.writeAudit()
	account, first := x.signIn(t, address)
	x.clock.Add(time.Minute)
	_, second := x.signIn(t, address)
	if resp, _ := x.do(t, erase(first)); resp.StatusCode != http.StatusOK {
		t.Fatalf("erase: %d", resp.StatusCode)
	}
	records := len(x.auditObjects(t))
	for name, c := range map[string]string{"the erasing cookie": first, "another cookie": second} {
		if resp, body := x.do(t, req(http.MethodGet, "/api/chat", "", c)); resp.StatusCode != http.StatusUnauthorized || body["signin"] != true {
			t.Errorf("%s after the erasure: %d %v, want 401", name, resp.StatusCode, body)
		}
	}
	if resp, _ := x.do(t, erase(second)); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("erasing again: %d, want 401", resp.StatusCode)
	}
	if n := len(x.auditObjects(t)); n != records {
		t.Fatalf("erasing again wrote %d audit records", n-records)
	}
	if held := x.held(t, account); len(held) != 0 {
		t.Fatalf("erasing again left or wrote items: %v", held)
	}

	x.clock.Add(time.Minute)
	again, fresh := x.signIn(t, address)
	if again != account {
		t.Fatal("the address has another account now")
	}
	if resp, _ := x.do(t, req(http.MethodGet, "/api/chat", "", fresh)); resp.StatusCode != http.StatusOK {
		t.Fatalf("the new sign-in: %d", resp.StatusCode)
	}
	for name, c := range map[string]string{"the erasing cookie": first, "another cookie": second} {
		if resp, _ := x.do(t, req(http.MethodGet, "/api/chat", "", c)); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s of the erased account, on the account made since: %d, want 401", name, resp.StatusCode)
		}
	}
}

// TestEraseDoesNotMakeTheTrialWholeAgain: three exchanges used, the
// account erased, the address signed in again: the fourth is refused.
// The trial's count is kept under the trial identity's keyed hash, apart
// from the account (issue 38, finding 5), and erasing never deletes it.
func TestEraseDoesNotMakeTheTrialWholeAgain(t *testing.T) {
	x := newHarness(t)
	_, cookie := x.signIn(t, address)
	for i := range 3 {
		if resp, _ := x.send(t, cookie, "a question"); resp.StatusCode != http.StatusOK {
			t.Fatalf("exchange %d: %d", i+1, resp.StatusCode)
		}
	}
	if resp, _ := x.do(t, erase(cookie)); resp.StatusCode != http.StatusOK {
		t.Fatalf("erase: %d", resp.StatusCode)
	}
	x.clock.Add(time.Minute)
	_, cookie = x.signIn(t, address)
	if resp, body := x.send(t, cookie, "a fourth question"); resp.StatusCode != http.StatusPaymentRequired {
		t.Fatalf("the fourth exchange after an erasure: %d %v, want 402", resp.StatusCode, body)
	}
}

// TestExchangeAnsweredWhileErasedIsForgotten: the person erases the
// account in another tab while the model answers; the exchange's messages,
// stored after the erasure, are forgotten when it finds the account gone.
func TestExchangeAnsweredWhileErasedIsForgotten(t *testing.T) {
	x := newHarness(t)
	account, cookie := x.signIn(t, address)
	x.replier.fail = func(int) (ReplyResult, error) {
		if resp, _ := x.do(t, erase(cookie)); resp.StatusCode != http.StatusOK {
			t.Errorf("erase during the reply: %d", resp.StatusCode)
		}
		return ReplyResult{Text: "An answer about Quetzalcoatl", Filter: FilterPass}, nil
	}
	if resp, _ := x.send(t, cookie, "My secret plan about Zanzibar"); resp.StatusCode != http.StatusOK {
		t.Fatalf("message: %d", resp.StatusCode)
	}
	if held := x.held(t, account); len(held) != 0 {
		t.Fatalf("the exchange answered during the erasure left:\n%s", strings.Join(held, "\n"))
	}
}
