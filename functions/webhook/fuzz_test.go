package main

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v76"
	"github.com/stripe/stripe-go/v76/webhook"

	"42sisters.ai/oracle/shared/obs"
	"42sisters.ai/oracle/shared/stripex"
)

// FuzzWebhookVerify feeds arbitrary bodies and signature headers to the
// verification and the session parsing: nothing panics, and nothing is
// accepted unless it is genuinely signed with a configured secret.
func FuzzWebhookVerify(f *testing.F) {
	body, _ := json.Marshal(map[string]any{
		"id": "evt_fuzz", "object": "event", "api_version": stripe.APIVersion, "type": "checkout.session.completed",
		"livemode": false, "created": 1763700000,
		"data": map[string]any{"object": map[string]any{"id": "cs_test_fuzz", "payment_status": "paid", "metadata": map[string]string{"tier": "quick", "q0": "x", "qn": "1"}}},
	})
	f.Add(body, sign(body, testSecret, time.Now()))
	f.Add(body, "t=1,v1=00")
	f.Add([]byte("{}"), "")
	f.Add([]byte(`{"id":"evt_1","data":{"object":{"id":"cs_test_x","custom_fields":[{"key":"idea","text":null}]}}}`), "t=0,v1=zz,v0=aa")
	h := &Handler{Secrets: Secrets{Test: testSecret, Live: liveSecret}, Metrics: obs.NewMetrics(&bytes.Buffer{}, "Oracle", time.Now), Log: obs.NewLogger(&bytes.Buffer{}, "ERROR"), Now: time.Now}
	f.Fuzz(func(t *testing.T, body []byte, header string) {
		event, err := h.verify(body, header)
		if err != nil {
			return
		}
		if webhook.ValidatePayloadIgnoringTolerance(body, header, testSecret) != nil &&
			webhook.ValidatePayloadIgnoringTolerance(body, header, liveSecret) != nil {
			t.Fatalf("accepted a payload not signed with either secret")
		}
		_, _ = stripex.SessionFromJSON(event.Data.Raw)
	})
}
