package x402client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Check is one of validate.mjs's verdicts.
type Check struct {
	Valid  bool     `json:"valid"`
	Errors []string `json:"errors"`
}

// Validation is validate.mjs's report on one PaymentRequired: each part
// checked by @x402/core's schema or @x402/extensions' own functions.
type Validation struct {
	// Valid says every check below passed.
	Valid bool `json:"valid"`
	// Status is the probed URL's answer (ValidateURL only): 402 is valid.
	Status int `json:"status,omitempty"`
	// PaymentRequired is @x402/core's PaymentRequiredSchema.
	PaymentRequired Check `json:"paymentRequired"`
	// Bazaar is extensions.bazaar: info against its own schema
	// (validateDiscoveryExtension), the protocol's rules
	// (validateDiscoveryExtensionSpec), a JSON Schema 2020-12 schema, and
	// what extractDiscoveryInfo reads from the official client's payment.
	Bazaar struct {
		Check
		Present bool `json:"present"`
		// Discovered is what a Bazaar facilitator would catalogue.
		Discovered json.RawMessage `json:"discovered"`
	} `json:"bazaar"`
	// PaymentIdentifier is extensions["payment-identifier"]: valid, without
	// an id, and the official declaration.
	PaymentIdentifier struct {
		Check
		Present  bool  `json:"present"`
		Required *bool `json:"required"`
	} `json:"paymentIdentifier"`
	// Resource is resource's serviceName, tags and iconUrl: none dropped by
	// sanitizeResourceServiceMetadata.
	Resource struct {
		Check
		Kept json.RawMessage `json:"kept"`
	} `json:"resource"`
	// Document is the PaymentRequired validated.
	Document json.RawMessage `json:"document"`
}

// Err is nil when v is valid, else one error listing every failed check.
func (v Validation) Err() error {
	if v.Valid {
		return nil
	}
	var failed []string
	for _, c := range []struct {
		name string
		Check
	}{
		{"paymentRequired", v.PaymentRequired},
		{"bazaar", v.Bazaar.Check},
		{"payment-identifier", v.PaymentIdentifier.Check},
		{"resource", v.Resource.Check},
	} {
		for _, e := range c.Errors {
			failed = append(failed, c.name+": "+e)
		}
	}
	if len(failed) == 0 {
		failed = []string{"invalid, and no check says why"}
	}
	return errors.New("x402client: the 402 is not valid: " + strings.Join(failed, "; "))
}

// ValidateURL probes url as a crawler does (POST, no body) and validates the
// PaymentRequired the official client reads from the answer. An error means
// there was none to read.
func (c *Client) ValidateURL(ctx context.Context, url string) (Validation, error) {
	var v Validation
	if err := c.run(ctx, "validate.mjs", []string{"--", url}, nil, "", &v); err != nil {
		return Validation{}, fmt.Errorf("x402client: validate %s: %w", url, err)
	}
	return v, nil
}

// ValidateJSON validates a PaymentRequired given as JSON, e.g. an MCP tool
// result's structuredContent.
func (c *Client) ValidateJSON(ctx context.Context, paymentRequired []byte) (Validation, error) {
	var v Validation
	if err := c.run(ctx, "validate.mjs", []string{"-"}, paymentRequired, "", &v); err != nil {
		return Validation{}, fmt.Errorf("x402client: validate: %w", err)
	}
	return v, nil
}
