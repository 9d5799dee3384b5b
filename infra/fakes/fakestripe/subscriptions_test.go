package fakestripe_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v76"

	fakestripe "42sisters.ai/oracle/infra/fakes/fakestripe"
)

const chatLookupKey = "sisters_chat_monthly"

// chatPrice is the create call of a C$5.00 monthly price.
func chatPrice() *stripe.PriceParams {
	return &stripe.PriceParams{
		Currency:    stripe.String("cad"),
		UnitAmount:  stripe.Int64(500),
		LookupKey:   stripe.String(chatLookupKey),
		ProductData: &stripe.PriceProductDataParams{Name: stripe.String("Sisters Chat")},
		Recurring:   &stripe.PriceRecurringParams{Interval: stripe.String("month")},
	}
}

func (f *fixture) createPrice(t *testing.T) *stripe.Price {
	t.Helper()
	p, err := f.sc.Prices.New(chatPrice())
	if err != nil {
		t.Fatalf("create price: %v", err)
	}
	return p
}

// subscribe opens a subscription session for price, pays it on the pay
// page and returns the session as the API shows it then.
func (f *fixture) subscribe(t *testing.T, price string) *stripe.CheckoutSession {
	t.Helper()
	cs, err := f.sc.CheckoutSessions.New(&stripe.CheckoutSessionParams{
		Mode:              stripe.String(string(stripe.CheckoutSessionModeSubscription)),
		SuccessURL:        stripe.String("http://localhost:3000/chat?session_id={CHECKOUT_SESSION_ID}"),
		CancelURL:         stripe.String("http://localhost:3000/chat"),
		CustomerEmail:     stripe.String("ada@example.com"),
		ClientReferenceID: stripe.String("acct_hash"),
		LineItems:         []*stripe.CheckoutSessionLineItemParams{{Price: stripe.String(price), Quantity: stripe.Int64(1)}},
		SubscriptionData:  &stripe.CheckoutSessionSubscriptionDataParams{Metadata: map[string]string{"account": "acct_hash"}},
	})
	if err != nil {
		t.Fatalf("create subscription session: %v", err)
	}
	if cs.Mode != stripe.CheckoutSessionModeSubscription || cs.AmountTotal != 500 || cs.Subscription != nil {
		t.Fatalf("new session: mode %s, amount %d, subscription %v", cs.Mode, cs.AmountTotal, cs.Subscription)
	}
	resp, body := f.pay(t, cs.ID, url.Values{"email": {"ada@example.com"}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("pay: status %d: %s", resp.StatusCode, body)
	}
	if want := "http://localhost:3000/chat?session_id=" + cs.ID; resp.Header.Get("Location") != want {
		t.Fatalf("redirect to %q, want %q", resp.Header.Get("Location"), want)
	}
	got, err := f.sc.CheckoutSessions.Get(cs.ID, nil)
	if err != nil {
		t.Fatalf("retrieve session: %v", err)
	}
	return got
}

// advance posts body to /_clock and returns the answer.
func (f *fixture) advance(t *testing.T, body string) (now int64, events []string) {
	t.Helper()
	resp, out := f.do(t, http.MethodPost, "/_clock", "application/json", body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /_clock %s: status %d: %s", body, resp.StatusCode, out)
	}
	var ans struct {
		Now    int64    `json:"now"`
		Events []string `json:"events"`
	}
	if err := json.Unmarshal([]byte(out), &ans); err != nil {
		t.Fatalf("decode clock answer: %v", err)
	}
	return ans.Now, ans.Events
}

// monthLater is t a month on, clamped to the month's last day as Stripe
// bills a subscription begun on the 31st.
func monthLater(t time.Time) time.Time {
	t = t.UTC()
	last := time.Date(t.Year(), t.Month()+2, 0, 0, 0, 0, 0, time.UTC).Day()
	return time.Date(t.Year(), t.Month()+1, min(t.Day(), last), t.Hour(), t.Minute(), t.Second(), 0, time.UTC)
}

// toJanuary31 advances the fake's clock to the next 31 January, 12:00 UTC,
// whose subscriptions renew on February's last day. Signatures keep to the
// real clock, so the receiver still verifies them.
func (f *fixture) toJanuary31(t *testing.T) time.Time {
	t.Helper()
	now := f.now.UTC()
	target := time.Date(now.Year()+1, 1, 31, 12, 0, 0, 0, time.UTC)
	if at, _ := f.advance(t, `{"advance":"`+target.Sub(now).String()+`"}`); at != target.Unix() {
		t.Fatalf("clock at %d, want %d", at, target.Unix())
	}
	return target
}

// since returns the hooks received after the first n.
func (rc *receiver) since(n int) []hook {
	return rc.hooks()[n:]
}

func typesOf(hs []hook) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = string(h.Event.Type)
		if h.Err != nil {
			out[i] += " (unverified)"
		}
	}
	return out
}

func (h hook) Subscription(t *testing.T) stripe.Subscription {
	t.Helper()
	var s stripe.Subscription
	if err := json.Unmarshal(h.Event.Data.Raw, &s); err != nil {
		t.Fatalf("decode %s data.object: %v", h.Event.Type, err)
	}
	return s
}

func (h hook) Invoice(t *testing.T) stripe.Invoice {
	t.Helper()
	var in stripe.Invoice
	if err := json.Unmarshal(h.Event.Data.Raw, &in); err != nil {
		t.Fatalf("decode %s data.object: %v", h.Event.Type, err)
	}
	return in
}

func TestPricesByLookupKey(t *testing.T) {
	f := newFixture(t, fakestripe.Options{})
	p := f.createPrice(t)
	if p.Type != stripe.PriceTypeRecurring || p.UnitAmount != 500 || p.Currency != "cad" || p.LookupKey != chatLookupKey ||
		p.Recurring == nil || p.Recurring.Interval != stripe.PriceRecurringIntervalMonth || p.Recurring.IntervalCount != 1 || !p.Active ||
		!strings.HasPrefix(p.ID, "price_") || p.Product == nil || !strings.HasPrefix(p.Product.ID, "prod_") {
		t.Fatalf("price = %+v", p)
	}
	got, err := f.sc.Prices.Get(p.ID, nil)
	if err != nil || got.ID != p.ID {
		t.Fatalf("retrieve: %v, %v", got, err)
	}

	lookup := func(keys ...string) []string {
		t.Helper()
		params := &stripe.PriceListParams{LookupKeys: stripe.StringSlice(keys)}
		var ids []string
		it := f.sc.Prices.List(params)
		for it.Next() {
			ids = append(ids, it.Price().ID)
		}
		if err := it.Err(); err != nil {
			t.Fatalf("list prices %v: %v", keys, err)
		}
		return ids
	}
	if ids := lookup(chatLookupKey); !slices.Equal(ids, []string{p.ID}) {
		t.Fatalf("lookup %s = %v, want [%s]", chatLookupKey, ids, p.ID)
	}
	if ids := lookup("other"); len(ids) != 0 {
		t.Fatalf("lookup other = %v, want none", ids)
	}

	// A second price with the key is refused, unless the key moves to it.
	_, err = f.sc.Prices.New(chatPrice())
	if se := stripeError(t, err, http.StatusBadRequest, ""); se.Param != "lookup_key" {
		t.Fatalf("duplicate lookup_key: param %q", se.Param)
	}
	moved := chatPrice()
	moved.TransferLookupKey = stripe.Bool(true)
	p2, err := f.sc.Prices.New(moved)
	if err != nil {
		t.Fatalf("transfer lookup key: %v", err)
	}
	if ids := lookup(chatLookupKey); !slices.Equal(ids, []string{p2.ID}) {
		t.Fatalf("after transfer, lookup = %v, want [%s]", ids, p2.ID)
	}
}

func TestCreatePriceValidation(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*stripe.PriceParams)
		param  string
	}{
		{"missing currency", func(p *stripe.PriceParams) { p.Currency = nil }, "currency"},
		{"missing unit_amount", func(p *stripe.PriceParams) { p.UnitAmount = nil }, "unit_amount"},
		{"no product", func(p *stripe.PriceParams) { p.ProductData = nil }, "product"},
		{"unknown product", func(p *stripe.PriceParams) { p.ProductData, p.Product = nil, stripe.String("prod_none") }, "product"},
		{"bad interval", func(p *stripe.PriceParams) { p.Recurring.Interval = stripe.String("fortnight") }, "recurring[interval]"},
		{"13 months", func(p *stripe.PriceParams) { p.Recurring.IntervalCount = stripe.Int64(13) }, "recurring[interval_count]"},
	}
	f := newFixture(t, fakestripe.Options{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := chatPrice()
			p.LookupKey = nil
			tt.modify(p)
			_, err := f.sc.Prices.New(p)
			if se := stripeError(t, err, http.StatusBadRequest, errCodeFor(err)); se.Param != tt.param {
				t.Errorf("param = %q, want %q (%s)", se.Param, tt.param, se.Msg)
			}
		})
	}
}

// errCodeFor is the code err carries, for tests that check only the param.
func errCodeFor(err error) stripe.ErrorCode {
	if se, ok := err.(*stripe.Error); ok {
		return se.Code
	}
	return ""
}

func TestSubscriptionSessionValidation(t *testing.T) {
	f := newFixture(t, fakestripe.Options{})
	monthly := f.createPrice(t)
	once, err := f.sc.Prices.New(&stripe.PriceParams{Currency: stripe.String("cad"), UnitAmount: stripe.Int64(100), ProductData: &stripe.PriceProductDataParams{Name: stripe.String("Once")}})
	if err != nil {
		t.Fatalf("create one-time price: %v", err)
	}
	tests := []struct {
		name  string
		mode  stripe.CheckoutSessionMode
		price string
		extra func(*stripe.CheckoutSessionParams)
		param string // empty: accepted
	}{
		{"subscription, recurring", stripe.CheckoutSessionModeSubscription, monthly.ID, nil, ""},
		{"payment, one-time price", stripe.CheckoutSessionModePayment, once.ID, nil, ""},
		{"payment, recurring price", stripe.CheckoutSessionModePayment, monthly.ID, nil, "line_items"},
		{"subscription, one-time price", stripe.CheckoutSessionModeSubscription, once.ID, nil, "line_items"},
		{"unknown price", stripe.CheckoutSessionModeSubscription, "price_none", nil, "line_items[0][price]"},
		{"unknown customer", stripe.CheckoutSessionModeSubscription, monthly.ID, func(p *stripe.CheckoutSessionParams) { p.Customer = stripe.String("cus_none") }, "customer"},
		{"customer and email", stripe.CheckoutSessionModeSubscription, monthly.ID, func(p *stripe.CheckoutSessionParams) {
			p.Customer, p.CustomerEmail = stripe.String("cus_none"), stripe.String("ada@example.com")
		}, "customer_email"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &stripe.CheckoutSessionParams{
				Mode:       stripe.String(string(tt.mode)),
				SuccessURL: stripe.String("http://localhost:3000/chat"),
				LineItems:  []*stripe.CheckoutSessionLineItemParams{{Price: stripe.String(tt.price), Quantity: stripe.Int64(1)}},
			}
			if tt.extra != nil {
				tt.extra(p)
			}
			cs, err := f.sc.CheckoutSessions.New(p)
			if tt.param == "" {
				if err != nil || cs.Mode != tt.mode {
					t.Fatalf("create: %v, %v", cs, err)
				}
				return
			}
			if se := stripeError(t, err, http.StatusBadRequest, errCodeFor(err)); se.Param != tt.param {
				t.Errorf("param = %q, want %q (%s)", se.Param, tt.param, se.Msg)
			}
		})
	}
}

func TestSubscriptionCheckout(t *testing.T) {
	f := newFixture(t, fakestripe.Options{})
	price := f.createPrice(t)
	start := f.now

	_, page := f.get(t, "/pay/"+mustSessionForPage(t, f, price.ID))
	if !strings.Contains(page, "Subscribe") || !strings.Contains(page, "5.00 CAD") || !strings.Contains(page, "every month") || strings.Contains(page, "delayed") {
		t.Fatalf("pay page does not offer the subscription:\n%s", page)
	}

	cs := f.subscribe(t, price.ID)
	if cs.Status != stripe.CheckoutSessionStatusComplete || cs.PaymentStatus != stripe.CheckoutSessionPaymentStatusPaid ||
		cs.Subscription == nil || cs.Customer == nil || cs.Invoice == nil || cs.PaymentIntent != nil {
		t.Fatalf("session = status %s/%s, subscription %v, customer %v, invoice %v, payment_intent %v",
			cs.Status, cs.PaymentStatus, cs.Subscription, cs.Customer, cs.Invoice, cs.PaymentIntent)
	}

	hooks := f.hooks.hooks()
	if got, want := typesOf(hooks), []string{"customer.subscription.created", "invoice.paid", "checkout.session.completed"}; !slices.Equal(got, want) {
		t.Fatalf("events = %v, want %v", got, want)
	}
	sub := hooks[0].Subscription(t)
	wantEnd := monthLater(start).Unix()
	if sub.ID != cs.Subscription.ID || sub.Status != stripe.SubscriptionStatusActive || sub.Customer.ID != cs.Customer.ID ||
		sub.CurrentPeriodStart != start.Unix() || sub.CurrentPeriodEnd != wantEnd || sub.CancelAtPeriodEnd ||
		sub.Metadata["account"] != "acct_hash" || sub.LatestInvoice.ID != cs.Invoice.ID ||
		len(sub.Items.Data) != 1 || sub.Items.Data[0].Price.ID != price.ID || sub.Items.Data[0].Price.LookupKey != chatLookupKey {
		t.Fatalf("subscription = %+v, want active %s..%d", sub, start, wantEnd)
	}
	inv := hooks[1].Invoice(t)
	if inv.ID != cs.Invoice.ID || inv.Status != stripe.InvoiceStatusPaid || !inv.Paid || inv.AmountPaid != 500 || inv.Currency != "cad" ||
		inv.BillingReason != stripe.InvoiceBillingReasonSubscriptionCreate || inv.Subscription.ID != sub.ID || inv.CustomerEmail != "ada@example.com" ||
		inv.PaymentIntent == nil || inv.Charge == nil || len(inv.Lines.Data) != 1 || inv.Lines.Data[0].Period.End != wantEnd {
		t.Fatalf("invoice = %+v", inv)
	}
	completed := hooks[2].Session(t)
	if completed.Mode != stripe.CheckoutSessionModeSubscription || completed.Subscription.ID != sub.ID || completed.ClientReferenceID != "acct_hash" {
		t.Fatalf("checkout.session.completed = mode %s, subscription %v", completed.Mode, completed.Subscription)
	}
	for _, h := range hooks {
		if h.Err != nil || h.Event.APIVersion != stripe.APIVersion {
			t.Fatalf("%s: verify %v, api_version %s", h.Event.Type, h.Err, h.Event.APIVersion)
		}
	}

	// The API says the same.
	got, err := f.sc.Subscriptions.Get(sub.ID, nil)
	if err != nil || got.Status != stripe.SubscriptionStatusActive || got.CurrentPeriodEnd != wantEnd {
		t.Fatalf("retrieve subscription: %+v, %v", got, err)
	}
	cust, err := f.sc.Customers.Get(cs.Customer.ID, nil)
	if err != nil || cust.Email != "ada@example.com" {
		t.Fatalf("retrieve customer: %+v, %v", cust, err)
	}
	gotInv, err := f.sc.Invoices.Get(inv.ID, nil)
	if err != nil || gotInv.Status != stripe.InvoiceStatusPaid {
		t.Fatalf("retrieve invoice: %+v, %v", gotInv, err)
	}
	// The invoice's payment can be refunded as any other.
	if _, err := f.sc.Refunds.New(&stripe.RefundParams{PaymentIntent: stripe.String(inv.PaymentIntent.ID)}); err != nil {
		t.Fatalf("refund the invoice: %v", err)
	}
	// Sessions list by subscription and customer.
	it := f.sc.CheckoutSessions.List(&stripe.CheckoutSessionListParams{Subscription: stripe.String(sub.ID)})
	if !it.Next() || it.CheckoutSession().ID != cs.ID || it.Next() {
		t.Fatalf("sessions of the subscription: want only %s (%v)", cs.ID, it.Err())
	}
}

// mustSessionForPage opens a subscription session without paying it.
func mustSessionForPage(t *testing.T, f *fixture, price string) string {
	t.Helper()
	cs, err := f.sc.CheckoutSessions.New(&stripe.CheckoutSessionParams{
		Mode:       stripe.String(string(stripe.CheckoutSessionModeSubscription)),
		SuccessURL: stripe.String("http://localhost:3000/chat"),
		LineItems:  []*stripe.CheckoutSessionLineItemParams{{Price: stripe.String(price), Quantity: stripe.Int64(1)}},
	})
	if err != nil {
		t.Fatalf("create session: %v", err)
	}
	return cs.ID
}

// The Control shapes a subscription's events as a payment's: reordered
// and duplicated, each delivery signed.
func TestSubscriptionCheckoutEventsReorderedAndDuplicated(t *testing.T) {
	f := newFixture(t, fakestripe.Options{})
	price := f.createPrice(t)
	f.setControl(t, fakestripe.Control{Duplicate: 2, Reorder: true})
	f.subscribe(t, price.ID)
	want := []string{"checkout.session.completed", "checkout.session.completed", "invoice.paid", "invoice.paid", "customer.subscription.created", "customer.subscription.created"}
	if got := typesOf(f.hooks.hooks()); !slices.Equal(got, want) {
		t.Fatalf("events = %v, want %v", got, want)
	}
}

// The portal cancels at the period's end; the subscription lives until
// the clock passes it, then ends: customer.subscription.deleted.
func TestPortalCancelsAtPeriodEnd(t *testing.T) {
	f := newFixture(t, fakestripe.Options{})
	price := f.createPrice(t)
	cs := f.subscribe(t, price.ID)
	subID := cs.Subscription.ID

	ps, err := f.sc.BillingPortalSessions.New(&stripe.BillingPortalSessionParams{Customer: stripe.String(cs.Customer.ID), ReturnURL: stripe.String("http://localhost:3000/chat")})
	if err != nil {
		t.Fatalf("create portal session: %v", err)
	}
	if ps.Customer != cs.Customer.ID || !strings.HasPrefix(ps.URL, f.url+"/portal/bps_") || ps.ReturnURL != "http://localhost:3000/chat" {
		t.Fatalf("portal session = %+v", ps)
	}
	path := strings.TrimPrefix(ps.URL, f.url)
	_, page := f.get(t, path)
	if !strings.Contains(page, "Cancel plan") || !strings.Contains(page, "ada@example.com") {
		t.Fatalf("portal page:\n%s", page)
	}

	portal := func(action string) {
		t.Helper()
		resp, err := browser.PostForm(ps.URL, url.Values{"subscription": {subID}, "action": {action}})
		if err != nil {
			t.Fatalf("portal %s: %v", action, err)
		}
		if body := readBody(t, resp); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("portal %s: status %d: %s", action, resp.StatusCode, body)
		}
	}
	n := len(f.hooks.hooks())
	portal("cancel")
	hs := f.hooks.since(n)
	if got := typesOf(hs); !slices.Equal(got, []string{"customer.subscription.updated"}) {
		t.Fatalf("cancel events = %v", got)
	}
	sub := hs[0].Subscription(t)
	if !sub.CancelAtPeriodEnd || sub.Status != stripe.SubscriptionStatusActive || sub.CancelAt != sub.CurrentPeriodEnd || sub.CanceledAt != f.now.Unix() ||
		hs[0].Event.Data.PreviousAttributes["cancel_at_period_end"] != false {
		t.Fatalf("cancelled subscription = %+v, previous %v", sub, hs[0].Event.Data.PreviousAttributes)
	}
	_, page = f.get(t, path)
	if !strings.Contains(page, "will be canceled on") || !strings.Contains(page, "Renew plan") {
		t.Fatalf("portal page after cancel:\n%s", page)
	}

	// Renewing and cancelling again each say so once.
	portal("renew")
	portal("cancel")
	if got := typesOf(f.hooks.since(n + 1)); len(got) != 2 {
		t.Fatalf("renew, cancel events = %v", got)
	}

	// Just before the period's end nothing happens; just after, it ends.
	end := time.Unix(sub.CurrentPeriodEnd, 0)
	if _, evs := f.advance(t, `{"advance":"`+(end.Sub(f.now)-time.Second).String()+`"}`); len(evs) != 0 {
		t.Fatalf("events before the period's end = %v", evs)
	}
	if _, evs := f.advance(t, `{"advance":"1s"}`); len(evs) != 1 {
		t.Fatalf("events at the period's end = %v", evs)
	}
	hs = f.hooks.hooks()
	last := hs[len(hs)-1]
	if last.Event.Type != "customer.subscription.deleted" {
		t.Fatalf("last event = %s, want customer.subscription.deleted", last.Event.Type)
	}
	ended := last.Subscription(t)
	if ended.Status != stripe.SubscriptionStatusCanceled || ended.EndedAt != sub.CurrentPeriodEnd || last.Event.Created != sub.CurrentPeriodEnd {
		t.Fatalf("ended subscription = status %s, ended_at %d, event created %d; want canceled at %d", ended.Status, ended.EndedAt, last.Event.Created, sub.CurrentPeriodEnd)
	}
	if _, evs := f.advance(t, `{"advance":"2000h"}`); len(evs) != 0 {
		t.Fatalf("an ended subscription billed again: %v", evs)
	}
	resp, err := browser.PostForm(ps.URL, url.Values{"subscription": {subID}, "action": {"renew"}})
	if err != nil {
		t.Fatalf("portal renew: %v", err)
	}
	if readBody(t, resp); resp.StatusCode != http.StatusConflict {
		t.Fatalf("renew an ended subscription: status %d, want 409", resp.StatusCode)
	}
}

// Renewals, as /_control arms them: each case advances the clock step by
// step and names the events each step sends.
func TestRenewals(t *testing.T) {
	type step struct {
		clock  string
		events []string
		status stripe.SubscriptionStatus // the subscription's, after the step
	}
	const (
		updated = "customer.subscription.updated"
		deleted = "customer.subscription.deleted"
		paid    = "invoice.paid"
		failed  = "invoice.payment_failed"
	)
	next := `{"next_period":true}`
	tests := []struct {
		name     string
		renewals fakestripe.Renewals
		steps    []step
	}{
		{"renews", fakestripe.Renewals{}, []step{
			{next, []string{updated, paid}, "active"},
			{next, []string{updated, paid}, "active"},
		}},
		{"a failed renewal recovers on the first retry", fakestripe.Renewals{FailRenewals: 1}, []step{
			{next, []string{updated, failed, updated}, "past_due"},
			{`{"advance":"71h"}`, nil, "past_due"},
			{`{"advance":"1h"}`, []string{paid, updated}, "active"},
		}},
		{"retries exhausted cancel by default", fakestripe.Renewals{FailRenewals: 4}, []step{
			{next, []string{updated, failed, updated}, "past_due"},
			{`{"advance":"72h"}`, []string{failed}, "past_due"},
			{`{"advance":"120h"}`, []string{failed}, "past_due"},
			{`{"advance":"168h"}`, []string{failed, deleted}, "canceled"},
			{`{"advance":"2000h"}`, nil, "canceled"},
		}},
		{"retries exhausted leave it unpaid", fakestripe.Renewals{FailRenewals: 4, AfterRetries: "unpaid"}, []step{
			{`{"advance":"1100h"}`, []string{updated, failed, updated, failed, failed, failed, updated}, "unpaid"},
			{`{"advance":"2000h"}`, nil, "unpaid"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, fakestripe.Options{})
			f.toJanuary31(t)
			price := f.createPrice(t)
			cs := f.subscribe(t, price.ID)
			b, err := json.Marshal(tt.renewals)
			if err != nil {
				t.Fatalf("marshal renewals: %v", err)
			}
			if resp, body := f.do(t, http.MethodPost, "/_control", "application/json", string(b)); resp.StatusCode != http.StatusOK {
				t.Fatalf("POST /_control %s: status %d: %s", b, resp.StatusCode, body)
			}
			for i, st := range tt.steps {
				n := len(f.hooks.hooks())
				_, ids := f.advance(t, st.clock)
				hs := f.hooks.since(n)
				if got := typesOf(hs); !slices.Equal(got, st.events) || len(ids) != len(st.events) {
					t.Fatalf("step %d %s: events %v (ids %v), want %v", i, st.clock, got, ids, st.events)
				}
				sub, err := f.sc.Subscriptions.Get(cs.Subscription.ID, nil)
				if err != nil {
					t.Fatalf("step %d: retrieve: %v", i, err)
				}
				if sub.Status != st.status {
					t.Fatalf("step %d %s: status %s, want %s", i, st.clock, sub.Status, st.status)
				}
				for _, h := range hs {
					if h.Event.Type == failed {
						if inv := h.Invoice(t); inv.Paid || inv.Status != stripe.InvoiceStatusOpen || inv.BillingReason != stripe.InvoiceBillingReasonSubscriptionCycle {
							t.Fatalf("step %d: failed invoice = %+v", i, inv)
						}
					}
				}
			}
		})
	}
}

// A renewal's period follows the anchor day, clamped to short months, and
// its events carry what changed.
func TestRenewalPeriods(t *testing.T) {
	f := newFixture(t, fakestripe.Options{})
	y := f.toJanuary31(t).Year()
	price := f.createPrice(t)
	cs := f.subscribe(t, price.ID)
	wantEnds := []time.Time{
		time.Date(y, 3, 31, 12, 0, 0, 0, time.UTC),
		time.Date(y, 4, 30, 12, 0, 0, 0, time.UTC),
	}
	// February's last day: the 28th, or the 29th in a leap year.
	prevEnd := time.Date(y, 3, 0, 12, 0, 0, 0, time.UTC).Unix()
	for i, want := range wantEnds {
		n := len(f.hooks.hooks())
		now, _ := f.advance(t, `{"next_period":true}`)
		if now != prevEnd+3600 {
			t.Fatalf("renewal %d: clock at %d, want the period's end plus an hour, %d", i, now, prevEnd+3600)
		}
		hs := f.hooks.since(n)
		sub := hs[0].Subscription(t)
		if sub.CurrentPeriodStart != prevEnd || sub.CurrentPeriodEnd != want.Unix() || hs[0].Event.Created != prevEnd {
			t.Fatalf("renewal %d: period %d..%d (event at %d), want %d..%d", i, sub.CurrentPeriodStart, sub.CurrentPeriodEnd, hs[0].Event.Created, prevEnd, want.Unix())
		}
		if prev := hs[0].Event.Data.PreviousAttributes["current_period_end"]; prev != float64(prevEnd) {
			t.Fatalf("renewal %d: previous current_period_end %v, want %d", i, prev, prevEnd)
		}
		inv := hs[1].Invoice(t)
		if inv.ID != sub.LatestInvoice.ID || inv.Lines.Data[0].Period.End != want.Unix() || inv.Created != prevEnd || inv.StatusTransitions.PaidAt != prevEnd+3600 || inv.Subscription.ID != cs.Subscription.ID {
			t.Fatalf("renewal %d: invoice = %+v", i, inv)
		}
		prevEnd = want.Unix()
	}
}

func TestSubscriptionAPI(t *testing.T) {
	f := newFixture(t, fakestripe.Options{})
	price := f.createPrice(t)
	a := f.subscribe(t, price.ID).Subscription.ID
	b := f.subscribe(t, price.ID).Subscription.ID

	n := len(f.hooks.hooks())
	sub, err := f.sc.Subscriptions.Update(a, &stripe.SubscriptionParams{CancelAtPeriodEnd: stripe.Bool(true)})
	if err != nil || !sub.CancelAtPeriodEnd {
		t.Fatalf("update: %+v, %v", sub, err)
	}
	hs := f.hooks.since(n)
	if len(hs) != 1 || hs[0].Event.Type != "customer.subscription.updated" || hs[0].Event.Request == nil || hs[0].Event.Request.ID == "" {
		t.Fatalf("update events = %v", typesOf(hs))
	}
	// Nothing changed, nothing sent.
	if _, err := f.sc.Subscriptions.Update(a, &stripe.SubscriptionParams{CancelAtPeriodEnd: stripe.Bool(true)}); err != nil || len(f.hooks.since(n)) != 1 {
		t.Fatalf("repeat update: %v, events %v", err, typesOf(f.hooks.since(n)))
	}

	ended, err := f.sc.Subscriptions.Cancel(b, nil)
	if err != nil || ended.Status != stripe.SubscriptionStatusCanceled || ended.EndedAt != f.now.Unix() {
		t.Fatalf("cancel: %+v, %v", ended, err)
	}
	if got := typesOf(f.hooks.since(n + 1)); !slices.Equal(got, []string{"customer.subscription.deleted"}) {
		t.Fatalf("cancel events = %v", got)
	}
	_, err = f.sc.Subscriptions.Update(b, &stripe.SubscriptionParams{CancelAtPeriodEnd: stripe.Bool(false)})
	stripeError(t, err, http.StatusBadRequest, "")

	list := func(status string) []string {
		t.Helper()
		p := &stripe.SubscriptionListParams{}
		if status != "" {
			p.Status = stripe.String(status)
		}
		var ids []string
		it := f.sc.Subscriptions.List(p)
		for it.Next() {
			ids = append(ids, it.Subscription().ID)
		}
		if err := it.Err(); err != nil {
			t.Fatalf("list %q: %v", status, err)
		}
		slices.Sort(ids)
		return ids
	}
	for _, tt := range []struct {
		status string
		want   []string
	}{
		{"", []string{a}},
		{"active", []string{a}},
		{"canceled", []string{b}},
		{"all", []string{a, b}},
	} {
		want := slices.Sorted(slices.Values(tt.want))
		if got := list(tt.status); !slices.Equal(got, want) {
			t.Errorf("list status %q = %v, want %v", tt.status, got, want)
		}
	}
	_, err = f.sc.Subscriptions.Get("sub_none", nil)
	stripeError(t, err, http.StatusNotFound, stripe.ErrorCodeResourceMissing)
}

func TestClockRequests(t *testing.T) {
	f := newFixture(t, fakestripe.Options{})
	for _, tt := range []struct {
		body   string
		status int
	}{
		{`{"next_period":true}`, http.StatusBadRequest}, // no subscription yet
		{`{}`, http.StatusBadRequest},
		{`{"advance":"-1h"}`, http.StatusBadRequest},
		{`{"advance":"soon"}`, http.StatusBadRequest},
		{`{"advance":"1h","next_period":true}`, http.StatusBadRequest},
		{`{"advanc":"1h"}`, http.StatusBadRequest},
		{`{"advance":"1h"}`, http.StatusOK},
	} {
		resp, body := f.do(t, http.MethodPost, "/_clock", "application/json", tt.body)
		if resp.StatusCode != tt.status {
			t.Errorf("POST /_clock %s: status %d, want %d: %s", tt.body, resp.StatusCode, tt.status, body)
		}
	}
	_, body := f.get(t, "/_clock")
	var ans struct{ Now, OffsetS int64 }
	if err := json.Unmarshal([]byte(body), &ans); err != nil || ans.Now != f.now.Unix()+3600 {
		t.Fatalf("GET /_clock = %s (%v), want now %d", body, err, f.now.Unix()+3600)
	}
	// Signatures keep to the real clock, which the receiver checks them
	// against (stripe-go refuses only old ones): after an advance of a
	// year they are still stamped now.
	price := f.createPrice(t)
	f.subscribe(t, price.ID)
	f.advance(t, `{"advance":"8760h"}`)
	stamp := fmt.Sprintf("t=%d,", f.now.Unix())
	for _, h := range f.hooks.hooks() {
		if h.Err != nil || !strings.HasPrefix(h.Header.Get("Stripe-Signature"), stamp) {
			t.Fatalf("%s: signature %q (%v), want it stamped %s", h.Event.Type, h.Header.Get("Stripe-Signature"), h.Err, stamp)
		}
	}
	for _, tt := range []struct {
		body   string
		status int
	}{
		{`{"fail_renewals":-1}`, http.StatusBadRequest},
		{`{"after_retries":"paused"}`, http.StatusBadRequest},
		{`{"fail_renewals":2,"after_retries":"unpaid","duplicate":2}`, http.StatusOK},
	} {
		resp, body := f.do(t, http.MethodPost, "/_control", "application/json", tt.body)
		if resp.StatusCode != tt.status {
			t.Errorf("POST /_control %s: status %d, want %d: %s", tt.body, resp.StatusCode, tt.status, body)
		}
	}
}

// A customer whose renewal failed pays in the portal: the invoice is paid,
// the subscription active, and no retry follows.
func TestPortalPaysAFailedRenewal(t *testing.T) {
	f := newFixture(t, fakestripe.Options{})
	price := f.createPrice(t)
	cs := f.subscribe(t, price.ID)
	f.fake.SetRenewals(fakestripe.Renewals{FailRenewals: 4})
	f.advance(t, `{"next_period":true}`)
	ps, err := f.sc.BillingPortalSessions.New(&stripe.BillingPortalSessionParams{Customer: stripe.String(cs.Customer.ID)})
	if err != nil {
		t.Fatalf("create portal session: %v", err)
	}
	if _, page := f.get(t, strings.TrimPrefix(ps.URL, f.url)); !strings.Contains(page, "Pay now") {
		t.Fatalf("portal page of a past_due subscription:\n%s", page)
	}
	n := len(f.hooks.hooks())
	resp, err := browser.PostForm(ps.URL, url.Values{"subscription": {cs.Subscription.ID}, "action": {"pay"}})
	if err != nil {
		t.Fatalf("portal pay: %v", err)
	}
	if body := readBody(t, resp); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("portal pay: status %d: %s", resp.StatusCode, body)
	}
	hs := f.hooks.since(n)
	if got := typesOf(hs); !slices.Equal(got, []string{"invoice.paid", "customer.subscription.updated"}) {
		t.Fatalf("pay events = %v", got)
	}
	if inv := hs[0].Invoice(t); !inv.Paid || inv.AttemptCount != 2 {
		t.Fatalf("paid invoice = paid %v, attempts %d", inv.Paid, inv.AttemptCount)
	}
	if sub := hs[1].Subscription(t); sub.Status != stripe.SubscriptionStatusActive {
		t.Fatalf("subscription status %s, want active", sub.Status)
	}
	if _, evs := f.advance(t, `{"advance":"72h"}`); len(evs) != 0 {
		t.Fatalf("a retry after the invoice was paid: %v", evs)
	}
}

// A subscription's invoices are listed newest first, by subscription and
// status, and the charge that paid one names it, in the API and in
// charge.refunded: what the operator's refund of the chat finds and the
// webhook recognises.
func TestInvoicesListedAndTheirChargesNameThem(t *testing.T) {
	f := newFixture(t, fakestripe.Options{})
	price := f.createPrice(t)
	cs := f.subscribe(t, price.ID)
	other := f.subscribe(t, price.ID).Subscription.ID
	if resp, body := f.do(t, http.MethodPost, "/_control", "application/json", `{"fail_renewals":4}`); resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /_control: status %d: %s", resp.StatusCode, body)
	}
	f.advance(t, `{"next_period":true}`) // a renewal whose payment failed: open

	list := func(p *stripe.InvoiceListParams) []*stripe.Invoice {
		t.Helper()
		var out []*stripe.Invoice
		it := f.sc.Invoices.List(p)
		for it.Next() {
			out = append(out, it.Invoice())
		}
		if err := it.Err(); err != nil {
			t.Fatalf("list invoices: %v", err)
		}
		return out
	}
	all := list(&stripe.InvoiceListParams{Subscription: stripe.String(cs.Subscription.ID)})
	if len(all) != 2 || all[0].Status != stripe.InvoiceStatusOpen || all[1].ID != cs.Invoice.ID {
		t.Fatalf("the subscription's invoices: %d, first %s", len(all), all[0].Status)
	}
	paid := list(&stripe.InvoiceListParams{Subscription: stripe.String(cs.Subscription.ID), Status: stripe.String("paid")})
	if len(paid) != 1 || paid[0].ID != cs.Invoice.ID || paid[0].Subscription.ID != cs.Subscription.ID || paid[0].PaymentIntent == nil || paid[0].Charge == nil {
		t.Fatalf("paid invoices: %+v", paid)
	}
	if n := len(list(&stripe.InvoiceListParams{Subscription: stripe.String(other), Status: stripe.String("paid")})); n != 1 {
		t.Fatalf("the other subscription's paid invoices: %d", n)
	}
	bad := f.sc.Invoices.List(&stripe.InvoiceListParams{Status: stripe.String("settled")})
	bad.Next()
	stripeError(t, bad.Err(), http.StatusBadRequest, "")
	ch, err := f.sc.Charges.Get(paid[0].Charge.ID, nil)
	if err != nil || ch.Invoice == nil || ch.Invoice.ID != cs.Invoice.ID {
		t.Fatalf("the invoice's charge: %+v, %v", ch, err)
	}
	n := len(f.hooks.hooks())
	if _, err := f.sc.Refunds.New(&stripe.RefundParams{PaymentIntent: stripe.String(paid[0].PaymentIntent.ID)}); err != nil {
		t.Fatalf("refund: %v", err)
	}
	hs := f.hooks.since(n)
	if len(hs) != 1 || hs[0].Event.Type != "charge.refunded" || !strings.Contains(string(hs[0].Event.Data.Raw), `"invoice":"`+cs.Invoice.ID+`"`) {
		t.Fatalf("refund events %v", typesOf(hs))
	}
}
