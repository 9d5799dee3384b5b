package main

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// The settings are read and checked at cold start. The seen records must
// outlast the poll's lookback (V7's cap became that expiry): no setting the
// function accepts lets a forgotten message be listed again.
func TestConfig(t *testing.T) {
	base := map[string]string{
		"ORDERS_TABLE": "orders", "LEDGER_TABLE": "ledger", "AUDIT_BUCKET": "audit", "ALERTS_TOPIC_ARN": "arn:aws:sns:us-east-1:1:alerts",
		"INBOX_BUCKET": "inbox", "MAIL_QUEUE_URL": "http://q/mail", "HASH_PEPPER": "a-pepper-of-at-least-16-bytes", "INBOX_FAILURE_QUEUE": "failures",
	}
	const creds = `{"tenant_id":"t","client_id":"c","client_secret":"s"}`
	cases := []struct {
		name    string
		env     map[string]string
		problem string // "" when the settings are valid
		check   func(t *testing.T, s settings)
	}{
		{"defaults", nil, "", func(t *testing.T, s settings) {
			if s.Graph != nil || s.Cooldown != 24*time.Hour || s.Lookback != 7*24*time.Hour || s.Retention != 45*24*time.Hour ||
				!slices.Contains(s.Policy.Own, "oracle@42sisters.ai") || !slices.Contains(s.Policy.Skip, "noreply@stripe.com") {
				t.Errorf("defaults %+v", s)
			}
		}},
		{"graph reads the support mailbox, which is never answered", map[string]string{"MAIL_TRANSPORT": "graph", "GRAPH_CREDENTIALS": creds,
			"SUPPORT_EMAIL": "help@42sisters.ai"}, "", func(t *testing.T, s settings) {
			if s.Graph == nil || s.Mailbox != "help@42sisters.ai" || !slices.Contains(s.Policy.Own, "help@42sisters.ai") {
				t.Errorf("graph %+v, mailbox %q, own %v", s.Graph, s.Mailbox, s.Policy.Own)
			}
		}},
		{"more skipped addresses, in any case", map[string]string{"INBOX_SKIP": " Alerts@Vendor.example , bot@x.example"}, "", func(t *testing.T, s settings) {
			if !slices.Contains(s.Policy.Skip, "alerts@vendor.example") || !slices.Contains(s.Policy.Skip, "bot@x.example") {
				t.Errorf("skip %v", s.Policy.Skip)
			}
		}},
		{"the longest lookback with the shortest memory", map[string]string{"INBOX_LOOKBACK_DAYS": "30", "INBOX_SEEN_DAYS": "31"}, "", func(t *testing.T, s settings) {
			if s.Retention <= s.Lookback {
				t.Errorf("retention %s does not outlast the lookback %s", s.Retention, s.Lookback)
			}
		}},
		{"a lookback past the memory", map[string]string{"INBOX_LOOKBACK_DAYS": "31"}, "INBOX_LOOKBACK_DAYS", nil},
		{"a memory shorter than a month", map[string]string{"INBOX_SEEN_DAYS": "30"}, "INBOX_SEEN_DAYS", nil},
		{"no bucket", map[string]string{"INBOX_BUCKET": ""}, "INBOX_BUCKET", nil},
		{"graph without credentials", map[string]string{"MAIL_TRANSPORT": "graph"}, "GRAPH_CREDENTIALS", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range base {
				t.Setenv(k, v)
			}
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			s, err := loadConfig(context.Background(), aws.Config{})
			if tc.problem != "" {
				if err == nil || !strings.Contains(err.Error(), tc.problem) {
					t.Fatalf("%v, want a problem naming %s", err, tc.problem)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, s)
		})
	}
}
