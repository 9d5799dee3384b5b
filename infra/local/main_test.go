package main

import (
	"encoding/base64"
	"encoding/json"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v76/webhook"

	"42sisters.ai/oracle/infra/local/stack"
)

func TestResign(t *testing.T) {
	const secret = "whsec_test_resign"
	body := `{"id":"evt_1","type":"checkout.session.completed"}`
	now := time.Now()
	tests := []struct {
		name    string
		event   string
		resign  bool
		header  string // the signature header's name as the event spells it
		payload string
	}{
		{"text body", `{"version":"2.0","headers":{"Stripe-Signature":"t=1,v1=old","content-type":"application/json"},"body":` + quote(body) + `}`, true, "Stripe-Signature", body},
		{"base64 body", `{"version":"2.0","headers":{"stripe-signature":"t=1,v1=old"},"isBase64Encoded":true,"body":"` + base64.StdEncoding.EncodeToString([]byte(body)) + `"}`, true, "stripe-signature", body},
		{"no signature header", `{"version":"2.0","headers":{"content-type":"application/json"},"body":"{}"}`, false, "", ""},
		{"not an API Gateway v2 event", `{"Records":[{"body":"x"}],"headers":{"stripe-signature":"t=1,v1=old"}}`, false, "", ""},
		{"not an object", `["a"]`, false, "", ""},
		{"a scheduled event", string(stack.ScheduledEvent("oracle-local-HealthFunctionEvery", now)), false, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := resign([]byte(tc.event), secret, now)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.resign {
				if string(out) != tc.event {
					t.Fatalf("event changed: %s", out)
				}
				return
			}
			var ev struct {
				Headers map[string]string `json:"headers"`
			}
			if err := json.Unmarshal(out, &ev); err != nil {
				t.Fatal(err)
			}
			if err := webhook.ValidatePayload([]byte(tc.payload), ev.Headers[tc.header], secret); err != nil {
				t.Errorf("signature %q does not verify: %v", ev.Headers[tc.header], err)
			}
		})
	}
	if _, err := resign([]byte(`{"version":"2.0","headers":{"stripe-signature":"x"},"isBase64Encoded":true,"body":"%%%"}`), secret, now); err == nil {
		t.Error("a body marked base64 that is not was accepted")
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestScheduleEvery(t *testing.T) {
	tests := []struct {
		in   string
		want map[string]time.Duration
		err  string
	}{
		{"", nil, ""},
		{"HealthFunction=30s", map[string]time.Duration{"HealthFunction": 30 * time.Second}, ""},
		{" HealthFunction=30s, SmokeFunction=2m ", map[string]time.Duration{"HealthFunction": 30 * time.Second, "SmokeFunction": 2 * time.Minute}, ""},
		{"HealthFunction", nil, "not LogicalId=duration"},
		{"=30s", nil, "not LogicalId=duration"},
		{"HealthFunction=30", nil, "not a positive duration"},
		{"HealthFunction=0s", nil, "not a positive duration"},
		{"HealthFunction=-1m", nil, "not a positive duration"},
		{"HealthFunction=30s,", nil, "not LogicalId=duration"},
		{"HealthFunction=30s,HealthFunction=1m", nil, "twice"},
	}
	for _, tc := range tests {
		got, err := scheduleEvery(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "SCHEDULE_EVERY") {
				t.Errorf("scheduleEvery(%q) = %v, %v; want an error saying %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || !maps.Equal(got, tc.want) {
			t.Errorf("scheduleEvery(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}
