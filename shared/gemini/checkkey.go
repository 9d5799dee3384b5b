package gemini

import (
	"context"
	"fmt"
)

// CheckKey validates the API key without generating anything
// (SPEC_ORACLE_GEMINI_TIMEOUT, GAP-02D): it reads the configured model's
// description, GET /v1beta/models/{model}, an authenticated call that costs
// no tokens. It is bounded by the client's timeout and never retries.
//
// It returns nil when Google accepts the key, an *Error of Kind AuthFailure
// when Google refuses it (401, 403, or 400 API_KEY_INVALID), and otherwise
// an *Error classified as Generate classifies its failures: a model Google
// does not know is a BadRequest (404), an outage a ServerError, no answer in
// time a Timeout, and so on.
//
// A refused key is read again from its secret (see RenewKey) and, when it
// changed, checked once more: the check then reports on the new key.
func (c *Client) CheckKey(ctx context.Context) error {
	err := c.checkKey(ctx)
	if c.RenewKey(ctx, err) {
		err = c.checkKey(ctx)
	}
	return err
}

func (c *Client) checkKey(ctx context.Context) error {
	k, err := c.current(ctx)
	if err != nil {
		return &Error{Kind: BadRequest, detail: "the client could not be built", Err: err}
	}
	callCtx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	m, err := k.models.Get(callCtx, c.model, nil)
	if err != nil {
		e := c.classify(ctx, callCtx, err)
		e.key = k.key
		return e
	}
	if m == nil || m.Name == "" {
		return &Error{Kind: ServerError, detail: fmt.Sprintf("the description of model %s has no name", c.model)}
	}
	return nil
}
