// Package geminikey checks a Gemini API key with one plain HTTP call, for
// the health job: it reads the model's description (GET
// /v1beta/models/{model}), an authenticated call that costs no tokens.
//
// It exists so that the health job need not link the Gen AI SDK
// (google.golang.org/genai, with Google's auth, gRPC and go-cmp, whose
// reflection makes the linker keep every exported method of the AWS
// clients): about 14 MB of its bootstrap (docs/performance.md). The
// generator, which calls the model, checks its key through shared/gemini.
package geminikey

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"42sisters.ai/oracle/shared/secret"
)

// Defaults of Options.
const (
	// DefaultModel is the model the Oracle's prompts are written for
	// (shared/gemini's default too).
	DefaultModel = "gemini-2.5-flash"
	// DefaultBaseURL is Google's Gemini API.
	DefaultBaseURL = "https://generativelanguage.googleapis.com"
	// DefaultTimeout bounds one check.
	DefaultTimeout = 5 * time.Second
)

// maxBody bounds what is read of an answer: a model's description or an
// error is a few kilobytes.
const maxBody = 1 << 20

// Options configure a Checker.
type Options struct {
	// Key is the API key, read again when Google refuses it; required.
	Key *secret.Value
	// Model is the model whose description is read; empty means DefaultModel.
	Model string
	// BaseURL points the check at the fake Gemini (tests, the local stack);
	// empty means DefaultBaseURL.
	BaseURL string
	// Timeout bounds each request; zero means DefaultTimeout.
	Timeout time.Duration
	// HTTPClient sends the requests; nil means a default http.Client.
	HTTPClient *http.Client
}

// Checker checks one key against one model. It is safe for concurrent use.
type Checker struct {
	key     *secret.Value
	url     string
	timeout time.Duration
	client  *http.Client
}

// New returns a Checker for o. It fails when the key is empty, the timeout
// negative or the base URL not an absolute http(s) URL. It makes no call.
func New(o Options) (*Checker, error) {
	if o.Key.Get() == "" {
		return nil, errors.New("geminikey: the API key is empty")
	}
	if o.Timeout < 0 {
		return nil, fmt.Errorf("geminikey: the timeout must not be negative, got %s", o.Timeout)
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Model == "" {
		o.Model = DefaultModel
	}
	if o.BaseURL == "" {
		o.BaseURL = DefaultBaseURL
	}
	u, err := url.Parse(o.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errors.New("geminikey: the base URL must be an absolute http or https URL")
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{}
	}
	return &Checker{
		key:     o.Key,
		url:     strings.TrimSuffix(o.BaseURL, "/") + "/v1beta/models/" + url.PathEscape(o.Model),
		timeout: o.Timeout,
		client:  o.HTTPClient,
	}, nil
}

// Error is a check that did not get the model's description. Its message
// holds neither the key nor Google's message text.
type Error struct {
	// Refused: Google refused the key (401, 403, or 400 with an API_KEY_*
	// reason, which is how it answers an unknown or expired key).
	Refused    bool
	HTTPStatus int    // 0 when Google did not answer
	Status     string // Google's status, such as INVALID_ARGUMENT
	Err        error  // the cause, when there is one
	detail     string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("gemini key check: ")
	if e.Refused {
		b.WriteString("the key is refused")
	} else {
		b.WriteString(e.detail)
	}
	if e.HTTPStatus != 0 {
		fmt.Fprintf(&b, " (HTTP %d %s)", e.HTTPStatus, e.Status)
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// Refused reports whether err is a check whose key Google refused.
func Refused(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Refused
}

// CheckKey returns nil when Google accepts the key and describes the
// model, an *Error with Refused set when Google refuses the key, and
// another *Error when it could not tell (an outage, no answer in time, a
// model Google does not know). It never retries, but a refused key is read
// again from its secret (at most once a minute, see package secret) and,
// when it changed, checked once more: the check then reports on the new
// key.
func (c *Checker) CheckKey(ctx context.Context) error {
	key := c.key.Get()
	err := c.check(ctx, key)
	if Refused(err) {
		if fresh, ok := c.key.Renew(ctx, key); ok {
			err = c.check(ctx, fresh)
		}
	}
	return err
}

// googleError is the body of a Google API error (a google.rpc.Status).
type googleError struct {
	Error struct {
		Code    int              `json:"code"`
		Status  string           `json:"status"`
		Details []map[string]any `json:"details"`
	} `json:"error"`
}

func (c *Checker) check(ctx context.Context, key string) error {
	callCtx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(callCtx, http.MethodGet, c.url, nil)
	if err != nil {
		return &Error{detail: "the request could not be built", Err: err}
	}
	// In a header, never the query: a URL ends up in error messages.
	req.Header.Set("x-goog-api-key", key)
	resp, err := c.client.Do(req)
	if err != nil {
		detail := "the request failed"
		if errors.Is(callCtx.Err(), context.DeadlineExceeded) {
			detail = fmt.Sprintf("no answer within %s", c.timeout)
		}
		return &Error{detail: detail, Err: err}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return &Error{HTTPStatus: resp.StatusCode, detail: "the answer could not be read", Err: err}
	}
	if resp.StatusCode == http.StatusOK {
		var m struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(body, &m) != nil || m.Name == "" {
			return &Error{HTTPStatus: resp.StatusCode, detail: "the model's description has no name"}
		}
		return nil
	}
	var g googleError
	_ = json.Unmarshal(body, &g) // a body that is no Google error leaves the status alone
	e := &Error{HTTPStatus: resp.StatusCode, Status: g.Error.Status, detail: "Google did not describe the model"}
	switch resp.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden:
		e.Refused = true
	case http.StatusBadRequest:
		e.Refused = KeyRefused(g.Error.Details)
	}
	return e
}

// KeyRefused reports whether a google.rpc.ErrorInfo detail of a Google
// API error blames the API key (API_KEY_INVALID, API_KEY_EXPIRED, ...): how
// Google answers an unknown key with 400. shared/gemini reads the model's
// errors with it too.
func KeyRefused(details []map[string]any) bool {
	for _, d := range details {
		if reason, _ := d["reason"].(string); d["@type"] == "type.googleapis.com/google.rpc.ErrorInfo" && strings.HasPrefix(reason, "API_KEY_") {
			return true
		}
	}
	return false
}
