// Package gemini is the Oracle's client for the Gemini API: a thin adapter
// over google.golang.org/genai that makes one deterministic, JSON-mode
// generateContent call per Generate and classifies its failures.
//
// A Client neither retries nor parses the answer. A Caller does the
// bounded, retried call of SPEC_ORACLE_GEMINI_TIMEOUT over a Client: a
// timeout on every attempt, at most three attempts within the caller's
// deadline, full-jitter backoff, Google's retry delay honoured, one
// stricter retry after a reply that fails the caller's validation, and an
// optional fallback model. The circuit breaker is the caller's: Countable
// says whether a failed Call counts against it.
package gemini

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/genai"

	"42sisters.ai/oracle/shared/geminikey"
	"42sisters.ai/oracle/shared/prompt"
	"42sisters.ai/oracle/shared/secret"
	"42sisters.ai/oracle/shared/tracing"
)

// Defaults of Options.
const (
	// DefaultModel is the model the Oracle's prompts are written for.
	DefaultModel = geminikey.DefaultModel
	// DefaultTimeout bounds each call (SPEC_ORACLE_GEMINI_TIMEOUT, invariant 1).
	DefaultTimeout = 45 * time.Second
)

// Options configure a Client.
type Options struct {
	// APIKey is the Gemini API key, when Key is nil. One of them is
	// required: the client never falls back to GEMINI_API_KEY or
	// GOOGLE_API_KEY from the environment.
	APIKey string
	// Key is the API key as a secret that reads itself again when Google
	// refuses it (see RenewKey); nil means APIKey, never read again.
	Key *secret.Value
	// Model is the model to call; empty means DefaultModel.
	Model string
	// BaseURL points the client at the fake Gemini (tests, the local
	// stack); empty means Google.
	BaseURL string
	// Timeout bounds each call, on top of the caller's own deadline; zero
	// means DefaultTimeout.
	Timeout time.Duration
	// HTTPClient sends the requests; nil means a default http.Client.
	HTTPClient *http.Client
}

// Client calls the Gemini API with one key and model. It is safe for
// concurrent use.
type Client struct {
	key     *secret.Value
	config  genai.ClientConfig // without the key
	model   string
	timeout time.Duration

	// keyed is the genai client for the key as last read; it is built
	// again when the key changes.
	keyed atomic.Pointer[keyedModels]
}

// keyedModels is a genai client and the key it sends.
type keyedModels struct {
	key    string
	models *models
}

// models is genai.Models with only the calls a Client makes. A Client is
// stored in interfaces, and in the generator, where reflection can call
// methods, the linker keeps every method of the types inside a stored value:
// with *genai.Models here, every Gemini API operation (see package awsenv).
type models genai.Models

func (m *models) GenerateContent(ctx context.Context, model string, contents []*genai.Content, config *genai.GenerateContentConfig) (*genai.GenerateContentResponse, error) {
	return (*genai.Models)(m).GenerateContent(ctx, model, contents, config)
}

func (m *models) Get(ctx context.Context, model string, config *genai.GetModelConfig) (*genai.Model, error) {
	return (*genai.Models)(m).Get(ctx, model, config)
}

// New returns a Client for o. It fails when the API key is empty, the
// timeout negative or the base URL not an absolute http(s) URL. It makes no
// network call.
func New(ctx context.Context, o Options) (*Client, error) {
	if o.Key == nil {
		o.Key = secret.Static(o.APIKey)
	}
	if o.Key.Get() == "" {
		return nil, errors.New("gemini: new client: the API key is empty")
	}
	if o.Timeout < 0 {
		return nil, fmt.Errorf("gemini: new client: the timeout must not be negative, got %s", o.Timeout)
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Model == "" {
		o.Model = DefaultModel
	}
	// Each request to the model is a span of the order's trace.
	hc := &http.Client{}
	if o.HTTPClient != nil {
		*hc = *o.HTTPClient
	}
	hc.Transport = tracing.Transport("gemini", hc.Transport)
	c := &Client{key: o.Key, config: genai.ClientConfig{Backend: genai.BackendGeminiAPI, HTTPClient: hc}, model: o.Model, timeout: o.Timeout}
	if o.BaseURL != "" {
		u, err := url.Parse(o.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, errors.New("gemini: new client: the base URL must be an absolute http or https URL")
		}
		c.config.HTTPOptions.BaseURL = o.BaseURL
	}
	if _, err := c.current(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// current returns the genai client for the key as last read, building it
// when the key changed (genai makes no network call to build one).
func (c *Client) current(ctx context.Context) (*keyedModels, error) {
	key := c.key.Get()
	if k := c.keyed.Load(); k != nil && k.key == key {
		return k, nil
	}
	cfg := c.config
	cfg.APIKey = key
	gc, err := genai.NewClient(ctx, &cfg)
	if err != nil {
		// genai's messages can print the whole configuration, key included.
		return nil, fmt.Errorf("gemini: new client: %w", redacted{err: err, secret: key})
	}
	k := &keyedModels{key: key, models: (*models)(gc.Models)}
	c.keyed.Store(k)
	return k, nil
}

// RenewKey is called after Google refused the key of the failed call err
// (an AuthFailure): it reads the key's secret again (at most once a minute
// per container, see package secret) and reports whether there is a
// different key to call with. The next call uses it.
func (c *Client) RenewKey(ctx context.Context, err error) bool {
	var e *Error
	if !errors.As(err, &e) || e.Kind != AuthFailure {
		return false
	}
	_, ok := c.key.Renew(ctx, e.key)
	return ok
}

// Model is the model the client calls, as configured.
func (c *Client) Model() string { return c.model }

// Request is one generation: the system instruction, the user's text, the
// response schema of the tier and the sampling seed.
type Request struct {
	System string
	User   string
	Schema *genai.Schema
	Seed   int32
	// Text asks for free text (a chat reply) instead of a JSON verdict:
	// no JSON mode and no schema, the chat settings of shared/prompt
	// (prompt.ChatTemperature, ChatTopP, ChatThinkingBudget) with Seed, and
	// at most MaxOutputTokens tokens. Strict adds nothing to a Text
	// request: StrictInstruction speaks of JSON.
	Text bool
	// MaxOutputTokens bounds a Text request's reply; 0 leaves the model's
	// own limit. A verdict request ignores it.
	MaxOutputTokens int32
	// Strict appends StrictInstruction to the system instruction: the
	// retry after a reply that was not the JSON object asked for
	// (SPEC_ORACLE_GEMINI_TIMEOUT, GAP-02E).
	Strict bool
	// Correction, when set, is appended to the system instruction after
	// a blank line (after StrictInstruction when Strict): what was wrong
	// with the previous reply, in words for the model. Caller.Call sets it
	// on the stricter retry from a validation error that is a Correction.
	Correction string
}

// Correction is a validation error that can tell the model what was wrong
// with its reply: Caller.Call sends Correction() with the stricter retry.
type Correction interface {
	error
	Correction() string
}

// StrictInstruction is appended, after a blank line, to the system
// instruction of a Strict request.
const StrictInstruction = "Answer with one JSON object that matches the response schema exactly. No markdown, no code fences, no text before or after it."

// systemInstruction is r's system instruction, with StrictInstruction
// appended when r is Strict, then the Correction, each after a blank line.
func (r Request) systemInstruction() string {
	parts := make([]string, 0, 3)
	if r.System != "" {
		parts = append(parts, r.System)
	}
	if r.Strict && !r.Text {
		parts = append(parts, StrictInstruction)
	}
	if r.Correction != "" {
		parts = append(parts, r.Correction)
	}
	return strings.Join(parts, "\n\n")
}

// Reply is the model's answer. Text is the model's output as it came, to be
// validated by the caller; FinishReason is STOP, or MAX_TOKENS when the
// text was cut off, or empty or FINISH_REASON_UNSPECIFIED when Google did
// not say.
type Reply struct {
	Text         string
	Model        string // the model version that answered
	FinishReason string
	Usage        Usage // the tokens Google counted, zero when it sent none
}

// Usage is a call's token counts as Google reports them (usageMetadata):
// what it bills.
type Usage struct {
	PromptTokens  int // the instructions and the user's text
	OutputTokens  int // the reply (candidatesTokenCount)
	ThoughtTokens int // thinking, billed as output
}

// Add returns the sum of u and v.
func (u Usage) Add(v Usage) Usage {
	return Usage{PromptTokens: u.PromptTokens + v.PromptTokens, OutputTokens: u.OutputTokens + v.OutputTokens, ThoughtTokens: u.ThoughtTokens + v.ThoughtTokens}
}

// Generate makes one generateContent call, bounded by the client's timeout,
// with the determinism settings of SPEC_ORACLE_REGEN_CONSISTENCY, which
// shared/prompt versions with the prompts: JSON output in r.Schema,
// prompt.Temperature, TopP, TopK and CandidateCount, and r.Seed, so the
// same prompt gets the same answer as far as Gemini allows. A Text request
// gets free text with the chat settings instead (see Request.Text). It
// never retries. Every error is an *Error; its message holds neither the
// prompt nor the API key.
func (c *Client) Generate(ctx context.Context, r Request) (Reply, error) {
	if strings.TrimSpace(r.User) == "" {
		return Reply{}, &Error{Kind: BadRequest, detail: "the user text is empty"}
	}
	config := &genai.GenerateContentConfig{
		ResponseMIMEType: prompt.ResponseMIMEType,
		ResponseSchema:   r.Schema,
		Temperature:      genai.Ptr(prompt.Temperature),
		TopP:             genai.Ptr(prompt.TopP),
		TopK:             genai.Ptr(prompt.TopK),
		CandidateCount:   prompt.CandidateCount,
		Seed:             genai.Ptr(r.Seed),
		// One call is one request: no follow-up requests for long answers.
		AutomaticContinuation: genai.Ptr(false),
	}
	if r.Text {
		config = &genai.GenerateContentConfig{
			ResponseMIMEType: prompt.ChatResponseMIMEType,
			Temperature:      genai.Ptr(prompt.ChatTemperature),
			TopP:             genai.Ptr(prompt.ChatTopP),
			CandidateCount:   prompt.CandidateCount,
			Seed:             genai.Ptr(r.Seed),
			MaxOutputTokens:  r.MaxOutputTokens,
			// Thinking would add seconds to each of an exchange's calls,
			// which share the API's 30 s (see shared/chatreply).
			ThinkingConfig:        &genai.ThinkingConfig{ThinkingBudget: genai.Ptr(prompt.ChatThinkingBudget)},
			AutomaticContinuation: genai.Ptr(false),
		}
	}
	if system := r.systemInstruction(); system != "" {
		config.SystemInstruction = genai.NewContentFromText(system, genai.RoleUser)
	}
	k, err := c.current(ctx)
	if err != nil {
		return Reply{}, &Error{Kind: BadRequest, detail: "the client could not be built", Err: err}
	}
	callCtx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	resp, err := k.models.GenerateContent(callCtx, c.model, genai.Text(r.User), config)
	if err != nil {
		e := c.classify(ctx, callCtx, err)
		e.key = k.key
		return Reply{}, e
	}
	return c.reply(resp)
}

// reply takes the first candidate's text. No candidate, no text, or a stop
// for any reason but STOP or MAX_TOKENS (a block, a recitation, ...) is a
// ContentFailure.
func (c *Client) reply(resp *genai.GenerateContentResponse) (Reply, error) {
	if len(resp.Candidates) == 0 || resp.Candidates[0] == nil {
		detail := "the answer has no candidate"
		if pf := resp.PromptFeedback; pf != nil && pf.BlockReason != "" {
			return Reply{}, &Error{Kind: ContentFailure, detail: fmt.Sprintf("the prompt was blocked (%s)", pf.BlockReason), Err: ErrRefused}
		}
		return Reply{}, &Error{Kind: ContentFailure, detail: detail}
	}
	cand := resp.Candidates[0]
	switch cand.FinishReason {
	case "", genai.FinishReasonUnspecified, genai.FinishReasonStop, genai.FinishReasonMaxTokens:
	case genai.FinishReasonSafety, genai.FinishReasonProhibitedContent, genai.FinishReasonBlocklist, genai.FinishReasonSPII:
		return Reply{}, &Error{Kind: ContentFailure, detail: fmt.Sprintf("the candidate was blocked (%s)", cand.FinishReason), Err: ErrRefused}
	default:
		return Reply{}, &Error{Kind: ContentFailure, detail: fmt.Sprintf("the candidate stopped with %s", cand.FinishReason)}
	}
	var text strings.Builder
	if cand.Content != nil {
		for _, p := range cand.Content.Parts {
			if p != nil && !p.Thought {
				text.WriteString(p.Text)
			}
		}
	}
	if strings.TrimSpace(text.String()) == "" {
		return Reply{}, &Error{Kind: ContentFailure, detail: fmt.Sprintf("the candidate has no text (finish reason %q)", cand.FinishReason)}
	}
	model := resp.ModelVersion
	if model == "" {
		model = c.model
	}
	var usage Usage
	if u := resp.UsageMetadata; u != nil {
		usage = Usage{PromptTokens: int(u.PromptTokenCount), OutputTokens: int(u.CandidatesTokenCount), ThoughtTokens: int(u.ThoughtsTokenCount)}
	}
	return Reply{Text: text.String(), Model: model, FinishReason: string(cand.FinishReason), Usage: usage}, nil
}

// redacted hides a secret in the message of the error it wraps.
type redacted struct {
	err    error
	secret string
}

func (r redacted) Error() string { return strings.ReplaceAll(r.err.Error(), r.secret, "[redacted]") }

func (r redacted) Unwrap() error { return r.err }
