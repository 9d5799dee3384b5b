package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	neturl "net/url"
	"strconv"
	"strings"
	"time"

	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/x402"
)

// offer is what a 402 says of one thing sold: the resource, with what a
// catalogue shows of it, and the bazaar extension that says how to call it
// and what it answers.
type offer struct {
	resource x402.ResourceInfo
	bazaar   x402.Extension
	// open is the offer's 402 without a refusal's reason, encoded once
	// (priced): what a probe and a request without a payment get. tail is
	// its JSON after the version, where a refusal's reason is written
	// (required).
	open *challenge
	tail string
}

// challenge is a 402 encoded: the PaymentRequired's JSON (the HTTP body,
// and an MCP result's structuredContent and text) and the same JSON in
// base64 (the PAYMENT-REQUIRED header).
type challenge struct {
	json, header string
}

// versionJSON is how every PaymentRequired's JSON begins: x402Version is
// its first field, and error, when a payment was refused, its second.
var versionJSON = `{"x402Version":` + strconv.Itoa(x402.Version)

// priced is o with its 402 for tier encoded. Nothing in it changes from
// one request to the next (the networks offered, the wallet, the price,
// the resource and the bazaar's description are the configuration's), and
// its two encodings of some 3 KB of nested maps were most of a 402's
// time: encoded once, a 402 copies them.
func (h *Handler) priced(o offer, tier oracle.Tier) offer {
	resource := o.resource
	b, err := json.Marshal(x402.PaymentRequired{
		X402Version: x402.Version,
		Resource:    &resource,
		Accepts:     h.accepts(tier),
		Extensions: map[string]any{
			x402.ExtensionBazaar:            o.bazaar,
			x402.ExtensionPaymentIdentifier: x402.PaymentIdentifierDeclaration(false),
		},
	})
	if err != nil {
		// Strings, numbers and maps of them, and an example verdict
		// json.Marshal wrote: a failure is this code's bug, and the
		// function must not start with it (main prices the offers).
		panic(fmt.Sprintf("the %s offer's 402 cannot be encoded: %v", tier, err))
	}
	o.open = &challenge{json: string(b), header: base64.StdEncoding.EncodeToString(b)}
	o.tail = string(b[len(versionJSON):])
	return o
}

// The catalogue's view of the service (ResourceInfo's serviceName and
// tags, within the official schema's bounds: 1 to 32 printable ASCII
// characters, at most five tags).
var (
	serviceName = "The Oracle"
	serviceTags = []string{"decision", "verdict", "advice", "strategy", "ai"}
)

// exampleQuery is the example body's query in every description.
const exampleQuery = "Should I open a bakery on my street?"

// describe is the 402's description of a tier's verdict.
func describe(tier oracle.Tier) string {
	return fmt.Sprintf("The Oracle's %s: a verdict (GREEN, AMBER, RED or NULL) on your idea or question", tier.Name())
}

// resourceOf is the resource at url selling tier's verdict.
func (h *Handler) resourceOf(url string, tier oracle.Tier) x402.ResourceInfo {
	r := x402.ResourceInfo{URL: url, MimeType: "application/json", Description: describe(tier),
		ServiceName: serviceName, Tags: serviceTags}
	if publicHost(h.BaseURL) {
		r.IconURL = h.BaseURL + IconPath
	}
	return r
}

// publicHost reports whether base names a host a catalogue can fetch an
// icon from: the official extensions package drops an iconUrl on a
// loopback name or an IP literal (sanitizeResourceServiceMetadata), so a
// local stack's 402 names none.
func publicHost(base string) bool {
	u, err := neturl.Parse(base)
	if err != nil || u.User != nil || (u.Scheme != "https" && u.Scheme != "http") {
		return false
	}
	host := strings.ToLower(u.Hostname())
	switch host {
	case "", "localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback":
		return false
	}
	if net.ParseIP(host) != nil || strings.HasPrefix(host, "0x") || strings.Trim(host, "0123456789") == "" {
		return false
	}
	return true
}

// httpOffer is the offer of a paid route: POST path with a JSON body.
func (h *Handler) httpOffer(path string, tier oracle.Tier) offer {
	return h.priced(offer{
		resource: h.resourceOf(h.BaseURL+path, tier),
		bazaar: h.bazaar(tier,
			map[string]any{"type": "http", "method": "POST", "bodyType": "json", "body": map[string]any{"query": exampleQuery}},
			map[string]any{
				"type":     map[string]any{"type": "string", "const": "http"},
				"method":   map[string]any{"type": "string", "enum": []any{"POST"}},
				"bodyType": map[string]any{"type": "string", "enum": []any{"json"}},
				"body":     paidBodySchema(),
			},
			"type", "method", "bodyType", "body"),
	}, tier)
}

// bazaar is the bazaar extension of tier's offer: info's input as given,
// an example verdict of the tier as its output, and the Draft 2020-12
// schema that validates both, input's properties as given, nothing more.
func (h *Handler) bazaar(tier oracle.Tier, input, inputProps map[string]any, required ...any) x402.Extension {
	return x402.Extension{
		Info: map[string]any{"input": input, "output": map[string]any{"type": "json", "example": h.exampleAnswer(tier)}},
		Schema: map[string]any{
			"$schema": "https://json-schema.org/draft/2020-12/schema",
			"type":    "object",
			"properties": map[string]any{
				"input":  map[string]any{"type": "object", "properties": inputProps, "required": required, "additionalProperties": false},
				"output": outputSchema(),
			},
			"required": []any{"input"},
		},
	}
}

// outputSchema is the bazaar schema's output: JSON, with an example.
func outputSchema() map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"type":    map[string]any{"type": "string", "const": "json"},
			"example": map[string]any{"type": "object"},
		},
		"required": []any{"type"},
	}
}

// exampleVerdicts are one verdict of each tier, as the generator stores
// them (a test checks each with oracle.ParseAnalysis): the bazaar's output
// example and the discovery documents'.
var exampleVerdicts = map[oracle.Tier]oracle.Analysis{
	oracle.TierQuick: {Verdict: oracle.VerdictAmber,
		Summary: "Promising if the street has morning foot traffic; test demand with a weekend stall before signing a lease."},
	oracle.TierFull: {Verdict: oracle.VerdictAmber,
		Summary:   "Promising if the street has morning foot traffic; test demand before signing a lease.",
		Breakdown: exampleBreakdown},
	oracle.TierStrategy: {Verdict: oracle.VerdictAmber,
		Summary:   "Promising if the street has morning foot traffic; test demand before signing a lease.",
		Breakdown: exampleBreakdown,
		Strategy: &oracle.Strategy{NextStep: "Run a weekend stall for a month and count repeat buyers.",
			Alternative: "Supply two cafes wholesale before opening a shop.",
			Tests:       []string{"Sell 50 loaves in a morning.", "Get two cafe orders.", "Find a lease under 15% of projected sales."}}},
}

var exampleBreakdown = map[string]oracle.DimensionNote{
	"Stability":   {Verdict: oracle.VerdictGreen, Analysis: "Bread is a daily habit."},
	"Turbulence":  {Verdict: oracle.VerdictAmber, Analysis: "Flour and energy prices swing."},
	"Change Rate": {Verdict: oracle.VerdictGreen, Analysis: "A bakery can open in weeks."},
	"Completion":  {Verdict: oracle.VerdictAmber, Analysis: "The lease is the long commitment."},
	"Curvature":   {Verdict: oracle.VerdictRed, Analysis: "Early hours wear owners down."},
}

// exampleAnswer is a paid request's 200 answer for tier, as an example.
func (h *Handler) exampleAnswer(tier oracle.Tier) verdictAnswer {
	id := "x402_live_" + "0123456789abcdefghijklmnopqrstuv"
	// An Analysis of strings and maps always marshals.
	verdict, _ := json.Marshal(exampleVerdicts[tier])
	return verdictAnswer{Status: "ready", OrderID: id, Tier: tier, TierName: tier.Name(), Query: exampleQuery,
		Verdict: verdict, RetentionDays: int(h.Retention / (24 * time.Hour)), ResultURL: h.resultURL(id)}
}
