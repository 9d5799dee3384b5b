package fakestripe_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/stripe/stripe-go/v76"
	"github.com/stripe/stripe-go/v76/webhook"

	fakestripe "42sisters.ai/oracle/infra/fakes/fakestripe"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/stripex"
)

func TestPayFlow(t *testing.T) {
	f := newFixture(t, fakestripe.Options{})
	cs := f.createSession(t, oracle.TierFull)

	resp, body := f.pay(t, cs.ID, url.Values{"email": {"ada@example.com"}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("status %d, want 303: %s", resp.StatusCode, body)
	}
	if want := "http://localhost:3000/result?session_id=" + cs.ID; resp.Header.Get("Location") != want {
		t.Errorf("Location = %q, want %q", resp.Header.Get("Location"), want)
	}

	hooks := f.hooks.hooks()
	if len(hooks) != 1 {
		t.Fatalf("received %d webhooks, want 1", len(hooks))
	}
	h := hooks[0]
	if h.Err != nil {
		t.Fatalf("ConstructEvent: %v", h.Err)
	}
	if h.Event.Type != "checkout.session.completed" || h.Event.APIVersion != stripe.APIVersion || h.Event.Livemode || h.Event.Created != f.now.Unix() || !strings.HasPrefix(h.Event.ID, "evt_") {
		t.Errorf("event = %s %s api %s livemode %v created %d", h.Event.ID, h.Event.Type, h.Event.APIVersion, h.Event.Livemode, h.Event.Created)
	}
	if got := h.Header.Get("Content-Type"); got != "application/json; charset=utf-8" {
		t.Errorf("Content-Type = %q", got)
	}
	if got := h.Header.Get("User-Agent"); got != "Stripe/1.0 (+https://stripe.com/docs/webhooks)" {
		t.Errorf("User-Agent = %q", got)
	}
	ev := h.Session(t)
	if ev.ID != cs.ID || ev.Status != stripe.CheckoutSessionStatusComplete || ev.PaymentStatus != stripe.CheckoutSessionPaymentStatusPaid ||
		ev.CustomerDetails == nil || ev.CustomerDetails.Email != "ada@example.com" || ev.PaymentIntent == nil || !strings.HasPrefix(ev.PaymentIntent.ID, "pi_") ||
		ev.Metadata[stripex.MetaTier] != "full" || ev.AmountTotal != 500 {
		t.Errorf("event session = %+v", ev)
	}

	got, err := f.sc.CheckoutSessions.Get(cs.ID, nil)
	if err != nil {
		t.Fatalf("retrieve: %v", err)
	}
	if got.Status != stripe.CheckoutSessionStatusComplete || got.PaymentStatus != stripe.CheckoutSessionPaymentStatusPaid || got.URL != "" || got.PaymentIntent.ID != ev.PaymentIntent.ID {
		t.Errorf("retrieved session status %s/%s url %q pi %v", got.Status, got.PaymentStatus, got.URL, got.PaymentIntent)
	}

	ds := f.fake.Deliveries()
	if len(ds) != 1 || ds[0].EventID != h.Event.ID || ds[0].SessionID != cs.ID || ds[0].Attempt != 1 || ds[0].Status != http.StatusOK || ds[0].Error != "" {
		t.Errorf("deliveries = %+v", ds)
	}

	// Paying twice is refused, and the pay page now says it is complete.
	if resp, _ := f.pay(t, cs.ID, url.Values{"email": {"ada@example.com"}}); resp.StatusCode != http.StatusConflict {
		t.Errorf("second payment: status %d, want 409", resp.StatusCode)
	}
	if resp, body := f.get(t, "/pay/"+cs.ID); resp.StatusCode != http.StatusOK || !strings.Contains(body, "already complete") {
		t.Errorf("pay page after payment: status %d: %s", resp.StatusCode, body)
	}
	if n := len(f.hooks.hooks()); n != 1 {
		t.Errorf("%d webhooks after the refused second payment, want 1", n)
	}
}

func TestPayPage(t *testing.T) {
	f := newFixture(t, fakestripe.Options{})
	cs := f.createSession(t, oracle.TierStrategy)

	resp, body := f.get(t, "/pay/"+cs.ID)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("status %d, type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	for _, want := range []string{"Strategy Session", "25.00 CAD", `name="email"`, `method="post"`, `action="/pay/` + cs.ID + `"`, ">Pay</button>"} {
		if !strings.Contains(body, want) {
			t.Errorf("pay page lacks %q", want)
		}
	}
	for _, unwanted := range []string{"Your idea", "<textarea", "<script", "src=", "<link"} {
		if strings.Contains(body, unwanted) {
			t.Errorf("pay page of an API session contains %q", unwanted)
		}
	}
	if resp, body := f.get(t, "/pay/cs_test_unknown"); resp.StatusCode != http.StatusNotFound || !strings.Contains(body, "does not exist") {
		t.Errorf("unknown session: status %d: %s", resp.StatusCode, body)
	}
}

func TestPayFormValidation(t *testing.T) {
	f := newFixture(t, fakestripe.Options{})
	api := f.createSession(t, oracle.TierQuick)
	resp, _ := f.get(t, "/link/quick")
	link := strings.TrimPrefix(resp.Header.Get("Location"), "/pay/")

	tests := []struct {
		name   string
		id     string
		form   url.Values
		status int
		want   string // in the page
	}{
		{"missing email", api.ID, url.Values{}, http.StatusBadRequest, "valid email"},
		{"invalid email", api.ID, url.Values{"email": {"ada at example"}}, http.StatusBadRequest, "valid email"},
		{"link without idea", link, url.Values{"email": {"ada@example.com"}}, http.StatusBadRequest, "Your idea is required"},
		{"link with blank idea", link, url.Values{"email": {"ada@example.com"}, "idea": {"  \n "}}, http.StatusBadRequest, "Your idea is required"},
		{"link with long idea", link, url.Values{"email": {"ada@example.com"}, "idea": {strings.Repeat("é", 256)}}, http.StatusBadRequest, "at most 255"},
		{"unknown session", "cs_test_unknown", url.Values{"email": {"ada@example.com"}}, http.StatusNotFound, "does not exist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := f.pay(t, tt.id, tt.form)
			if resp.StatusCode != tt.status || !strings.Contains(body, tt.want) {
				t.Errorf("status %d, want %d with %q: %s", resp.StatusCode, tt.status, tt.want, body)
			}
		})
	}
	// The rejected form keeps what was typed.
	_, body := f.pay(t, link, url.Values{"email": {"ada@example.com"}, "idea": {strings.Repeat("x", 300)}})
	if !strings.Contains(body, `value="ada@example.com"`) {
		t.Errorf("re-rendered form lost the email: %s", body)
	}
	for _, id := range []string{api.ID, link} {
		if cs, _ := f.fake.Session(id); cs.Status != stripe.CheckoutSessionStatusOpen {
			t.Errorf("session %s is %s after rejected forms, want open", id, cs.Status)
		}
	}
	if n := len(f.hooks.hooks()); n != 0 {
		t.Errorf("%d webhooks after rejected forms, want 0", n)
	}
}

func TestDelayedPayments(t *testing.T) {
	type step struct {
		typ    string
		status stripe.CheckoutSessionPaymentStatus
	}
	completedUnpaid := step{"checkout.session.completed", stripe.CheckoutSessionPaymentStatusUnpaid}
	completedPaid := step{"checkout.session.completed", stripe.CheckoutSessionPaymentStatusPaid}
	succeeded := step{"checkout.session.async_payment_succeeded", stripe.CheckoutSessionPaymentStatusPaid}
	failed := step{"checkout.session.async_payment_failed", stripe.CheckoutSessionPaymentStatusUnpaid}
	tests := []struct {
		name    string
		control fakestripe.Control
		delayed bool
		want    []step
		final   stripe.CheckoutSessionPaymentStatus
	}{
		{"immediate", fakestripe.Control{}, false, []step{completedPaid}, stripe.CheckoutSessionPaymentStatusPaid},
		{"delayed", fakestripe.Control{}, true, []step{completedUnpaid, succeeded}, stripe.CheckoutSessionPaymentStatusPaid},
		{"reorder", fakestripe.Control{Reorder: true}, true, []step{succeeded, completedUnpaid}, stripe.CheckoutSessionPaymentStatusPaid},
		{"fail_async", fakestripe.Control{FailAsync: true}, true, []step{completedUnpaid, failed}, stripe.CheckoutSessionPaymentStatusUnpaid},
		{"reorder implies delayed", fakestripe.Control{Reorder: true}, false, []step{succeeded, completedUnpaid}, stripe.CheckoutSessionPaymentStatusPaid},
		{"fail_async implies delayed", fakestripe.Control{FailAsync: true}, false, []step{completedUnpaid, failed}, stripe.CheckoutSessionPaymentStatusUnpaid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, fakestripe.Options{})
			cs := f.createSession(t, oracle.TierQuick)
			f.setControl(t, tt.control)
			form := url.Values{"email": {"ada@example.com"}}
			if tt.delayed {
				form.Set("delayed", "1")
			}
			if resp, body := f.pay(t, cs.ID, form); resp.StatusCode != http.StatusSeeOther {
				t.Fatalf("pay: status %d: %s", resp.StatusCode, body)
			}
			var got []step
			for _, h := range f.hooks.hooks() {
				if h.Err != nil {
					t.Fatalf("ConstructEvent: %v", h.Err)
				}
				got = append(got, step{string(h.Event.Type), h.Session(t).PaymentStatus})
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("webhooks = %v, want %v", got, tt.want)
			}
			final, _ := f.fake.Session(cs.ID)
			if final.PaymentStatus != tt.final || final.Status != stripe.CheckoutSessionStatusComplete {
				t.Errorf("final session %s/%s, want complete/%s", final.Status, final.PaymentStatus, tt.final)
			}
		})
	}
}

func TestDuplicateDeliveries(t *testing.T) {
	for _, concurrent := range []bool{false, true} {
		name := map[bool]string{false: "sequential", true: "concurrent"}[concurrent]
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, fakestripe.Options{})
			cs := f.createSession(t, oracle.TierQuick)
			f.setControl(t, fakestripe.Control{Duplicate: 3, Concurrent: concurrent})
			wantPeak := 1
			if concurrent {
				f.hooks.holdUntil(3)
				wantPeak = 3
			}
			f.pay(t, cs.ID, url.Values{"email": {"ada@example.com"}, "delayed": {"1"}})

			hooks := f.hooks.hooks()
			if len(hooks) != 6 {
				t.Fatalf("received %d webhooks, want 3 completed and 3 succeeded", len(hooks))
			}
			ids := map[string]int{}
			for _, h := range hooks {
				if h.Err != nil {
					t.Fatalf("ConstructEvent: %v", h.Err)
				}
				ids[h.Event.ID]++
			}
			if len(ids) != 2 {
				t.Errorf("event ids %v, want 2 events, 3 times each", ids)
			}
			for id, n := range ids {
				if n != 3 {
					t.Errorf("event %s delivered %d times, want 3", id, n)
				}
			}
			// Duplicates of one event all arrive before the next event.
			if got := f.hooks.types(); got[2] != "checkout.session.completed" || got[3] != "checkout.session.async_payment_succeeded" {
				t.Errorf("order = %v", got)
			}
			if got := f.hooks.peakConcurrency(); got != wantPeak {
				t.Errorf("%d deliveries in flight at once, want %d", got, wantPeak)
			}
			var attempts []int
			for _, d := range f.fake.Deliveries() {
				attempts = append(attempts, d.Attempt)
			}
			slices.Sort(attempts)
			if !slices.Equal(attempts, []int{1, 1, 2, 2, 3, 3}) {
				t.Errorf("attempts = %v", attempts)
			}
			// The control was consumed: the next payment is delivered once.
			next := f.createSession(t, oracle.TierQuick)
			f.pay(t, next.ID, url.Values{"email": {"ada@example.com"}})
			if n := len(f.hooks.hooks()); n != 7 {
				t.Errorf("%d webhooks after a second payment, want 7", n)
			}
		})
	}
}

func TestSignatures(t *testing.T) {
	tests := []struct {
		name    string
		control fakestripe.Control
		wantErr error
	}{
		{"bad signature", fakestripe.Control{BadSignature: true}, webhook.ErrNoValidSignature},
		{"stale signature", fakestripe.Control{StaleSignature: true}, webhook.ErrTooOld},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, fakestripe.Options{})
			cs := f.createSession(t, oracle.TierQuick)
			f.setControl(t, tt.control)
			f.pay(t, cs.ID, url.Values{"email": {"ada@example.com"}})
			hooks := f.hooks.hooks()
			if len(hooks) != 1 || !errors.Is(hooks[0].Err, tt.wantErr) {
				t.Fatalf("hooks = %+v, want one rejected with %v", hooks, tt.wantErr)
			}
			if ds := f.fake.Deliveries(); len(ds) != 1 || ds[0].Status != http.StatusBadRequest {
				t.Errorf("deliveries = %+v, want one answered 400", ds)
			}
		})
	}
}

// TestAnotherAPIVersionOnDemand: api_version delivers the next payment's
// events in that version, correctly signed, as an endpoint created with it
// would; the event as stored, and resent, keeps stripe-go's version, and
// the payment after it is back to stripe-go's.
func TestAnotherAPIVersionOnDemand(t *testing.T) {
	f := newFixture(t, fakestripe.Options{})
	const newer = "2024-09-30.acacia"
	f.setControl(t, fakestripe.Control{APIVersion: newer})
	cs := f.createSession(t, oracle.TierQuick)
	f.pay(t, cs.ID, url.Values{"email": {"ada@example.com"}})
	hooks := f.hooks.hooks()
	// stripe-go's ConstructEvent checks the signature, then refuses the
	// version, as the service's webhook does.
	if len(hooks) != 1 || hooks[0].Err == nil || !strings.Contains(hooks[0].Err.Error(), "API version "+newer) || hooks[0].Event.APIVersion != newer {
		t.Fatalf("hooks = %+v, want one in %s", hooks, newer)
	}
	if got := hooks[0].Session(t); got.ID != cs.ID {
		t.Errorf("event session = %s, want %s", got.ID, cs.ID)
	}

	if resp, _ := f.do(t, http.MethodPost, "/_events/"+hooks[0].Event.ID+"/deliver", "", ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("resend: status %d", resp.StatusCode)
	}
	next := f.createSession(t, oracle.TierQuick)
	f.pay(t, next.ID, url.Values{"email": {"ada@example.com"}})
	hooks = f.hooks.hooks()
	if len(hooks) != 3 {
		t.Fatalf("%d webhooks, want 3", len(hooks))
	}
	for i, h := range hooks[1:] {
		if h.Err != nil || h.Event.APIVersion != stripe.APIVersion {
			t.Errorf("webhook %d: version %s, err %v; want %s", i+2, h.Event.APIVersion, h.Err, stripe.APIVersion)
		}
	}
}

func TestSkipDeliveryAndResend(t *testing.T) {
	f := newFixture(t, fakestripe.Options{})
	cs := f.createSession(t, oracle.TierQuick)
	f.setControl(t, fakestripe.Control{SkipDelivery: true})
	if resp, _ := f.pay(t, cs.ID, url.Values{"email": {"ada@example.com"}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("pay: status %d", resp.StatusCode)
	}
	if n := len(f.hooks.hooks()); n != 0 {
		t.Fatalf("%d webhooks with skip_delivery, want 0", n)
	}

	resp, body := f.do(t, http.MethodGet, "/_events", "", "")
	var events []stripe.Event
	if err := json.Unmarshal([]byte(body), &events); err != nil || resp.StatusCode != http.StatusOK || len(events) != 1 {
		t.Fatalf("GET /_events: status %d, err %v: %s", resp.StatusCode, err, body)
	}
	evt := events[0]
	if evt.Type != "checkout.session.completed" || evt.Data.Object["id"] != cs.ID {
		t.Errorf("stored event = %s %v", evt.Type, evt.Data.Object["id"])
	}

	for attempt := 1; attempt <= 2; attempt++ {
		resp, body = f.do(t, http.MethodPost, "/_events/"+evt.ID+"/deliver", "", "")
		var d fakestripe.Delivery
		if err := json.Unmarshal([]byte(body), &d); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("resend: status %d, err %v: %s", resp.StatusCode, err, body)
		}
		if d.EventID != evt.ID || d.Attempt != attempt || d.Status != http.StatusOK {
			t.Errorf("resend %d: delivery = %+v", attempt, d)
		}
	}
	hooks := f.hooks.hooks()
	if len(hooks) != 2 || hooks[0].Err != nil || hooks[1].Event.ID != evt.ID {
		t.Errorf("hooks after resends = %+v", hooks)
	}

	resp, body = f.do(t, http.MethodGet, "/_deliveries", "", "")
	var ds []fakestripe.Delivery
	if err := json.Unmarshal([]byte(body), &ds); err != nil || len(ds) != 2 {
		t.Errorf("GET /_deliveries: status %d, err %v: %s", resp.StatusCode, err, body)
	}

	if resp, _ := f.do(t, http.MethodPost, "/_events/evt_unknown/deliver", "", ""); resp.StatusCode != http.StatusNotFound {
		t.Errorf("resend of an unknown event: status %d, want 404", resp.StatusCode)
	}
}

func TestNoWebhookURL(t *testing.T) {
	fake := fakestripe.New(fakestripe.Options{Rand: seeded(2)})
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	cs, err := newClient(testKey, srv.URL).CheckoutSessions.New(sessionParams(oracle.TierQuick))
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	resp, err := browser.PostForm(srv.URL+"/pay/"+cs.ID, url.Values{"email": {"ada@example.com"}})
	if err != nil {
		t.Fatalf("pay: %v", err)
	}
	readBody(t, resp)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("pay: status %d, want 303", resp.StatusCode)
	}
	if ds := fake.Deliveries(); len(ds) != 0 {
		t.Errorf("deliveries = %+v, want none without a webhook URL", ds)
	}
	resp, err = browser.Get(srv.URL + "/_events")
	if err != nil {
		t.Fatalf("GET /_events: %v", err)
	}
	var events []stripe.Event
	if err := json.Unmarshal([]byte(readBody(t, resp)), &events); err != nil || len(events) != 1 {
		t.Fatalf("events = %v, err %v; want the completed event stored", events, err)
	}
	resp, err = browser.Post(srv.URL+"/_events/"+events[0].ID+"/deliver", "", nil)
	if err != nil {
		t.Fatalf("resend: %v", err)
	}
	if readBody(t, resp); resp.StatusCode != http.StatusConflict {
		t.Errorf("resend without a webhook URL: status %d, want 409", resp.StatusCode)
	}
}

func TestControlEndpoint(t *testing.T) {
	f := newFixture(t, fakestripe.Options{})
	tests := []struct {
		name   string
		body   string
		status int
	}{
		{"reset", `{}`, http.StatusOK},
		{"all fields", `{"duplicate":2,"concurrent":true,"reorder":true,"bad_signature":true,"stale_signature":true,"fail_async":true,"skip_delivery":true,"api_version":"2024-09-30.acacia"}`, http.StatusOK},
		{"unknown field", `{"duplicates":3}`, http.StatusBadRequest},
		{"negative duplicate", `{"duplicate":-1}`, http.StatusBadRequest},
		{"wrong type", `{"reorder":"yes"}`, http.StatusBadRequest},
		{"trailing data", `{} {}`, http.StatusBadRequest},
		{"empty body", ``, http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := f.do(t, http.MethodPost, "/_control", "application/json", tt.body)
			if resp.StatusCode != tt.status {
				t.Errorf("status %d, want %d: %s", resp.StatusCode, tt.status, body)
			}
		})
	}

	// A reset clears a pending control.
	f.setControl(t, fakestripe.Control{SkipDelivery: true})
	f.setControl(t, fakestripe.Control{})
	cs := f.createSession(t, oracle.TierQuick)
	f.pay(t, cs.ID, url.Values{"email": {"ada@example.com"}})
	if n := len(f.hooks.hooks()); n != 1 {
		t.Errorf("%d webhooks after a reset control, want 1", n)
	}
}

func TestPaymentLinkFlow(t *testing.T) {
	f := newFixture(t, fakestripe.Options{LinkSuccessURL: "http://localhost:3000/result?session_id={CHECKOUT_SESSION_ID}"})
	for _, tier := range oracle.Tiers() {
		t.Run(string(tier), func(t *testing.T) {
			resp, _ := f.get(t, "/link/"+string(tier))
			loc := resp.Header.Get("Location")
			id, ok := strings.CutPrefix(loc, "/pay/")
			if resp.StatusCode != http.StatusSeeOther || !ok || !oracle.ValidSessionID(id) {
				t.Fatalf("GET /link/%s: status %d Location %q", tier, resp.StatusCode, loc)
			}
			cs, err := f.sc.CheckoutSessions.Get(id, nil)
			if err != nil {
				t.Fatalf("retrieve: %v", err)
			}
			if len(cs.Metadata) != 1 || cs.Metadata[stripex.MetaTier] != string(tier) || cs.AmountTotal != tier.PriceCents() || cs.Currency != oracle.Currency || cs.PaymentLink == nil {
				t.Errorf("link session metadata %v amount %d %s payment_link %v", cs.Metadata, cs.AmountTotal, cs.Currency, cs.PaymentLink)
			}
			if len(cs.CustomFields) != 1 || cs.CustomFields[0].Key != "idea" || cs.CustomFields[0].Label.Custom != "Your idea" ||
				cs.CustomFields[0].Optional || cs.CustomFields[0].Text.MaximumLength != 255 || cs.CustomFields[0].Text.Value != "" {
				t.Errorf("custom_fields = %+v", cs.CustomFields)
			}

			_, page := f.get(t, loc)
			for _, want := range []string{tier.Name(), "Your idea", `<textarea id="field-idea" name="idea"`, "required"} {
				if !strings.Contains(page, want) {
					t.Errorf("pay page lacks %q", want)
				}
			}

			idea := "A café <b>for</b> dogs 🐕"
			resp, body := f.pay(t, id, url.Values{"email": {"bo@example.com"}, "idea": {idea}})
			if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "http://localhost:3000/result?session_id="+id {
				t.Fatalf("pay: status %d Location %q: %s", resp.StatusCode, resp.Header.Get("Location"), body)
			}
			hooks := f.hooks.hooks()
			ev := hooks[len(hooks)-1].Session(t)
			if ev.ID != id || len(ev.CustomFields) != 1 || ev.CustomFields[0].Text.Value != idea || ev.PaymentStatus != stripe.CheckoutSessionPaymentStatusPaid {
				t.Errorf("event session %s custom_fields %+v payment_status %s", ev.ID, ev.CustomFields, ev.PaymentStatus)
			}
			if gotTier, query, drop := stripex.Resolve(ev.Metadata, ev.CustomFields[0].Text.Value); gotTier != tier || query != idea || drop != oracle.DropNone {
				t.Errorf("stripex.Resolve = %s %q %q", gotTier, query, drop)
			}
		})
	}

	if resp, _ := f.get(t, "/link/premium"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown tier: status %d, want 404", resp.StatusCode)
	}
}

func TestPaymentLinkWithoutSuccessURL(t *testing.T) {
	f := newFixture(t, fakestripe.Options{})
	resp, _ := f.get(t, "/link/quick")
	id := strings.TrimPrefix(resp.Header.Get("Location"), "/pay/")
	resp, _ = f.pay(t, id, url.Values{"email": {"bo@example.com"}, "idea": {"x"}})
	if want := f.url + "/pay/" + id; resp.Header.Get("Location") != want {
		t.Fatalf("Location = %q, want the fake's confirmation page %q", resp.Header.Get("Location"), want)
	}
	if resp, body := f.get(t, "/pay/"+id); !strings.Contains(body, "already complete") {
		t.Errorf("confirmation page: status %d: %s", resp.StatusCode, body)
	}
}
