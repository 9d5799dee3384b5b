package fakestripe_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stripe/stripe-go/v76"

	fakestripe "42sisters.ai/oracle/infra/fakes/fakestripe"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/stripex"
)

func TestCreateAndRetrieveSessionPerTier(t *testing.T) {
	f := newFixture(t, fakestripe.Options{PublicURL: "http://localhost:3001/"})
	for _, tier := range oracle.Tiers() {
		t.Run(string(tier), func(t *testing.T) {
			created := f.createSession(t, tier)
			got, err := f.sc.CheckoutSessions.Get(created.ID, nil)
			if err != nil {
				t.Fatalf("retrieve: %v", err)
			}
			for _, cs := range []*stripe.CheckoutSession{created, got} {
				if !oracle.ValidSessionID(cs.ID) || len(cs.ID) != len("cs_test_")+58 {
					t.Errorf("id %q: want cs_test_ and 58 alphanumerics", cs.ID)
				}
				if cs.ID != created.ID || cs.Object != "checkout.session" {
					t.Errorf("id, object = %q, %q; want %q, checkout.session", cs.ID, cs.Object, created.ID)
				}
				if cs.AmountTotal != tier.PriceCents() || cs.AmountSubtotal != tier.PriceCents() || cs.Currency != oracle.Currency {
					t.Errorf("amounts = %d/%d %s, want %d %s", cs.AmountSubtotal, cs.AmountTotal, cs.Currency, tier.PriceCents(), oracle.Currency)
				}
				if cs.Status != stripe.CheckoutSessionStatusOpen || cs.PaymentStatus != stripe.CheckoutSessionPaymentStatusUnpaid {
					t.Errorf("status = %s/%s, want open/unpaid", cs.Status, cs.PaymentStatus)
				}
				if want := "http://localhost:3001/pay/" + created.ID; cs.URL != want {
					t.Errorf("url = %q, want %q", cs.URL, want)
				}
				if cs.Livemode || cs.Mode != stripe.CheckoutSessionModePayment || cs.Created != f.now.Unix() || cs.ExpiresAt != f.now.Unix()+86400 {
					t.Errorf("livemode, mode, created, expires_at = %v, %s, %d, %d", cs.Livemode, cs.Mode, cs.Created, cs.ExpiresAt)
				}
				if cs.Metadata[stripex.MetaTier] != string(tier) || cs.Metadata[stripex.MetaChunks] != "1" || cs.Metadata["q0"] != "Should I open a bakery?" {
					t.Errorf("metadata = %v", cs.Metadata)
				}
				if cs.PaymentIntent != nil || cs.CustomerDetails != nil || len(cs.CustomFields) != 0 {
					t.Errorf("payment_intent, customer_details, custom_fields = %v, %v, %v; want null, null, []", cs.PaymentIntent, cs.CustomerDetails, cs.CustomFields)
				}
				if !strings.Contains(cs.SuccessURL, "{CHECKOUT_SESSION_ID}") || cs.CancelURL != "http://localhost:3000/" {
					t.Errorf("success_url, cancel_url = %q, %q", cs.SuccessURL, cs.CancelURL)
				}
			}
		})
	}
}

func TestSessionJSONShape(t *testing.T) {
	f := newFixture(t, fakestripe.Options{})
	cs := f.createSession(t, oracle.TierQuick)
	resp, body := f.do(t, http.MethodGet, "/v1/checkout/sessions/"+cs.ID, "", "")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(body), &raw); err != nil {
		t.Fatalf("decode: %v", err)
	}
	want := map[string]string{
		"customer_details": "null",
		"payment_intent":   "null",
		"customer_email":   "null",
		"custom_fields":    "[]",
		"livemode":         "false",
		"status":           `"open"`,
	}
	for k, v := range want {
		if string(raw[k]) != v {
			t.Errorf("%s = %s, want %s", k, raw[k], v)
		}
	}
	// Without PublicURL the pay URL is the host the session was created on.
	if u := string(raw["url"]); u != fmt.Sprintf("%q", f.url+"/pay/"+cs.ID) {
		t.Errorf("url = %s, want %s/pay/%s", u, f.url, cs.ID)
	}
}

func TestCreateSessionValidation(t *testing.T) {
	metadata := func(n, keyLen, valLen int, val string) func(*stripe.CheckoutSessionParams) {
		return func(p *stripe.CheckoutSessionParams) {
			p.Metadata = nil
			for i := range n {
				key := fmt.Sprintf("k%0*d", keyLen-1, i)
				v := val
				if v == "" {
					v = strings.Repeat("v", valLen)
				}
				p.AddMetadata(key, v)
			}
		}
	}
	tests := []struct {
		name   string
		modify func(*stripe.CheckoutSessionParams)
		param  string // empty: the call must succeed
		code   stripe.ErrorCode
	}{
		{name: "valid", modify: func(*stripe.CheckoutSessionParams) {}},
		{name: "50 metadata keys", modify: metadata(50, 2, 1, "")},
		{name: "51 metadata keys", modify: metadata(51, 2, 1, ""), param: "metadata"},
		{name: "40-char key", modify: metadata(1, 40, 1, "")},
		{name: "41-char key", modify: metadata(1, 41, 1, ""), param: "metadata[k" + strings.Repeat("0", 40) + "]"},
		{name: "500-char value", modify: metadata(1, 2, 500, "")},
		{name: "501-char value", modify: metadata(1, 2, 501, ""), param: "metadata[k0]"},
		// 250 emoji are 1000 bytes but 500 UTF-16 code units: allowed.
		{name: "500 UTF-16 units", modify: metadata(1, 2, 0, strings.Repeat("😀", 250))},
		{name: "502 UTF-16 units", modify: metadata(1, 2, 0, strings.Repeat("😀", 251)), param: "metadata[k0]"},
		{name: "missing success_url", modify: func(p *stripe.CheckoutSessionParams) { p.SuccessURL = nil }, param: "success_url", code: stripe.ErrorCodeParameterMissing},
		{name: "relative success_url", modify: func(p *stripe.CheckoutSessionParams) { p.SuccessURL = stripe.String("/result") }, param: "success_url", code: stripe.ErrorCodeURLInvalid},
		{name: "missing mode", modify: func(p *stripe.CheckoutSessionParams) { p.Mode = nil }, param: "mode", code: stripe.ErrorCodeParameterMissing},
		{name: "subscription mode without a recurring price", modify: func(p *stripe.CheckoutSessionParams) { p.Mode = stripe.String("subscription") }, param: "line_items"},
		{name: "setup mode", modify: func(p *stripe.CheckoutSessionParams) { p.Mode = stripe.String("setup") }, param: "mode"},
		{name: "missing line_items", modify: func(p *stripe.CheckoutSessionParams) { p.LineItems = nil }, param: "line_items", code: stripe.ErrorCodeParameterMissing},
		{name: "invalid currency", modify: func(p *stripe.CheckoutSessionParams) { p.LineItems[0].PriceData.Currency = stripe.String("xyz") }, param: "line_items[0][price_data][currency]"},
		{name: "missing quantity", modify: func(p *stripe.CheckoutSessionParams) { p.LineItems[0].Quantity = nil }, param: "line_items[0][quantity]", code: stripe.ErrorCodeParameterMissing},
		{name: "zero quantity", modify: func(p *stripe.CheckoutSessionParams) { p.LineItems[0].Quantity = stripe.Int64(0) }, param: "line_items[0][quantity]", code: stripe.ErrorCodeParameterInvalidInteger},
		{name: "negative unit_amount", modify: func(p *stripe.CheckoutSessionParams) { p.LineItems[0].PriceData.UnitAmount = stripe.Int64(-1) }, param: "line_items[0][price_data][unit_amount]", code: stripe.ErrorCodeParameterInvalidInteger},
		{name: "missing product name", modify: func(p *stripe.CheckoutSessionParams) { p.LineItems[0].PriceData.ProductData = nil }, param: "line_items[0][price_data][product_data][name]", code: stripe.ErrorCodeParameterMissing},
		{name: "price id", modify: func(p *stripe.CheckoutSessionParams) {
			p.LineItems[0].PriceData = nil
			p.LineItems[0].Price = stripe.String("price_123")
		}, param: "line_items[0][price]", code: stripe.ErrorCodeResourceMissing},
		{name: "bad customer_email", modify: func(p *stripe.CheckoutSessionParams) { p.CustomerEmail = stripe.String("not-an-email") }, param: "customer_email", code: stripe.ErrorCodeEmailInvalid},
		{name: "expires_at too late", modify: func(p *stripe.CheckoutSessionParams) { p.ExpiresAt = stripe.Int64(1 << 40) }, param: "expires_at"},
		{name: "unknown parameter", modify: func(p *stripe.CheckoutSessionParams) { p.AddExtra("tier", "quick") }, param: "tier", code: stripe.ErrorCodeParameterUnknown},
		{name: "expand", modify: func(p *stripe.CheckoutSessionParams) { p.AddExpand("line_items") }, param: "expand"},
	}
	f := newFixture(t, fakestripe.Options{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := sessionParams(oracle.TierFull)
			tt.modify(p)
			cs, err := f.sc.CheckoutSessions.New(p)
			if tt.param == "" {
				if err != nil {
					t.Fatalf("create: %v", err)
				}
				if _, ok := f.fake.Session(cs.ID); !ok {
					t.Fatalf("session %s not stored", cs.ID)
				}
				return
			}
			se := stripeError(t, err, http.StatusBadRequest, tt.code)
			if se.Param != tt.param {
				t.Errorf("param = %q, want %q (%s)", se.Param, tt.param, se.Msg)
			}
		})
	}
}

func TestEmptyMetadataValueIsUnset(t *testing.T) {
	f := newFixture(t, fakestripe.Options{})
	p := sessionParams(oracle.TierQuick)
	p.AddMetadata("q1", "")
	cs, err := f.sc.CheckoutSessions.New(p)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if _, ok := cs.Metadata["q1"]; ok {
		t.Errorf("metadata = %v: an empty value must leave the key unset, as on Stripe", cs.Metadata)
	}
}

func TestAuthentication(t *testing.T) {
	f := newFixture(t, fakestripe.Options{})
	tests := []struct{ name, key string }{
		{"empty", ""},
		{"live key", "sk_live_abcdefghijklmnop"},
		{"publishable key", "pk_test_abcdefghijklmnop"},
		{"prefix only", "sk_test_"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := newClient(tt.key, f.url)
			_, err := sc.CheckoutSessions.New(sessionParams(oracle.TierQuick))
			se := stripeError(t, err, http.StatusUnauthorized, "")
			if tt.key != "" && !strings.HasPrefix(se.Msg, "Invalid API Key provided") {
				t.Errorf("message = %q", se.Msg)
			}
			if strings.Contains(se.Msg, "abcdefghijklmnop") {
				t.Errorf("message %q shows the whole key", se.Msg)
			}
		})
	}
	if n := len(f.fake.Calls()); n != len(tests) {
		t.Errorf("%d calls recorded, want %d", n, len(tests))
	}
	for _, c := range f.fake.Calls() {
		if c.Status != http.StatusUnauthorized {
			t.Errorf("call %s %s status %d, want 401", c.Method, c.Path, c.Status)
		}
	}
}

func TestRetrieveUnknownSession(t *testing.T) {
	f := newFixture(t, fakestripe.Options{})
	_, err := f.sc.CheckoutSessions.Get("cs_test_doesnotexist", nil)
	se := stripeError(t, err, http.StatusNotFound, stripe.ErrorCodeResourceMissing)
	if !strings.Contains(se.Msg, "cs_test_doesnotexist") {
		t.Errorf("message = %q, want it to name the id", se.Msg)
	}
}

func TestUnknownRoutes(t *testing.T) {
	f := newFixture(t, fakestripe.Options{})
	tests := []struct{ method, path string }{
		{http.MethodGet, "/v1/customers"},
		{http.MethodGet, "/v1/checkout/sessions/cs_test_x/line_items"},
		{http.MethodDelete, "/v1/checkout/sessions/cs_test_x"},
		{http.MethodGet, "/nothing/here"},
		{http.MethodPut, "/pay/cs_test_x"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			resp, body := f.do(t, tt.method, tt.path, "", "")
			var e struct {
				Error struct{ Type, Message string }
			}
			if resp.StatusCode != http.StatusNotFound || json.Unmarshal([]byte(body), &e) != nil || e.Error.Type != "invalid_request_error" {
				t.Fatalf("status %d body %s, want 404 with a Stripe error", resp.StatusCode, body)
			}
			if !strings.Contains(e.Error.Message, "Unrecognized request URL") {
				t.Errorf("message = %q", e.Error.Message)
			}
		})
	}
}

func TestIdempotencyKey(t *testing.T) {
	f := newFixture(t, fakestripe.Options{})
	create := func(key string, tier oracle.Tier) (*stripe.CheckoutSession, error) {
		p := sessionParams(tier)
		p.SetIdempotencyKey(key)
		return f.sc.CheckoutSessions.New(p)
	}
	first, err := create("order-1", oracle.TierQuick)
	if err != nil {
		t.Fatalf("first create: %v", err)
	}
	again, err := create("order-1", oracle.TierQuick)
	if err != nil {
		t.Fatalf("repeat create: %v", err)
	}
	if again.ID != first.ID {
		t.Errorf("same key: session %s, want %s", again.ID, first.ID)
	}
	other, err := create("order-2", oracle.TierQuick)
	if err != nil {
		t.Fatalf("other key: %v", err)
	}
	if other.ID == first.ID {
		t.Errorf("different key returned the same session %s", other.ID)
	}
	_, err = create("order-1", oracle.TierStrategy)
	var se *stripe.Error
	if !errors.As(err, &se) || se.Type != stripe.ErrorTypeIdempotency || se.HTTPStatusCode != http.StatusBadRequest {
		t.Errorf("key reused with other parameters: err = %v, want a 400 idempotency_error", err)
	}
}

func TestCallsRecorded(t *testing.T) {
	f := newFixture(t, fakestripe.Options{})
	cs := f.createSession(t, oracle.TierStrategy)
	if _, err := f.sc.CheckoutSessions.Get(cs.ID, nil); err != nil {
		t.Fatalf("retrieve: %v", err)
	}
	calls := f.fake.Calls()
	if len(calls) != 2 {
		t.Fatalf("calls = %+v, want 2", calls)
	}
	if c := calls[0]; c.Method != http.MethodPost || c.Path != "/v1/checkout/sessions" || c.Status != http.StatusOK ||
		c.Params.Get("line_items[0][price_data][unit_amount]") != "2500" || c.Params.Get("metadata[tier]") != "strategy" || c.IdempotencyKey == "" {
		t.Errorf("create call = %+v", c)
	}
	if c := calls[1]; c.Method != http.MethodGet || c.Path != "/v1/checkout/sessions/"+cs.ID || c.Status != http.StatusOK || !c.Time.Equal(f.now) {
		t.Errorf("retrieve call = %+v", c)
	}

	resp, body := f.do(t, http.MethodGet, "/_calls", "", "")
	var listed []fakestripe.Call
	if err := json.Unmarshal([]byte(body), &listed); err != nil || resp.StatusCode != http.StatusOK || len(listed) != 2 {
		t.Fatalf("GET /_calls: status %d, %d calls, err %v: %s", resp.StatusCode, len(listed), err, body)
	}
	if listed[0].Params.Get("mode") != "payment" {
		t.Errorf("GET /_calls params = %v", listed[0].Params)
	}
	if resp, _ := f.do(t, http.MethodDelete, "/_calls", "", ""); resp.StatusCode != http.StatusNoContent {
		t.Errorf("DELETE /_calls: status %d", resp.StatusCode)
	}
	if n := len(f.fake.Calls()); n != 0 {
		t.Errorf("%d calls after DELETE /_calls, want 0", n)
	}
}

func TestIDsAreDeterministic(t *testing.T) {
	ids := func() []string {
		f := newFixture(t, fakestripe.Options{})
		return []string{f.createSession(t, oracle.TierQuick).ID, f.createSession(t, oracle.TierFull).ID}
	}
	a, b := ids(), ids()
	if a[0] != b[0] || a[1] != b[1] || a[0] == a[1] {
		t.Errorf("ids with the same seed: %v and %v, want equal pairs of distinct ids", a, b)
	}
}
