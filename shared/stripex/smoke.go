package stripex

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v76"
	"github.com/stripe/stripe-go/v76/webhook"
)

// The smoke test proves the deployed pipeline with a test-mode Checkout
// Session. Only a request signed with the test-mode webhook signing secret
// may ask the checkout for one: whoever holds that secret can already sign
// test-mode events the webhook accepts, so it opens nothing new.

// SmokeHeader carries a smoke request's signature, in the Stripe-Signature
// format (t=<unix>,v1=<hex HMAC-SHA256 of "t.body">).
const SmokeHeader = "Oracle-Smoke-Signature"

// SmokeTolerance bounds a smoke signature's age, as Stripe bounds events'.
const SmokeTolerance = 5 * time.Minute

// SmokeEmail is the smoke order's address by default: SES's mailbox
// simulator, which accepts the message and reaches no person.
const SmokeEmail = "success@simulator.amazonses.com"

// SignSmoke signs body for SmokeHeader with secret at t, exactly as Stripe
// signs webhook events (stripe-go computes both).
func SignSmoke(body []byte, secret string, t time.Time) string {
	return webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: secret, Timestamp: t}).Header
}

// VerifySmoke checks a SmokeHeader value against body with secret, in
// constant time and within SmokeTolerance of now.
func VerifySmoke(body []byte, header, secret string) error {
	if secret == "" {
		return errors.New("no smoke signing secret is configured")
	}
	if header == "" {
		return errors.New("missing " + SmokeHeader)
	}
	return webhook.ValidatePayloadWithTolerance(body, header, secret, SmokeTolerance)
}

// SmokeSecrets picks what a smoke run works with: a test-mode secret key
// (the main key when it is a test key, else the optional test key beside a
// live one) and the test-mode webhook signing secret, the one the webhook
// checks test-mode events with. ok is false when test mode is not
// configured.
func SmokeSecrets(mainKey, testKey, testWebhookSecret string) (key, signingSecret string, ok bool) {
	switch {
	case testWebhookSecret == "":
		return "", "", false
	case IsTestKey(mainKey):
		return mainKey, testWebhookSecret, true
	case IsLiveKey(mainKey) && IsTestKey(testKey):
		return testKey, testWebhookSecret, true
	}
	return "", "", false
}

// IsTestKey reports a test-mode secret or restricted key.
func IsTestKey(key string) bool {
	return strings.HasPrefix(key, "sk_test_") || strings.HasPrefix(key, "rk_test_")
}

// IsLiveKey reports a live-mode secret or restricted key.
func IsLiveKey(key string) bool {
	return strings.HasPrefix(key, "sk_live_") || strings.HasPrefix(key, "rk_live_")
}

// RawSession fetches a session as Stripe's JSON, every field as sent: the
// smoke test builds its signed event from it, as Stripe would.
func (c *Client) RawSession(ctx context.Context, id string) ([]byte, error) {
	p := &stripe.CheckoutSessionParams{}
	p.Context = ctx
	s, err := withKey(ctx, c.key, func(key string) (*stripe.CheckoutSession, error) { return c.sessions(key).Get(id, p) })
	if err != nil {
		return nil, classify(err, "retrieve checkout session")
	}
	if s.LastResponse == nil || len(s.LastResponse.RawJSON) == 0 {
		return nil, errors.New("retrieve checkout session: Stripe answered no body")
	}
	return s.LastResponse.RawJSON, nil
}

// ExpireSession expires an open session, so that it can no longer be paid.
// One already expired or complete is left as it is.
func (c *Client) ExpireSession(ctx context.Context, id string) error {
	p := &stripe.CheckoutSessionExpireParams{}
	p.Context = ctx
	if _, err := withKey(ctx, c.key, func(key string) (*stripe.CheckoutSession, error) { return c.sessions(key).Expire(id, p) }); err != nil {
		var se *stripe.Error
		if errors.As(err, &se) && se.HTTPStatusCode == 400 {
			return nil // not open any more: nothing to expire
		}
		return classify(err, "expire checkout session")
	}
	return nil
}
