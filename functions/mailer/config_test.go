package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// The transport and the schedule are read and checked at cold start: a
// wrong one stops the function with a message naming it.
func TestConfigTransportAndSchedule(t *testing.T) {
	base := map[string]string{
		"ORDERS_TABLE": "orders", "LEDGER_TABLE": "ledger", "AUDIT_BUCKET": "audit", "ALERTS_TOPIC_ARN": "arn:aws:sns:us-east-1:1:alerts",
		"QUARANTINE_BUCKET": "q", "MAIL_QUEUE_URL": "http://q/mail", "GENERATE_QUEUE_URL": "http://q/generate", "INBOX_BUCKET": "inbox", "CHAT_TABLE": "chat", "BASE_URL": "https://42sisters.ai",
		"STRIPE_SECRET_KEY": "sk_test_x", "HASH_PEPPER": "a-pepper-of-at-least-16-bytes",
	}
	const creds = `{"tenant_id":"t","client_id":"c","client_secret":"s"}`
	cases := []struct {
		name    string
		env     map[string]string
		problem string // "" when the settings are valid
		check   func(t *testing.T, s settings)
	}{
		{"defaults", nil, "", func(t *testing.T, s settings) {
			if s.Graph != nil || len(s.Schedule) != 4 || s.Schedule[3] != 2*time.Hour || s.BlockedRetry != DefaultBlockedRetry || s.ChatTable != "chat" {
				t.Errorf("defaults %+v", s)
			}
		}},
		{"graph", map[string]string{"MAIL_TRANSPORT": "graph", "GRAPH_CREDENTIALS": creds}, "", func(t *testing.T, s settings) {
			if s.Graph == nil || s.Graph.TenantID != "t" || s.Graph.Sender != s.Brand.Sender {
				t.Errorf("graph %+v", s.Graph)
			}
		}},
		{"compressed schedule", map[string]string{"MAIL_RETRY_SCHEDULE": "0,1s,2s,3s"}, "", func(t *testing.T, s settings) {
			if len(s.Schedule) != 4 || s.Schedule[1] != time.Second {
				t.Errorf("schedule %v", s.Schedule)
			}
		}},
		{"unknown transport", map[string]string{"MAIL_TRANSPORT": "smtp"}, "MAIL_TRANSPORT", nil},
		{"graph without credentials", map[string]string{"MAIL_TRANSPORT": "graph"}, "GRAPH_CREDENTIALS", nil},
		{"graph with unreadable credentials", map[string]string{"MAIL_TRANSPORT": "graph", "GRAPH_CREDENTIALS": `{"tenant_id":"t"}`}, "GRAPH_CREDENTIALS", nil},
		{"no chat table", map[string]string{"CHAT_TABLE": ""}, "CHAT_TABLE", nil},
		{"a schedule that waits first", map[string]string{"MAIL_RETRY_SCHEDULE": "5m,30m"}, "MAIL_RETRY_SCHEDULE", nil},
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
				if strings.Contains(err.Error(), `"s"}`) {
					t.Fatalf("the error quotes the secret: %v", err)
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
