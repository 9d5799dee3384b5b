package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"42sisters.ai/oracle/shared/chatsession"
	"42sisters.ai/oracle/shared/config"
)

func TestConfig(t *testing.T) {
	base := map[string]string{
		"CHAT_TABLE": "chat", "LEDGER_TABLE": "ledger", "MAIL_QUEUE_URL": "https://sqs.test/mail", "AUDIT_BUCKET": "audit",
		"ALERTS_TOPIC_ARN": "arn:aws:sns:us-east-1:123456789012:alerts", "BASE_URL": "https://42sisters.ai/oracle",
		"HASH_PEPPER": "a pepper of sixteen bytes or more", "CHAT_COOKIE_KEY": strings.Repeat("k", chatsession.MinKey),
		"GEMINI_API_KEY": "a model key", "STRIPE_SECRET_KEY": "sk_test_123",
	}
	load := func(change map[string]string) (settings, error) {
		env := map[string]string{}
		for k, v := range base {
			env[k] = v
		}
		for k, v := range change {
			env[k] = v
		}
		return loadFrom(context.Background(), config.New(func(k string) (string, bool) { v, ok := env[k]; return v, ok && v != "" }, nil))
	}
	s, err := load(nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.Origin != "https://42sisters.ai" || s.DailyCap != 25 || s.RetentionDays != 30 || s.Retention != 30*24*time.Hour ||
		s.ReplyTimeout != 25*time.Second || string(s.CookieKey) != base["CHAT_COOKIE_KEY"] {
		t.Fatalf("defaults: %+v", s)
	}
	if s, err := load(map[string]string{"CHAT_DAILY_CAP": "20", "CHAT_RETENTION_DAYS": "7"}); err != nil || s.DailyCap != 20 || s.Retention != 7*24*time.Hour {
		t.Fatalf("set: %+v %v", s, err)
	}
	for name, change := range map[string]map[string]string{
		"no cookie key":         {"CHAT_COOKIE_KEY": ""},
		"a short cookie key":    {"CHAT_COOKIE_KEY": "short"},
		"no table":              {"CHAT_TABLE": ""},
		"a cap of zero":         {"CHAT_DAILY_CAP": "0"},
		"no retention":          {"CHAT_RETENTION_DAYS": "0"},
		"a reply timeout of 1m": {"CHAT_REPLY_TIMEOUT": "1m"},
		"no base URL":           {"BASE_URL": ""},
		"no model key":          {"GEMINI_API_KEY": ""},
		"no Stripe key":         {"STRIPE_SECRET_KEY": ""},
	} {
		if _, err := load(change); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
