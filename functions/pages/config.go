package main

import (
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
		Support: env.Address("SUPPORT_EMAIL", defaultSupport),
	}
	if err := env.Err(); err != nil {
		return settings{}, err
	}
	return s, nil
}
