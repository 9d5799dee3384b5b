package stripex_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"42sisters.ai/oracle/infra/testkit"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/secret"
	"42sisters.ai/oracle/shared/stripex"
)

const chatAccount = "hmac-sha256:0123456789abcdef0123456789abcdef"

func (f *fakeStripe) billing() *stripex.Billing {
	return stripex.NewBilling(secret.Static(testKey), stripex.Options{BaseURL: f.url})
}

// api makes a raw API call to the fake, for what the service never does.
func (f *fakeStripe) api(t *testing.T, method, path string, form url.Values) int {
	t.Helper()
	req, _ := http.NewRequest(method, f.url+path, strings.NewReader(form.Encode()))
	req.Header.Set("Authorization", "Bearer "+testKey)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := browser.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// The chat's Price is made once, under its lookup key, at the price fixed
// in code; made again, it is found, not duplicated.
func TestCreateChatPriceOnce(t *testing.T) {
	ctx := context.Background()
	f := newFakeStripe(t)
	b := f.billing()
	if _, err := b.ChatPriceID(ctx); !errors.Is(err, stripex.ErrNoChatPrice) {
		t.Fatalf("ChatPriceID before the price is made: %v, want ErrNoChatPrice", err)
	}
	first, err := b.CreateChatPrice(ctx)
	if err != nil || !first.Created || !strings.HasPrefix(first.ID, "price_") {
		t.Fatalf("first CreateChatPrice = %+v, %v", first, err)
	}
	again, err := f.billing().CreateChatPrice(ctx)
	if err != nil || again.Created || again.ID != first.ID {
		t.Fatalf("second CreateChatPrice = %+v, %v; want %s, not created", again, err, first.ID)
	}
	creates := 0
	for _, c := range f.fake.Calls() {
		if c.Method == http.MethodPost && c.Path == "/v1/prices" {
			creates++
			p := c.Params
			if p.Get("unit_amount") != "500" || p.Get("currency") != "cad" || p.Get("recurring[interval]") != "month" ||
				p.Get("lookup_key") != oracle.ChatPriceLookupKey || c.IdempotencyKey != stripex.ChatPriceKey {
				t.Errorf("price created with %v, key %q", p, c.IdempotencyKey)
			}
		}
	}
	if creates != 1 {
		t.Fatalf("%d prices created, want 1", creates)
	}
	if id, err := f.billing().ChatPriceID(ctx); err != nil || id != first.ID {
		t.Fatalf("ChatPriceID = %q, %v", id, err)
	}
}

// A Price under the lookup key that is not C$5.00 a month is refused:
// nothing is sold at it, and make chat-price does not paper over it.
func TestAnotherPriceUnderTheLookupKeyIsRefused(t *testing.T) {
	for name, form := range map[string]url.Values{
		"C$4":      {"unit_amount": {"400"}, "currency": {"cad"}, "recurring[interval]": {"month"}},
		"US$5":     {"unit_amount": {"500"}, "currency": {"usd"}, "recurring[interval]": {"month"}},
		"yearly":   {"unit_amount": {"500"}, "currency": {"cad"}, "recurring[interval]": {"year"}},
		"bimonthy": {"unit_amount": {"500"}, "currency": {"cad"}, "recurring[interval]": {"month"}, "recurring[interval_count]": {"2"}},
		"one-time": {"unit_amount": {"500"}, "currency": {"cad"}},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			f := newFakeStripe(t)
			form.Set("lookup_key", oracle.ChatPriceLookupKey)
			form.Set("product_data[name]", "Sisters Chat")
			if code := f.api(t, http.MethodPost, "/v1/prices", form); code != http.StatusOK {
				t.Fatalf("create the wrong price: %d", code)
			}
			if _, err := f.billing().ChatPriceID(ctx); !errors.Is(err, stripex.ErrChatPrice) || errors.Is(err, stripex.ErrNoChatPrice) {
				t.Fatalf("ChatPriceID: %v, want ErrChatPrice", err)
			}
			if _, err := f.billing().CreateChatPrice(ctx); !errors.Is(err, stripex.ErrChatPrice) {
				t.Fatalf("CreateChatPrice: %v, want ErrChatPrice", err)
			}
			_, err := f.billing().CreateChatCheckout(ctx, stripex.ChatCheckout{Account: chatAccount, Email: "ana@example.com", SiteURL: "https://42sisters.ai"}, f.now)
			if !errors.Is(err, stripex.ErrChatPrice) {
				t.Fatalf("CreateChatCheckout: %v, want ErrChatPrice", err)
			}
		})
	}
}

// The subscription's Checkout Session: mode subscription, the chat's
// Price, the account as client_reference_id and in the subscription's
// metadata, the address, the chat's pages; one session per account and
// window (a double click pays once). Paid, the subscription is listed
// for the reconciliation with its account, and the portal opens for its
// customer.
func TestChatCheckoutPortalAndListing(t *testing.T) {
	ctx := context.Background()
	f := newFakeStripe(t)
	b := f.billing()
	priceID, err := b.CreateChatPrice(ctx)
	if err != nil {
		t.Fatal(err)
	}
	req := stripex.ChatCheckout{Account: chatAccount, Email: "ana@example.com", SiteURL: "https://42sisters.ai/"}
	cs, err := b.CreateChatCheckout(ctx, req, f.now)
	if err != nil {
		t.Fatal(err)
	}
	again, err := b.CreateChatCheckout(ctx, req, f.now.Add(time.Minute))
	if err != nil || again.ID != cs.ID {
		t.Fatalf("a second request in the window made %s (%v), want %s", again.ID, err, cs.ID)
	}
	later, err := b.CreateChatCheckout(ctx, req, f.now.Add(stripex.ChatCheckoutWindow))
	if err != nil || later.ID == cs.ID {
		t.Fatalf("a request in the next window gave %s (%v)", later.ID, err)
	}
	s, ok := f.fake.Session(cs.ID)
	if !ok {
		t.Fatal("the fake has no such session")
	}
	if s.Mode != "subscription" || s.ClientReferenceID != chatAccount || s.CustomerEmail != "ana@example.com" ||
		s.SuccessURL != "https://42sisters.ai/chat?subscribed=1" || s.CancelURL != "https://42sisters.ai/chat" || s.AmountTotal != 500 || s.Currency != "cad" {
		t.Fatalf("session %+v", s)
	}
	var created int
	for _, c := range f.fake.Calls() {
		if c.Method == http.MethodPost && c.Path == "/v1/checkout/sessions" && c.Status == http.StatusOK {
			created++
			if c.Params.Get("line_items[0][price]") != priceID.ID || c.Params.Get("subscription_data[metadata][account]") != chatAccount ||
				!strings.HasPrefix(c.IdempotencyKey, "oracle-chat-checkout-0123456789abcdef") {
				t.Errorf("session created with %v, key %q", c.Params, c.IdempotencyKey)
			}
		}
	}
	if created != 3 {
		t.Errorf("%d create calls answered, want 3 (one replayed)", created)
	}

	resp, err := browser.PostForm(f.url+"/pay/"+cs.ID, url.Values{"email": {"ana@example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var subs []stripex.Subscription
	if err := b.ChatSubscriptions(ctx, time.Time{}, func(s stripex.Subscription) error { subs = append(subs, s); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(subs) != 1 || subs[0].Account != chatAccount || subs[0].Status != "active" || !strings.HasPrefix(subs[0].Customer, "cus_") ||
		!subs[0].PeriodEnd.Equal(f.now.AddDate(0, 1, 0)) || subs[0].CancelAtPeriodEnd {
		t.Fatalf("listed %+v", subs)
	}

	portal, err := b.CreatePortal(ctx, subs[0].Customer, "https://42sisters.ai")
	if err != nil || !strings.HasPrefix(portal, f.url+"/portal/bps_") {
		t.Fatalf("portal %q, %v", portal, err)
	}
	last := f.fake.Calls()[len(f.fake.Calls())-1]
	if last.Path != "/v1/billing_portal/sessions" || last.Params.Get("return_url") != "https://42sisters.ai/chat" || last.Params.Get("customer") != subs[0].Customer {
		t.Fatalf("portal call %+v", last)
	}
}

// A key Stripe refuses is read again for every billing call, as for the
// verdicts' calls (TestARolledKeyIsReadAgain).
func TestBillingReadsARolledKeyAgain(t *testing.T) {
	const oldKey, newKey = "sk_test_rolled_old_key", "sk_test_rolled_new_key"
	ops := map[string]func(ctx context.Context, b *stripex.Billing, customer string) error{
		"CreateChatPrice": func(ctx context.Context, b *stripex.Billing, _ string) error {
			_, err := b.CreateChatPrice(ctx)
			return err
		},
		"CreateChatCheckout": func(ctx context.Context, b *stripex.Billing, _ string) error {
			_, err := b.CreateChatCheckout(ctx, stripex.ChatCheckout{Account: chatAccount, Email: "ana@example.com", SiteURL: "https://42sisters.ai"}, time.Now())
			return err
		},
		"CreatePortal": func(ctx context.Context, b *stripex.Billing, customer string) error {
			_, err := b.CreatePortal(ctx, customer, "https://42sisters.ai")
			return err
		},
		"ChatSubscriptions": func(ctx context.Context, b *stripex.Billing, _ string) error {
			return b.ChatSubscriptions(ctx, time.Now().Add(-time.Hour), func(stripex.Subscription) error { return nil })
		},
	}
	for name, op := range ops {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			f := newFakeStripe(t)
			if _, err := f.billing().CreateChatPrice(ctx); err != nil {
				t.Fatal(err)
			}
			cs, err := f.billing().CreateChatCheckout(ctx, stripex.ChatCheckout{Account: chatAccount, Email: "ana@example.com", SiteURL: "https://42sisters.ai"}, f.now)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := browser.PostForm(f.url+"/pay/"+cs.ID, url.Values{"email": {"ana@example.com"}})
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			s, _ := f.fake.Session(cs.ID)

			clock := testkit.NewClock(time.Now())
			key := testkit.RotatingSecret(t, "STRIPE_SECRET_KEY", oldKey, clock)
			b := stripex.NewBilling(key.Value, stripex.Options{BaseURL: f.url})
			f.fake.AcceptOnly(newKey)
			key.Rotate(newKey)
			clock.Add(time.Minute)
			before := len(f.fake.Calls())
			if err := op(ctx, b, s.Customer.ID); err != nil {
				t.Fatalf("after the roll: %v", err)
			}
			calls := f.fake.Calls()[before:]
			if len(calls) < 2 || calls[0].Status != http.StatusUnauthorized || calls[1].Status != http.StatusOK {
				t.Fatalf("calls %+v, want a 401 and then successes", calls)
			}
		})
	}
}
