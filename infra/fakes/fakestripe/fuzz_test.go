package fakestripe_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	fakestripe "42sisters.ai/oracle/infra/fakes/fakestripe"
)

// FuzzAPI feeds arbitrary form bodies to the API and the local routes: every
// answer must be a success or a Stripe error object, never a panic or a 5xx.
func FuzzAPI(f *testing.F) {
	f.Add("/v1/checkout/sessions", "mode=payment&success_url=http://x.example/&line_items[0][price_data][currency]=cad&line_items[0][price_data][unit_amount]=100&line_items[0][price_data][product_data][name]=Q&line_items[0][quantity]=1&metadata[tier]=quick")
	f.Add("/v1/checkout/sessions", "line_items[99][quantity]=1&line_items[x]=&metadata[a][b]=c&metadata=&expires_at=-1")
	f.Add("/v1/checkout/sessions", "mode=payment&success_url=%zz")
	f.Add("/v1/refunds", "payment_intent=pi_x&amount=999999999999999999999")
	f.Add("/v1/refunds", "charge=ch_x&payment_intent=pi_y&reason=fraudulent&metadata[a]=b")
	f.Add("/_disputes", "payment_intent=pi_x&reason=fraudulent&amount=-1")
	f.Add("/_disputes", `{"payment_intent":"pi_x","amount":1e400}`)
	f.Add("/_early_fraud_warnings", `{"payment_intent":null,"fraud_type":{}}`)
	f.Fuzz(func(t *testing.T, path, body string) {
		srv := fakestripe.New(fakestripe.Options{Rand: seeded(3)})
		req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
		req.URL.Path = path
		req.Header.Set("Authorization", "Bearer "+testKey)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("POST %q %q: status %d: %s", path, body, rec.Code, rec.Body)
		}
		var v map[string]any
		if ct := rec.Header().Get("Content-Type"); ct == "application/json" && json.Unmarshal(rec.Body.Bytes(), &v) != nil {
			t.Fatalf("POST %q %q: invalid JSON: %s", path, body, rec.Body)
		}
	})
}
