package fakestripe_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v76"

	fakestripe "42sisters.ai/oracle/infra/fakes/fakestripe"
	"42sisters.ai/oracle/shared/oracle"
)

// ofType returns the webhooks received of type typ, each checked to carry
// a valid signature.
func (f *fixture) ofType(t *testing.T, typ string) []hook {
	t.Helper()
	var out []hook
	for _, h := range f.hooks.hooks() {
		if string(h.Event.Type) != typ {
			continue
		}
		if h.Err != nil {
			t.Fatalf("%s webhook: ConstructEvent: %v", typ, h.Err)
		}
		out = append(out, h)
	}
	return out
}

// events lists GET /_events.
func (f *fixture) events(t *testing.T) []stripe.Event {
	t.Helper()
	resp, body := f.do(t, http.MethodGet, "/_events", "", "")
	var evs []stripe.Event
	if err := json.Unmarshal([]byte(body), &evs); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /_events: status %d, err %v: %s", resp.StatusCode, err, body)
	}
	return evs
}

// countEvents counts the stored events of type typ.
func (f *fixture) countEvents(t *testing.T, typ string) int {
	t.Helper()
	n := 0
	for _, ev := range f.events(t) {
		if string(ev.Type) == typ {
			n++
		}
	}
	return n
}

// decode unmarshals an event's data.object into a stripe-go object.
func decode[T any](t *testing.T, h hook) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(h.Event.Data.Raw, &v); err != nil {
		t.Fatalf("decode %s data.object as %T: %v", h.Event.Type, v, err)
	}
	return v
}

// checkEvent checks what every money event carries: Stripe's envelope,
// test mode, and a signature that verified.
func (f *fixture) checkEvent(t *testing.T, h hook) {
	t.Helper()
	ev := h.Event
	if !strings.HasPrefix(ev.ID, "evt_") || ev.Object != "event" || ev.APIVersion != stripe.APIVersion || ev.Livemode || ev.Created != f.now.Unix() || ev.Request == nil {
		t.Errorf("event %s %s: object %q api %s livemode %v created %d request %+v", ev.ID, ev.Type, ev.Object, ev.APIVersion, ev.Livemode, ev.Created, ev.Request)
	}
}

// refundRaw sends POST /v1/refunds as another client would: its own key,
// no Idempotency-Key unless one is given.
func (f *fixture) refundRaw(t *testing.T, key, idemKey string, form url.Values) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, f.url+"/v1/refunds", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if idemKey != "" {
		req.Header.Set("Idempotency-Key", idemKey)
	}
	resp, err := browser.Do(req)
	if err != nil {
		t.Fatalf("POST /v1/refunds: %v", err)
	}
	return resp, readBody(t, resp)
}

func TestRefundsEmitChargeRefunded(t *testing.T) {
	f := newFixture(t, fakestripe.Options{})
	cs := f.createSession(t, oracle.TierStrategy) // 2500 cents
	if resp, body := f.pay(t, cs.ID, url.Values{"email": {"ada@example.com"}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("pay: status %d: %s", resp.StatusCode, body)
	}
	paid, _ := f.fake.Session(cs.ID)
	pi := paid.PaymentIntent.ID

	// Each step runs against the state the previous steps left.
	steps := []struct {
		name     string
		amount   int64 // 0 refunds the rest
		key      string
		refunded int64 // amount_refunded after the step
		previous map[string]any
	}{
		{"partial", 1000, "refund-partial", 1000, map[string]any{"amount_refunded": 0.0}},
		{"another partial", 500, "refund-more", 1500, map[string]any{"amount_refunded": 1000.0}},
		{"the rest", 0, "refund-rest", 2500, map[string]any{"amount_refunded": 1500.0, "refunded": false}},
	}
	var chargeID string
	for i, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			p := &stripe.RefundParams{PaymentIntent: stripe.String(pi)}
			if st.amount != 0 {
				p.Amount = stripe.Int64(st.amount)
			}
			p.SetIdempotencyKey(st.key)
			re, err := f.sc.Refunds.New(p)
			if err != nil {
				t.Fatalf("refund: %v", err)
			}
			if re.Charge == nil || !strings.HasPrefix(re.Charge.ID, "ch_") || (chargeID != "" && re.Charge.ID != chargeID) {
				t.Fatalf("refund charge = %+v, want the payment's one ch_ charge", re.Charge)
			}
			chargeID = re.Charge.ID

			hooks := f.ofType(t, "charge.refunded")
			if len(hooks) != i+1 {
				t.Fatalf("%d charge.refunded webhooks after %d refunds", len(hooks), i+1)
			}
			h := hooks[i]
			f.checkEvent(t, h)
			if h.Event.Request.ID == "" || h.Event.Request.ID != re.LastResponse.RequestID || h.Event.Request.IdempotencyKey != st.key {
				t.Errorf("event request = %+v, want the call's Request-Id %q and key %q", h.Event.Request, re.LastResponse.RequestID, st.key)
			}
			ch := decode[stripe.Charge](t, h)
			if ch.ID != chargeID || ch.Object != "charge" || ch.Amount != 2500 || ch.AmountCaptured != 2500 || ch.AmountRefunded != st.refunded ||
				ch.Currency != oracle.Currency || ch.PaymentIntent == nil || ch.PaymentIntent.ID != pi || ch.Refunded != (st.refunded == 2500) ||
				ch.Livemode || ch.Created != f.now.Unix() || ch.Status != stripe.ChargeStatusSucceeded || !ch.Paid || !ch.Captured || ch.Disputed ||
				ch.Metadata == nil || len(ch.Metadata) != 0 || ch.Refunds != nil || ch.BillingDetails == nil || ch.BillingDetails.Email != "ada@example.com" {
				t.Errorf("charge = %+v", ch)
			}
			if got := h.Event.Data.PreviousAttributes; len(got) != len(st.previous) || got["amount_refunded"] != st.previous["amount_refunded"] || got["refunded"] != st.previous["refunded"] {
				t.Errorf("previous_attributes = %v, want %v", got, st.previous)
			}

			// The API shows the same charge.
			got, err := f.sc.Charges.Get(chargeID, nil)
			if err != nil || got.AmountRefunded != st.refunded || got.PaymentIntent.ID != pi || got.Refunded != ch.Refunded {
				t.Errorf("retrieve charge = %+v, %v", got, err)
			}
		})
	}

	// Every delivery names the session; an event can be resent.
	hooks := f.ofType(t, "charge.refunded")
	for _, d := range f.fake.Deliveries() {
		if d.Type == "charge.refunded" && (d.SessionID != cs.ID || d.Status != http.StatusOK || d.Attempt != 1) {
			t.Errorf("delivery = %+v", d)
		}
	}
	resp, body := f.do(t, http.MethodPost, "/_events/"+hooks[0].Event.ID+"/deliver", "", "")
	var d fakestripe.Delivery
	if err := json.Unmarshal([]byte(body), &d); err != nil || resp.StatusCode != http.StatusOK || d.Attempt != 2 || d.Type != "charge.refunded" {
		t.Errorf("resend: status %d, delivery %+v, err %v", resp.StatusCode, d, err)
	}
	if n := f.countEvents(t, "charge.refunded"); n != 3 {
		t.Errorf("%d charge.refunded events stored, want 3", n)
	}

	_, err := f.sc.Charges.Get("ch_unknown", nil)
	stripeError(t, err, http.StatusNotFound, stripe.ErrorCodeResourceMissing)
}

func TestRefundIdempotencyKeys(t *testing.T) {
	f := newFixture(t, fakestripe.Options{})
	pi := f.paidIntent(t, oracle.TierStrategy, url.Values{}) // 2500 cents
	const key = "refund-order-1"
	refund := func(amount int64) (*stripe.Refund, error) {
		p := &stripe.RefundParams{PaymentIntent: stripe.String(pi), Amount: stripe.Int64(amount)}
		p.SetIdempotencyKey(key)
		return f.sc.Refunds.New(p)
	}

	first, err := refund(1000)
	if err != nil {
		t.Fatalf("refund: %v", err)
	}
	again, err := refund(1000)
	if err != nil {
		t.Fatalf("repeated refund: %v", err)
	}
	if again.ID != first.ID || string(again.LastResponse.RawJSON) != string(first.LastResponse.RawJSON) {
		t.Errorf("same key: refund %s, want %s with the same body", again.ID, first.ID)
	}
	h := again.LastResponse.Header
	if h.Get("Idempotent-Replayed") != "true" || h.Get("Original-Request") != first.LastResponse.RequestID || h.Get("Request-Id") == first.LastResponse.RequestID {
		t.Errorf("replay headers %v, want Idempotent-Replayed and Original-Request %s", h, first.LastResponse.RequestID)
	}
	if first.LastResponse.Header.Get("Idempotent-Replayed") != "" || first.LastResponse.Header.Get("Original-Request") != first.LastResponse.RequestID {
		t.Errorf("first call headers %v", first.LastResponse.Header)
	}
	if n := len(f.ofType(t, "charge.refunded")); n != 1 {
		t.Errorf("%d charge.refunded webhooks for one idempotent refund, want 1", n)
	}
	if n := f.countEvents(t, "charge.refunded"); n != 1 {
		t.Errorf("%d charge.refunded events stored, want 1", n)
	}

	// The same key with other parameters is refused, and makes nothing.
	_, err = refund(999)
	se, ok := err.(*stripe.Error)
	want := "Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than '" + key + "' if you meant to execute a different request."
	if !ok || se.HTTPStatusCode != http.StatusBadRequest || se.Type != stripe.ErrorTypeIdempotency || se.Msg != want {
		t.Fatalf("key reused with another amount: err = %v, want a 400 idempotency_error %q", err, want)
	}
	if n := len(f.hooks.hooks()); n != 2 {
		t.Errorf("%d webhooks after a refused reuse, want the payment's and the refund's", n)
	}
	// Only one refund was made: 1500 of 2500 remains.
	rest, err := f.sc.Refunds.New(&stripe.RefundParams{PaymentIntent: stripe.String(pi)})
	if err != nil || rest.Amount != 1500 {
		t.Errorf("refund of the rest = %+v, %v; want 1500", rest, err)
	}
}

// TestRefundRefusalsAndKeys: a refusal found while refunding is kept for
// the key, as Stripe keeps it; a refusal of the parameters is not, so the
// key can be used again.
func TestRefundRefusalsAndKeys(t *testing.T) {
	f := newFixture(t, fakestripe.Options{})
	pi := f.paidIntent(t, oracle.TierFull, url.Values{}) // 500 cents
	steps := []struct {
		name     string
		key      string
		form     url.Values
		status   int
		code     string
		replayed bool
	}{
		{"over-refund", "k-over", url.Values{"payment_intent": {pi}, "amount": {"501"}}, http.StatusBadRequest, "charge_already_refunded", false},
		{"over-refund again is the kept answer", "k-over", url.Values{"payment_intent": {pi}, "amount": {"501"}}, http.StatusBadRequest, "charge_already_refunded", true},
		{"its key with other parameters", "k-over", url.Values{"payment_intent": {pi}, "amount": {"100"}}, http.StatusBadRequest, "", false},
		{"a bad reason", "k-reason", url.Values{"payment_intent": {pi}, "reason": {"because"}}, http.StatusBadRequest, "", false},
		{"a bad reason again is refused afresh", "k-reason", url.Values{"payment_intent": {pi}, "reason": {"because"}}, http.StatusBadRequest, "", false},
		{"its key with good parameters refunds", "k-reason", url.Values{"payment_intent": {pi}, "amount": {"100"}}, http.StatusOK, "", false},
		{"an unknown intent", "k-unknown", url.Values{"payment_intent": {"pi_unknown"}}, http.StatusNotFound, "resource_missing", false},
		{"an unknown intent again is the kept answer", "k-unknown", url.Values{"payment_intent": {"pi_unknown"}}, http.StatusNotFound, "resource_missing", true},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			resp, body := f.refundRaw(t, testKey, st.key, st.form)
			var e struct {
				Error struct{ Type, Code string } `json:"error"`
			}
			_ = json.Unmarshal([]byte(body), &e)
			if resp.StatusCode != st.status || e.Error.Code != st.code || (resp.Header.Get("Idempotent-Replayed") == "true") != st.replayed {
				t.Errorf("status %d code %q replayed %q, want %d %q %v: %s", resp.StatusCode, e.Error.Code, resp.Header.Get("Idempotent-Replayed"), st.status, st.code, st.replayed, body)
			}
			if st.name == "its key with other parameters" && e.Error.Type != "idempotency_error" {
				t.Errorf("type %q, want idempotency_error", e.Error.Type)
			}
		})
	}
	if n := len(f.ofType(t, "charge.refunded")); n != 1 {
		t.Errorf("%d charge.refunded webhooks, want 1 for the one refund made", n)
	}
}

// TestDashboardRefund: a refund made without the service, as the Dashboard
// makes it (its own key, no Idempotency-Key, by charge or payment intent),
// still sends charge.refunded.
func TestDashboardRefund(t *testing.T) {
	f := newFixture(t, fakestripe.Options{})
	pi := f.paidIntent(t, oracle.TierStrategy, url.Values{})
	const dashboard = "sk_test_dashboard_session"

	resp, body := f.refundRaw(t, dashboard, "", url.Values{"payment_intent": {pi}, "amount": {"700"}})
	var re stripe.Refund
	if err := json.Unmarshal([]byte(body), &re); err != nil || resp.StatusCode != http.StatusOK || re.Charge == nil {
		t.Fatalf("refund by payment intent: status %d, err %v: %s", resp.StatusCode, err, body)
	}
	resp2, body := f.refundRaw(t, dashboard, "", url.Values{"charge": {re.Charge.ID}, "reason": {"requested_by_customer"}})
	var rest stripe.Refund
	if err := json.Unmarshal([]byte(body), &rest); err != nil || resp2.StatusCode != http.StatusOK || rest.Amount != 1800 || rest.PaymentIntent.ID != pi {
		t.Fatalf("refund of the rest by charge: status %d, err %v: %s", resp2.StatusCode, err, body)
	}

	hooks := f.ofType(t, "charge.refunded")
	if len(hooks) != 2 {
		t.Fatalf("%d charge.refunded webhooks, want 2", len(hooks))
	}
	for i, want := range []struct {
		requestID string
		refunded  int64
	}{{resp.Header.Get("Request-Id"), 700}, {resp2.Header.Get("Request-Id"), 2500}} {
		h := hooks[i]
		f.checkEvent(t, h)
		if h.Event.Request.ID != want.requestID || !strings.HasPrefix(want.requestID, "req_") || h.Event.Request.IdempotencyKey != "" {
			t.Errorf("refund %d: event request %+v, want id %q and no idempotency key", i, h.Event.Request, want.requestID)
		}
		if ch := decode[stripe.Charge](t, h); ch.ID != re.Charge.ID || ch.PaymentIntent.ID != pi || ch.AmountRefunded != want.refunded {
			t.Errorf("refund %d: charge = %+v", i, ch)
		}
	}
	// Stripe writes the key's absence as null.
	if raw := rawEvent(t, f, hooks[0].Event.ID); !strings.Contains(raw, `"request":{"id":"`+hooks[0].Event.Request.ID+`","idempotency_key":null}`) {
		t.Errorf("event request: want the request id and idempotency_key null: %s", raw)
	}

	tests := []struct {
		name   string
		form   url.Values
		status int
		code   string
		param  string
	}{
		{"unknown charge", url.Values{"charge": {"ch_unknown"}}, http.StatusNotFound, "resource_missing", "charge"},
		{"charge of another intent", url.Values{"charge": {re.Charge.ID}, "payment_intent": {"pi_other"}}, http.StatusBadRequest, "", "payment_intent"},
		{"already refunded", url.Values{"charge": {re.Charge.ID}}, http.StatusBadRequest, "charge_already_refunded", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := f.refundRaw(t, dashboard, "", tt.form)
			var e struct {
				Error struct{ Type, Code, Param string } `json:"error"`
			}
			if err := json.Unmarshal([]byte(body), &e); err != nil || resp.StatusCode != tt.status || e.Error.Type != "invalid_request_error" || e.Error.Code != tt.code || e.Error.Param != tt.param {
				t.Errorf("status %d error %+v, want %d code %q param %q: %s", resp.StatusCode, e.Error, tt.status, tt.code, tt.param, body)
			}
		})
	}
}

// rawEvent is the stored JSON of event id.
func rawEvent(t *testing.T, f *fixture, id string) string {
	t.Helper()
	_, body := f.do(t, http.MethodGet, "/_events", "", "")
	var raws []json.RawMessage
	if err := json.Unmarshal([]byte(body), &raws); err != nil {
		t.Fatalf("GET /_events: %v", err)
	}
	for _, raw := range raws {
		if strings.Contains(string(raw), `"id":"`+id+`"`) {
			return string(raw)
		}
	}
	t.Fatalf("event %s not stored", id)
	return ""
}

// TestRefundEventsIgnoreControl: the Control shapes checkout payments only;
// a refund's event is sent once and correctly signed, and the Control
// stays pending for the next payment.
func TestRefundEventsIgnoreControl(t *testing.T) {
	f := newFixture(t, fakestripe.Options{})
	pi := f.paidIntent(t, oracle.TierQuick, url.Values{})
	f.setControl(t, fakestripe.Control{Duplicate: 3, BadSignature: true})
	if _, err := f.sc.Refunds.New(&stripe.RefundParams{PaymentIntent: stripe.String(pi)}); err != nil {
		t.Fatalf("refund: %v", err)
	}
	if n := len(f.ofType(t, "charge.refunded")); n != 1 {
		t.Errorf("%d charge.refunded webhooks, want 1 correctly signed", n)
	}
	cs := f.createSession(t, oracle.TierQuick)
	f.pay(t, cs.ID, url.Values{"email": {"ada@example.com"}})
	bad := 0
	for _, h := range f.hooks.hooks() {
		if h.Err != nil {
			bad++
		}
	}
	if bad != 3 {
		t.Errorf("%d badly signed webhooks for the next payment, want its 3 duplicates", bad)
	}
}

func TestDisputesAndEarlyFraudWarnings(t *testing.T) {
	type check func(t *testing.T, f *fixture, h hook, pi, charge string)
	dispute := func(amount int64, reason stripe.DisputeReason) check {
		return func(t *testing.T, f *fixture, h hook, pi, charge string) {
			dp := decode[stripe.Dispute](t, h)
			if !strings.HasPrefix(dp.ID, "dp_") || dp.Object != "dispute" || dp.Amount != amount || dp.Currency != oracle.Currency ||
				dp.Charge == nil || dp.Charge.ID != charge || dp.PaymentIntent == nil || dp.PaymentIntent.ID != pi ||
				dp.Reason != reason || dp.Status != stripe.DisputeStatusNeedsResponse || dp.Livemode || dp.Created != f.now.Unix() ||
				dp.EvidenceDetails == nil || dp.EvidenceDetails.DueBy != f.now.Add(7*24*time.Hour).Unix() || dp.EvidenceDetails.HasEvidence ||
				dp.IsChargeRefundable || dp.Metadata == nil || dp.Evidence == nil || dp.BalanceTransactions == nil {
				t.Errorf("dispute = %+v", dp)
			}
			if h.Event.Request.ID != "" || h.Event.Request.IdempotencyKey != "" {
				t.Errorf("event request = %+v, want none: the bank started it", h.Event.Request)
			}
		}
	}
	warning := func(fraud stripe.RadarEarlyFraudWarningFraudType) check {
		return func(t *testing.T, f *fixture, h hook, pi, charge string) {
			w := decode[stripe.RadarEarlyFraudWarning](t, h)
			if !strings.HasPrefix(w.ID, "issfr_") || w.Object != "radar.early_fraud_warning" || !w.Actionable ||
				w.Charge == nil || w.Charge.ID != charge || w.PaymentIntent == nil || w.PaymentIntent.ID != pi ||
				w.FraudType != fraud || w.Livemode || w.Created != f.now.Unix() {
				t.Errorf("early fraud warning = %+v", w)
			}
		}
	}
	tests := []struct {
		name  string
		path  string
		body  func(pi string) string
		typ   string
		check check
	}{
		{"dispute, form, defaults", "/_disputes", func(pi string) string { return "payment_intent=" + pi }, "charge.dispute.created", dispute(2500, stripe.DisputeReasonFraudulent)},
		{"dispute, form, reason and amount", "/_disputes", func(pi string) string { return "payment_intent=" + pi + "&reason=product_not_received&amount=1200" }, "charge.dispute.created", dispute(1200, stripe.DisputeReasonProductNotReceived)},
		{"dispute, JSON", "/_disputes", func(pi string) string { return `{"payment_intent":"` + pi + `","reason":"duplicate","amount":2500}` }, "charge.dispute.created", dispute(2500, stripe.DisputeReasonDuplicate)},
		{"early fraud warning, form, default", "/_early_fraud_warnings", func(pi string) string { return "payment_intent=" + pi }, "radar.early_fraud_warning.created", warning(stripe.RadarEarlyFraudWarningFraudTypeMadeWithStolenCard)},
		{"early fraud warning, JSON", "/_early_fraud_warnings", func(pi string) string { return `{"payment_intent":"` + pi + `","fraud_type":"card_never_received"}` }, "radar.early_fraud_warning.created", warning(stripe.RadarEarlyFraudWarningFraudTypeCardNeverReceived)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, fakestripe.Options{})
			cs := f.createSession(t, oracle.TierStrategy)
			f.pay(t, cs.ID, url.Values{"email": {"ada@example.com"}})
			paid, _ := f.fake.Session(cs.ID)
			pi := paid.PaymentIntent.ID

			// curl -d sends a form content type whatever the body.
			resp, body := f.do(t, http.MethodPost, tt.path, "application/x-www-form-urlencoded", tt.body(pi))
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("POST %s: status %d: %s", tt.path, resp.StatusCode, body)
			}
			var obj struct {
				ID     string `json:"id"`
				Charge string `json:"charge"`
			}
			if err := json.Unmarshal([]byte(body), &obj); err != nil {
				t.Fatalf("decode answer: %v: %s", err, body)
			}
			// The charge is the payment's.
			ch, err := f.sc.Charges.Get(obj.Charge, nil)
			if err != nil || ch.PaymentIntent.ID != pi {
				t.Fatalf("the object's charge %s: %+v, %v", obj.Charge, ch, err)
			}

			hooks := f.ofType(t, tt.typ)
			if len(hooks) != 1 || len(f.hooks.hooks()) != 2 {
				t.Fatalf("%d %s webhooks and %d in all, want 1 besides the payment's", len(hooks), tt.typ, len(f.hooks.hooks()))
			}
			h := hooks[0]
			f.checkEvent(t, h)
			tt.check(t, f, h, pi, obj.Charge)
			if !sameJSON(h.Event.Data.Raw, []byte(body)) {
				t.Errorf("the answer and the event's object differ:\n%s\n%s", body, h.Event.Data.Raw)
			}
			if n := f.countEvents(t, tt.typ); n != 1 {
				t.Errorf("%d %s events stored, want 1", n, tt.typ)
			}
			ds := f.fake.Deliveries()
			if last := ds[len(ds)-1]; last.Type != tt.typ || last.SessionID != cs.ID || last.Status != http.StatusOK {
				t.Errorf("delivery = %+v", last)
			}
		})
	}
}

// sameJSON reports whether a and b are the same JSON value.
func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xs, _ := json.Marshal(x)
	ys, _ := json.Marshal(y)
	return string(xs) == string(ys)
}

func TestDisputedCharge(t *testing.T) {
	f := newFixture(t, fakestripe.Options{})
	pi := f.paidIntent(t, oracle.TierFull, url.Values{})
	if resp, body := f.do(t, http.MethodPost, "/_disputes", "", "payment_intent="+pi); resp.StatusCode != http.StatusOK {
		t.Fatalf("dispute: status %d: %s", resp.StatusCode, body)
	}
	_, err := f.sc.Refunds.New(&stripe.RefundParams{PaymentIntent: stripe.String(pi)})
	se := stripeError(t, err, http.StatusBadRequest, stripe.ErrorCodeChargeDisputed)
	if !strings.HasSuffix(se.Msg, " has been charged back; cannot issue a refund.") {
		t.Errorf("message = %q", se.Msg)
	}
	// A warning after the dispute is no longer actionable.
	resp, body := f.do(t, http.MethodPost, "/_early_fraud_warnings", "", "payment_intent="+pi)
	var w stripe.RadarEarlyFraudWarning
	if err := json.Unmarshal([]byte(body), &w); err != nil || resp.StatusCode != http.StatusOK || w.Actionable {
		t.Errorf("warning after a dispute: status %d actionable %v: %s", resp.StatusCode, w.Actionable, body)
	}
	ch, err := f.sc.Charges.Get(w.Charge.ID, nil)
	if err != nil || !ch.Disputed || ch.AmountRefunded != 0 {
		t.Errorf("disputed charge = %+v, %v", ch, err)
	}
	if n := len(f.ofType(t, "charge.refunded")); n != 0 {
		t.Errorf("%d charge.refunded webhooks after a refused refund", n)
	}
}

func TestLocalRoutesRefuse(t *testing.T) {
	f := newFixture(t, fakestripe.Options{})
	pi := f.paidIntent(t, oracle.TierFull, url.Values{}) // 500 cents
	f.setControl(t, fakestripe.Control{FailAsync: true})
	failed := f.paidIntent(t, oracle.TierQuick, url.Values{})
	refunded := f.paidIntent(t, oracle.TierQuick, url.Values{})
	if _, err := f.sc.Refunds.New(&stripe.RefundParams{PaymentIntent: stripe.String(refunded)}); err != nil {
		t.Fatalf("refund: %v", err)
	}
	for _, path := range []string{"/_disputes", "/_early_fraud_warnings"} {
		if resp, body := f.do(t, http.MethodPost, path, "", "payment_intent="+refunded); resp.StatusCode != http.StatusOK {
			t.Fatalf("POST %s: status %d: %s", path, resp.StatusCode, body)
		}
	}
	before := len(f.events(t))

	tests := []struct {
		name   string
		path   string
		body   string
		status int
		code   string
		param  string
	}{
		{"dispute of an unknown intent", "/_disputes", "payment_intent=pi_unknown", http.StatusNotFound, "resource_missing", "payment_intent"},
		{"warning of an unknown intent", "/_early_fraud_warnings", `{"payment_intent":"pi_unknown"}`, http.StatusNotFound, "resource_missing", "payment_intent"},
		{"dispute naming no intent", "/_disputes", "reason=fraudulent", http.StatusBadRequest, "parameter_missing", "payment_intent"},
		{"warning naming no intent", "/_early_fraud_warnings", "", http.StatusBadRequest, "parameter_missing", "payment_intent"},
		{"dispute of a failed payment", "/_disputes", "payment_intent=" + failed, http.StatusBadRequest, "", "payment_intent"},
		{"warning of a failed payment", "/_early_fraud_warnings", "payment_intent=" + failed, http.StatusBadRequest, "", "payment_intent"},
		{"a second dispute", "/_disputes", "payment_intent=" + refunded, http.StatusBadRequest, "", "payment_intent"},
		{"a second warning", "/_early_fraud_warnings", "payment_intent=" + refunded, http.StatusBadRequest, "", "payment_intent"},
		{"unknown reason", "/_disputes", "payment_intent=" + pi + "&reason=bored", http.StatusBadRequest, "", "reason"},
		{"amount above the charge", "/_disputes", "payment_intent=" + pi + "&amount=501", http.StatusBadRequest, "parameter_invalid_integer", "amount"},
		{"amount not an integer", "/_disputes", `{"payment_intent":"` + pi + `","amount":1.5}`, http.StatusBadRequest, "parameter_invalid_integer", "amount"},
		{"unknown fraud type", "/_early_fraud_warnings", "payment_intent=" + pi + "&fraud_type=bad_vibes", http.StatusBadRequest, "", "fraud_type"},
		{"unknown parameter", "/_disputes", "payment_intent=" + pi + "&charge=ch_x", http.StatusBadRequest, "parameter_unknown", "charge"},
		{"unknown JSON field", "/_early_fraud_warnings", `{"payment_intent":"` + pi + `","actionable":false}`, http.StatusBadRequest, "parameter_unknown", "actionable"},
		{"JSON that is not strings or integers", "/_disputes", `{"payment_intent":["` + pi + `"]}`, http.StatusBadRequest, "", "payment_intent"},
		{"broken JSON", "/_disputes", `{"payment_intent":`, http.StatusBadRequest, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := f.do(t, http.MethodPost, tt.path, "", tt.body)
			var e struct {
				Error struct{ Type, Code, Param, Message string } `json:"error"`
			}
			if err := json.Unmarshal([]byte(body), &e); err != nil || resp.StatusCode != tt.status || e.Error.Type != "invalid_request_error" ||
				e.Error.Code != tt.code || e.Error.Param != tt.param || e.Error.Message == "" {
				t.Errorf("status %d error %+v, want %d code %q param %q: %s", resp.StatusCode, e.Error, tt.status, tt.code, tt.param, body)
			}
		})
	}
	if after := len(f.events(t)); after != before {
		t.Errorf("%d events after refused requests, want %d", after, before)
	}
}
