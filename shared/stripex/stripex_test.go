package stripex

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stripe/stripe-go/v76"

	"42sisters.ai/oracle/shared/config"
	"42sisters.ai/oracle/shared/oracle"
)

func TestParamsTakePricesOnlyFromTheTierTable(t *testing.T) {
	for _, tier := range oracle.Tiers() {
		q := strings.Repeat("é", 700) + "🚀"
		p, err := Params(CheckoutRequest{Tier: tier, Query: q, SuccessURL: "https://x/oracle/result?session_id={CHECKOUT_SESSION_ID}", CancelURL: "https://x/"})
		if err != nil {
			t.Fatal(err)
		}
		li := p.LineItems[0]
		if *li.PriceData.UnitAmount != tier.PriceCents() || *li.PriceData.Currency != "cad" || *li.Quantity != 1 {
			t.Errorf("%s: amount %d %s x%d", tier, *li.PriceData.UnitAmount, *li.PriceData.Currency, *li.Quantity)
		}
		if p.Metadata["tier"] != string(tier) {
			t.Errorf("%s: metadata tier %q", tier, p.Metadata["tier"])
		}
		got, reason := ReassembleQuery(p.Metadata)
		if reason != oracle.DropNone || got != q {
			t.Errorf("%s: metadata does not carry the query", tier)
		}
		if len(p.Metadata) > MaxMetadataKeys {
			t.Errorf("%s: %d metadata keys", tier, len(p.Metadata))
		}
		for k, v := range p.Metadata {
			if oracle.QueryUnits(v) > MaxMetadataValue || len(k) > 40 {
				t.Errorf("%s: metadata %s exceeds Stripe's limits", tier, k)
			}
		}
	}
}

func TestSessionConversion(t *testing.T) {
	raw := `{"id":"cs_test_conv","object":"checkout.session","payment_status":"paid","amount_total":500,"currency":"cad",
	"livemode":false,"created":1763700000,"metadata":{"tier":"full","referral_code":"FRIEND","smoke":"1"},"customer_email":"fallback@example.com",
	"customer_details":{"email":"details@example.com"},
	"custom_fields":[{"key":"other","type":"text","text":{"value":"no"}},{"key":"idea","type":"text","text":{"value":"my idea"}}]}`
	s, err := SessionFromJSON(json.RawMessage(raw))
	if err != nil {
		t.Fatal(err)
	}
	// The rest of the service gets a tier and a query, never Stripe's metadata.
	if s.Email != "details@example.com" || s.Query != "my idea" || s.Tier != oracle.TierFull || s.Drop != oracle.DropNone ||
		s.TierRaw != "full" || s.Referral != "FRIEND" || !s.Smoke || !s.Paid() || s.AmountTotal != 500 || s.Currency != "cad" {
		t.Fatalf("%+v", s)
	}
	s, _ = SessionFromJSON(json.RawMessage(`{"id":"cs_test_conv2","customer_email":"fallback@example.com","customer_details":null}`))
	if s.Email != "fallback@example.com" || s.Drop != oracle.DropTierMissing {
		t.Fatalf("fallback email, no metadata: %+v", s)
	}
	for _, bad := range []string{`{"id":"pi_123"}`, `[]`, `{"id":`} {
		if _, err := SessionFromJSON(json.RawMessage(bad)); err == nil {
			t.Errorf("%s was accepted", bad)
		}
	}
}

func TestClassifyKeepsStripeMessagesOut(t *testing.T) {
	msg := "Invalid value: Should I quit my job to start this business?"
	cases := []struct {
		err  *stripe.Error
		code oracle.Code
		auth bool
	}{
		{&stripe.Error{HTTPStatusCode: 401, Msg: msg}, oracle.CodeUnavailable, true},
		{&stripe.Error{HTTPStatusCode: 404, Code: stripe.ErrorCodeResourceMissing, Msg: msg}, oracle.CodeNotFound, false},
		{&stripe.Error{HTTPStatusCode: 503, Msg: msg}, oracle.CodeUnavailable, false},
		{&stripe.Error{HTTPStatusCode: 429, Msg: msg}, oracle.CodeUnavailable, false},
		{&stripe.Error{HTTPStatusCode: 400, Type: stripe.ErrorTypeInvalidRequest, Msg: msg}, oracle.CodeInternal, false},
	}
	for _, c := range cases {
		err := classify(c.err, "create checkout session")
		if oracle.ErrorCode(err) != c.code || errors.Is(err, ErrAuth) != c.auth {
			t.Errorf("%d: got %v", c.err.HTTPStatusCode, err)
		}
		if strings.Contains(err.Error(), "quit my job") {
			t.Errorf("%d: Stripe's message leaked into the error: %v", c.err.HTTPStatusCode, err)
		}
	}
}

func TestClassifyKeepsTheSessionIDOutOfNetworkErrors(t *testing.T) {
	id := "cs_live_a1b2c3d4e5f6g7h8i9j0"
	err := classify(&url.Error{Op: "Get", URL: "https://api.stripe.com/v1/checkout/sessions/" + id, Err: errors.New("i/o timeout")}, "retrieve checkout session")
	if oracle.ErrorCode(err) != oracle.CodeUnavailable || !strings.Contains(err.Error(), "i/o timeout") {
		t.Fatalf("got %v", err)
	}
	if strings.Contains(err.Error(), id) {
		t.Fatalf("the full session id is in the error: %v", err)
	}
}

func TestModeKeys(t *testing.T) {
	cases := []struct{ main, test, live, forTest string }{
		{"sk_live_a", "", "sk_live_a", ""},
		{"sk_live_a", "sk_test_b", "sk_live_a", "sk_test_b"},
		{"sk_test_a", "sk_test_b", "", "sk_test_a"},
		{"rk_live_a", "", "rk_live_a", ""},
	}
	for _, c := range cases {
		live, test, err := ModeKeys(c.main, c.test)
		if err != nil || live != c.live || test != c.forTest {
			t.Errorf("ModeKeys(%q, %q) = %q, %q, %v", c.main, c.test, live, test, err)
		}
	}
	if _, _, err := ModeKeys("pk_live_publishable", ""); err == nil {
		t.Error("a publishable key was accepted")
	}
}

func TestKeysFrom(t *testing.T) {
	cases := []struct {
		key, test, live, forTest, problem string
	}{
		{"sk_live_a", "sk_test_b", "sk_live_a", "sk_test_b", ""},
		{"sk_test_a", "", "", "sk_test_a", ""},
		{"", "", "", "", "STRIPE_SECRET_KEY_ARN (or STRIPE_SECRET_KEY for local runs) is required"},
		{"pk_live_publishable", "", "", "", "STRIPE_SECRET_KEY: not a Stripe secret key"},
	}
	for _, c := range cases {
		vars := map[string]string{"STRIPE_SECRET_KEY": c.key, "STRIPE_TEST_SECRET_KEY": c.test}
		env := config.New(func(k string) (string, bool) { v, ok := vars[k]; return v, ok }, nil)
		liveKey, testKey := KeysFrom(context.Background(), env)
		live, test := liveKey.Get(), testKey.Get()
		err := env.Err()
		if live != c.live || test != c.forTest || (err == nil) != (c.problem == "") || (err != nil && !strings.Contains(err.Error(), c.problem)) {
			t.Errorf("key %q, test key %q: %q, %q, %v", c.key, c.test, live, test, err)
		}
	}
}

// SessionModeFromJSON reads a session as Session reads stripe-go's own
// decoding of it, field for field: every shape the webhook meets (paid,
// unpaid, chunked metadata, the idea field, an expanded payment intent,
// a subscription, nulls), and refuses what stripe-go refuses to decode.
func TestSessionModeFromJSONAsStripeGo(t *testing.T) {
	for _, raw := range sessionShapes {
		var s stripe.CheckoutSession
		if err := json.Unmarshal([]byte(raw), &s); err != nil {
			t.Fatalf("stripe-go refused %s: %v", raw, err)
		}
		want, wantMode := Session(&s), string(s.Mode)
		got, mode, err := SessionModeFromJSON(json.RawMessage(raw))
		if err != nil {
			t.Errorf("%s: %v", raw, err)
			continue
		}
		if !reflect.DeepEqual(got, want) || mode != wantMode {
			t.Errorf("%s:\n got %+v %q\nwant %+v %q", raw, got, mode, want, wantMode)
		}
	}
	for _, bad := range badSessions {
		var s stripe.CheckoutSession
		if json.Unmarshal([]byte(bad), &s) == nil {
			t.Fatalf("stripe-go decodes %s: not a refusal to compare", bad)
		}
		if _, _, err := SessionModeFromJSON(json.RawMessage(bad)); err == nil {
			t.Errorf("%s was accepted", bad)
		}
	}
}

// FuzzSessionModeFromJSON holds the scanner's reading of a session object
// to encoding/json's: whatever the input, what the scanner reads (it may
// give up) is what encoding/json decodes, it reads nothing encoding/json
// refuses, and SessionModeFromJSON answers as encoding/json's decoding.
func FuzzSessionModeFromJSON(f *testing.F) {
	for _, raw := range append(append([]string{}, sessionShapes...), badSessions...) {
		f.Add([]byte(raw))
	}
	for _, raw := range []string{
		// What encoding/json accepts and the scanner leaves to it: names
		// in another case, a name twice, invalid UTF-8, surrogates, a
		// null in the metadata; and what it reads: escapes, nulls over
		// fields, unknown members of any shape.
		`{"ID":"cs_test_c1","Metadata":{"tier":"quick"},"PAYMENT_INTENT":{"ID":"pi_1"}}`,
		`{"id":"cs_test_c2","id":"cs_test_c3","metadata":{"q0":"a"},"metadata":{"qn":"1"},"customer_details":{"email":"a@x"},"customer_details":{}}`,
		"{\"id\":\"cs_test_c4\",\"metadata\":{\"q0\":\"\xff\xfe\"},\"customer_email\":\"\xc3\"}",
		`{"id":"cs_test_c5","metadata":{"q0":"\ud83d\ude80 \u00e9\n\"\\\/","q1":null},"custom_fields":[null,{"key":"idea","text":{"value":"x\u0000"}}]}`,
		`{"id":"cs_test_c6","created":1e3,"amount_total":-0,"livemode":null,"unknown":[1,{"a":null},-1.5e-3,true,false,"\u20ac"]}`,
		`{"id":"cs_test_c7","customer_email":null,"payment_intent":null,"customer_details":null,"custom_fields":null,"metadata":{}}`,
		`{"id":"cs_test_c8","payment_intent":{"id":"pi_1","object":"payment_intent"},"custom_fields":[],"amount_total":9223372036854775808}`,
		"{\"\u212Aey\":1,\"ſtatus\":2,\"id\":\"cs_test_c9\"}",
		`null`, `[]`, `{"id":"cs_test_c7"} x`, ` {"id":"cs_test_c8"} `, `{"id":"cs_test_ca",}`, `{"id" "x"}`,
	} {
		f.Add([]byte(raw))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var got, want sessionObject
		sc := scanner{b: raw}
		read := sc.session(&got) && sc.end()
		wantErr := json.Unmarshal(raw, &want)
		if read && wantErr != nil {
			t.Fatalf("%q: the scanner read what encoding/json refuses (%v)", raw, wantErr)
		}
		if read && !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\n scanner      %+v\nencoding/json %+v", raw, got, want)
		}
		s, err := decodeSession(raw)
		if (err == nil) != (wantErr == nil) || err == nil && !reflect.DeepEqual(s, want) {
			t.Fatalf("%q: decodeSession %+v %v, encoding/json %+v %v", raw, s, err, want, wantErr)
		}
		_, _, _ = SessionModeFromJSON(raw)
	})
}

// FuzzDecodeEnvelope holds the scanner's reading of an event's envelope
// to encoding/json's, as FuzzSessionModeFromJSON the session's.
func FuzzDecodeEnvelope(f *testing.F) {
	for _, body := range sampleEvents(f) {
		f.Add(body)
	}
	for _, body := range []string{
		`{"ID":"evt_1","Type":"checkout.session.completed","DATA":{"Object":{"id":"cs_test_1"}},"Request":{"ID":"req_1"}}`,
		`{"id":"evt_1","id":"evt_2","data":{"object":{"a":1}},"data":{"object":[1, 2 ]},"request":{"id":"req_1"},"request":{"idempotency_key":"k"}}`,
		"{\"id\":\"evt_\xff\",\"api_version\":\"\xc3\",\"data\":{\"object\":\"\xfe\"}}",
		`{"id":"evt_1","livemode":true,"created":1,"request":null,"data":{"object":null}}`,
		`{"id":"evt_1","data":null}`, `{"id":"evt_1","data":{}}`, `{"id":"evt_1","created":1e3,"data":{"object":{}}}`,
		`null`, `[]`, `{"id":"evt_1","data":{"object":{}}} x`, " \t{\"data\":{\"object\": {\"a\" : [ ] } }}\n",
	} {
		f.Add([]byte(body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var got, want Envelope
		sc := scanner{b: body}
		read := sc.envelope(&got) && sc.end()
		wantErr := json.Unmarshal(body, &want)
		if read && wantErr != nil {
			t.Fatalf("%q: the scanner read what encoding/json refuses (%v)", body, wantErr)
		}
		if read && !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\n scanner      %+v %+v\nencoding/json %+v %+v", body, got, got.Data, want, want.Data)
		}
		e, err := DecodeEnvelope(body)
		if (err == nil) != (wantErr == nil) || err == nil && !reflect.DeepEqual(e, want) {
			t.Fatalf("%q: DecodeEnvelope %+v %v, encoding/json %+v %v", body, e, err, want, wantErr)
		}
	})
}

// The scanner reads every sample event and its session, in the shape
// Stripe writes them, without giving up: encoding/json is its fallback,
// not its path.
func TestScannerReadsStripesEvents(t *testing.T) {
	for _, body := range sampleEvents(t) {
		var e Envelope
		if sc := (scanner{b: body}); !sc.envelope(&e) || !sc.end() || e.Data == nil {
			t.Fatalf("the scanner gave up on %s", body)
		}
		if !strings.HasPrefix(string(e.Type), "checkout.session.") {
			continue
		}
		var s sessionObject
		if sc := (scanner{b: e.Data.Object}); !sc.session(&s) || !sc.end() || s.ID == "" {
			t.Errorf("the scanner gave up on the session of %s", body)
		}
	}
	for _, raw := range sessionShapes {
		var s sessionObject
		if sc := (scanner{b: []byte(raw)}); !sc.session(&s) || !sc.end() {
			t.Errorf("the scanner gave up on %s", raw)
		}
	}
}

// sampleEvents are the bodies of the sample events in events/webhook.
func sampleEvents(tb testing.TB) [][]byte {
	files, err := filepath.Glob("../../events/webhook/*.json")
	if err != nil || len(files) == 0 {
		tb.Fatalf("samples %v %v", files, err)
	}
	var out [][]byte
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			tb.Fatal(err)
		}
		var r struct{ Body string }
		if err := json.Unmarshal(b, &r); err != nil {
			tb.Fatalf("%s: %v", file, err)
		}
		out = append(out, []byte(r.Body))
	}
	return out
}

// sessionShapes are the session objects the webhook meets: paid, unpaid,
// chunked metadata, the idea field, an expanded payment intent, a
// subscription, nulls.
var sessionShapes = []string{
	`{"id":"cs_test_a1","object":"checkout.session","mode":"payment","payment_status":"paid","amount_total":2500,"amount_subtotal":2500,"currency":"cad",
	"livemode":true,"created":1763700000,"metadata":{"tier":"strategy","referral_code":"FRIEND","q0":"Should I ","q1":"open a bakery?","qn":"2"},
	"customer_email":null,"customer_details":{"email":"a@example.com","name":"A"},"payment_intent":"pi_123",
	"client_reference_id":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}`,
	`{"id":"cs_test_a2","mode":"payment","payment_status":"unpaid","amount_total":100,"currency":"cad","created":1,
	"metadata":{"tier":"quick"},"custom_fields":[{"key":"idea","type":"text","text":{"value":"an idea from a Payment Link"}}],
	"payment_intent":{"id":"pi_expanded","object":"payment_intent","amount":100}}`,
	`{"id":"cs_test_a3","mode":"subscription","payment_status":"paid","amount_total":500,"currency":"cad","subscription":"sub_1",
	"customer":"cus_1","client_reference_id":"acct-of-the-chat","metadata":{"account":"abc"},"payment_intent":null,"customer_details":null,"custom_fields":[]}`,
	`{"id":"cs_test_a4","metadata":{"tier":"full","smoke":"1"},"customer_email":"fallback@example.com","custom_fields":[null,{"key":"idea","text":null}]}`,
	`{"id":"cs_test_a5","metadata":null,"amount_total":null,"livemode":false}`,
}

// badSessions are session objects stripe-go refuses to decode.
var badSessions = []string{`{"id":"cs_test_b1","amount_total":"500"}`, `{"id":"cs_test_b2","metadata":{"tier":1}}`, `{"id":"cs_test_b3","payment_intent":5}`}

func BenchmarkSessionModeFromJSON(b *testing.B) {
	raw := json.RawMessage(`{"id":"cs_test_bench","object":"checkout.session","mode":"payment","payment_status":"paid","amount_total":2500,"currency":"cad",
	"livemode":false,"created":1763700000,"metadata":{"tier":"strategy","q0":"Acquire a failing restaurant and convert to ghost kitchen"},
	"customer_details":{"email":"a@example.com"},"payment_intent":"pi_123"}`)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, _, err := SessionModeFromJSON(raw); err != nil {
			b.Fatal(err)
		}
	}
}
