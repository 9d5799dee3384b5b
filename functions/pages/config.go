package main

import (
	"fmt"
	"net/mail"

	"42sisters.ai/oracle/shared/config"
)

type settings struct {
	Site    string
	Support string
}

// loadConfig reads and validates every setting once, at cold start. Both
// are optional; a malformed support address fails the cold start, since
// every page prints it as the customer's way to reach a person.
func loadConfig(lookup func(string) (string, bool)) (settings, error) {
	env := config.New(lookup, nil)
	s := settings{
		Site:    env.Optional("SITE_NAME", defaultSite),
		Support: env.Optional("SUPPORT_EMAIL", defaultSupport),
	}
	if err := env.Err(); err != nil {
		return settings{}, err
	}
	if a, err := mail.ParseAddress(s.Support); err != nil || a.Name != "" || a.Address != s.Support {
		return settings{}, fmt.Errorf("invalid configuration: SUPPORT_EMAIL must be a plain address such as oracle@42sisters.ai, got %q", s.Support)
	}
	return s, nil
}
