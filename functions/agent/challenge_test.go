package main

import (
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"slices"
	"testing"
	"time"

	"42sisters.ai/oracle/shared/obs"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/x402"
)

// fresh is a 402 built and encoded as every request did before the offers'
// were encoded once: the PaymentRequired with its reason, marshalled for
// the body and again for the header.
func fresh(t *testing.T, h *Handler, o offer, tier oracle.Tier, reason string) (body, header string) {
	t.Helper()
	resource := o.resource
	pr := &x402.PaymentRequired{X402Version: x402.Version, Error: reason, Resource: &resource, Accepts: h.accepts(tier),
		Extensions: map[string]any{
			x402.ExtensionBazaar:            o.bazaar,
			x402.ExtensionPaymentIdentifier: x402.PaymentIdentifierDeclaration(false),
		}}
	b, err := json.Marshal(pr)
	if err != nil {
		t.Fatal(err)
	}
	header, err = x402.EncodeHeader(pr)
	if err != nil {
		t.Fatal(err)
	}
	return string(b), header
}

// refusalReasons are every reason a 402 can carry: none (a probe, a request
// without a payment), each of the protocol's codes, and what a facilitator
// may answer in its own words, with the characters encoding/json escapes
// (HTML's, quotes, a backslash, a line separator, invalid UTF-8).
var refusalReasons = []string{
	"",
	x402.ReasonInvalidVersion, x402.ReasonUnsupportedScheme, x402.ReasonInvalidNetwork, x402.ReasonInvalidPayload,
	x402.ReasonInvalidPaymentRequirements, x402.ReasonMalformedExact, x402.ReasonMissingSignature,
	x402.ReasonSignatureFormat, x402.ReasonInvalidSignature, x402.ReasonRecipientMismatch, x402.ReasonValueMismatch,
	x402.ReasonValidBefore, x402.ReasonValidAfter, x402.ReasonNonceAlreadyUsed, x402.ReasonInsufficientBalance,
	x402.ReasonTransactionFailed, x402.ReasonUnexpectedVerify, x402.ReasonUnexpectedSettle,
	`facilitator said <b>"no"</b> & \ left`, "line\u2028separator\ttab", "bad \xff utf-8",
}

// TestEncodedChallengesAreTheFreshOnes holds every 402 the rail answers,
// encoded once per offer, to the one built afresh: byte for byte in the
// body and the PAYMENT-REQUIRED header, for every tier's route and MCP
// tool, every refusal reason, each way the networks are offered and a
// site with and without an icon.
func TestEncodedChallengesAreTheFreshOnes(t *testing.T) {
	base, _ := x402.LookupNetwork(x402.NetworkBase)
	sepolia, _ := x402.LookupNetwork(x402.NetworkBaseSepolia)
	for _, tc := range []struct {
		name     string
		networks []x402.NetworkInfo
		site     string
	}{
		{"a test network alone, the local stack's site", []x402.NetworkInfo{sepolia}, "http://localhost:3000"},
		{"Base alone, a public site", []x402.NetworkInfo{base}, "https://oracle.example"},
		{"Base and the smoke test's network", []x402.NetworkInfo{base, sepolia}, "https://oracle.example"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &Handler{Networks: tc.networks, PayTo: payTo, SmokePayer: "0x00000000000000000000000000000000000b0b01",
				MaxTimeout: 5 * time.Minute, BaseURL: tc.site, Retention: 90 * 24 * time.Hour,
				Log: obs.NewLogger(io.Discard, "ERROR"), Now: time.Now}
			type sold struct {
				where string
				tier  oracle.Tier
				offer offer
			}
			var all []sold
			for _, path := range slices.Sorted(maps.Keys(Routes)) {
				all = append(all, sold{path, Routes[path], h.offers()[path]})
			}
			for _, name := range slices.Sorted(maps.Keys(MCPTools)) {
				all = append(all, sold{"mcp:" + name, MCPTools[name], h.toolOffer(name, MCPTools[name])})
			}
			for _, s := range all {
				for _, reason := range refusalReasons {
					got := h.required(&payment{tier: s.tier, offer: s.offer}, reason).required
					body, header := fresh(t, h, s.offer, s.tier, reason)
					if got.json != body {
						t.Errorf("%s, reason %q: the body\n%s\nwant\n%s", s.where, reason, got.json, body)
					}
					if got.header != header {
						t.Errorf("%s, reason %q: the header differs from the fresh one", s.where, reason)
					}
				}
			}
			// Through the handler: a probe of each route is the fresh 402.
			for _, path := range slices.Sorted(maps.Keys(Routes)) {
				resp, err := h.Handle(context.Background(), request(path, "", ""))
				if err != nil {
					t.Fatal(err)
				}
				body, header := fresh(t, h, h.offers()[path], Routes[path], "")
				if resp.StatusCode != http.StatusPaymentRequired || resp.Body != body || resp.Headers[x402.HeaderPaymentRequired] != header {
					t.Errorf("POST %s without a body: %d %s; want 402 with the fresh challenge", path, resp.StatusCode, resp.Body)
				}
			}
		})
	}
}
