package main

import (
	"strings"
	"testing"
)

func TestConfig(t *testing.T) {
	env := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	s, err := loadConfig(env(nil))
	if err != nil || s.Site != "42 Sisters AI" || s.Support != "oracle@42sisters.ai" {
		t.Fatalf("defaults: %+v %v", s, err)
	}
	s, err = loadConfig(env(map[string]string{"SITE_NAME": "Oracle Test", "SUPPORT_EMAIL": "help@example.com"}))
	if err != nil || s.Site != "Oracle Test" || s.Support != "help@example.com" {
		t.Fatalf("overrides: %+v %v", s, err)
	}
	for _, bad := range []string{"not an address", "Help <help@example.com>", "help@example.com, x@example.com"} {
		_, err := loadConfig(env(map[string]string{"SUPPORT_EMAIL": bad}))
		if err == nil || !strings.Contains(err.Error(), "SUPPORT_EMAIL") {
			t.Errorf("SUPPORT_EMAIL=%q: %v", bad, err)
		}
	}
}
