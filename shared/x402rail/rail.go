// Package x402rail is the agent rail as the functions that serve it and
// watch it configure it: its settings, read once at cold start
// (X402_PAY_TO, X402_NETWORKS, X402_FACILITATOR_URL and the facilitator's
// API key), and the facilitator's client, whose key is read again when the
// facilitator refuses it. The protocol itself is shared/x402's.
package x402rail

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strings"

	"42sisters.ai/oracle/shared/config"
	"42sisters.ai/oracle/shared/secret"
	"42sisters.ai/oracle/shared/x402"
)

// Settings are the rail's settings. A zero PayTo means the rail is off.
type Settings struct {
	// PayTo is the wallet agents pay, EIP-55.
	PayTo    string
	Networks []x402.NetworkInfo
	// FacilitatorURL and, for Coinbase's, its API key pair ("<key id>
	// <secret>", read again when refused; empty for a facilitator that
	// needs none).
	FacilitatorURL string
	FacilitatorKey *secret.Value
}

// On reports whether the rail is on (X402_PAY_TO is set).
func (s Settings) On() bool { return s.PayTo != "" }

// networkChoices are X402_NETWORKS's values.
var networkChoices = map[string][]x402.Network{
	"mainnet": {x402.NetworkBase},
	"testnet": {x402.NetworkBaseSepolia},
	"both":    {x402.NetworkBase, x402.NetworkBaseSepolia},
}

// FromEnv reads the rail's settings, recording what is missing or
// malformed as env's problems. With X402_PAY_TO unset the rail is off and
// nothing else is read.
func FromEnv(ctx context.Context, env *config.Env) Settings {
	s := Settings{PayTo: env.Optional("X402_PAY_TO", "")}
	if s.PayTo == "" {
		return s
	}
	if sum, err := x402.ChecksumAddress(s.PayTo); err != nil {
		env.Invalid("X402_PAY_TO", fmt.Errorf("must be a wallet address (0x and 40 hex digits): %w", err))
	} else {
		s.PayTo = sum
	}
	choice := env.Optional("X402_NETWORKS", "testnet")
	names, ok := networkChoices[choice]
	if !ok {
		env.Invalid("X402_NETWORKS", fmt.Errorf("must be mainnet, testnet or both, got %q", choice))
	}
	for _, n := range names {
		info, _ := x402.LookupNetwork(n)
		s.Networks = append(s.Networks, info)
	}
	s.FacilitatorURL = env.URL("X402_FACILITATOR_URL")
	if s.FacilitatorURL != "" {
		if err := CheckFacilitatorURL(s.FacilitatorURL); err != nil {
			env.Invalid("X402_FACILITATOR_URL", err)
		}
	}
	s.FacilitatorKey = env.Credential(ctx, "X402_FACILITATOR_KEY", false)
	if k := s.FacilitatorKey.Get(); k != "" {
		if _, err := Authorizer(k); err != nil {
			env.Invalid("X402_FACILITATOR_KEY", err)
		}
	}
	return s
}

// CheckFacilitatorURL refuses a facilitator reached over plain http,
// except on a loopback address (localhost, 127.0.0.0/8, ::1: the local
// stack's fake): the facilitator's answer says whether money moved, and
// its key travels with each request.
func CheckFacilitatorURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return fmt.Errorf("must be an absolute https:// URL, got %q", raw)
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		host := u.Hostname()
		if ip := net.ParseIP(host); host == "localhost" || (ip != nil && ip.IsLoopback()) {
			return nil
		}
	}
	return fmt.Errorf("must be https:// (plain http only to a loopback address, the local stack's), got %q", raw)
}

// Authorizer is the CDP facilitator's authorizer for its API key pair,
// given as "<key id> <secret>" (the secret may hold spaces and newlines).
func Authorizer(key string) (*x402.CDPAuthorizer, error) {
	id, sec, ok := strings.Cut(strings.TrimSpace(key), " ")
	if !ok || id == "" || strings.TrimSpace(sec) == "" {
		return nil, fmt.Errorf("must be the API key id, a space, and its secret")
	}
	a, err := x402.NewCDPAuthorizer(id, strings.TrimSpace(sec))
	if err != nil {
		return nil, fmt.Errorf("the API key's secret: %w", err)
	}
	return a, nil
}
