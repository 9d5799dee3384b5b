package gemini

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"time"

	"42sisters.ai/oracle/shared/obs"
	"42sisters.ai/oracle/shared/wait"
)

// Generator makes one model call. The *Client is one; it must end the call
// when ctx ends.
type Generator interface {
	Generate(ctx context.Context, r Request) (Reply, error)
}

// A Generator that also has a Model method (the *Client has) is named by it
// in the logs and in Result.Model; any other is "primary" or "fallback".
type modelNamer interface {
	Model() string
}

// Defaults of Policy (SPEC_ORACLE_GEMINI_TIMEOUT).
const (
	// MaxAttempts is the hard ceiling on calls per Call (invariant 2):
	// the first attempt and two retries, never a fourth, whatever the
	// errors and whatever Policy.Attempts says.
	MaxAttempts = 3
	// DefaultBackoffBase is the backoff before the second attempt, before
	// jitter (invariant 3).
	DefaultBackoffBase = time.Second
	// DefaultBackoffCap bounds any one backoff, before jitter (invariant 3).
	DefaultBackoffCap = 8 * time.Second
	// DefaultReserve is kept back from the caller's deadline for the writes
	// that follow the call.
	DefaultReserve = 5 * time.Second
	// DefaultMinCall is the least time worth starting an attempt with.
	DefaultMinCall = 2 * time.Second
)

// Policy bounds a Call. A zero field takes its default; a negative Reserve
// or MinCall means none.
type Policy struct {
	// Attempts is the most calls one Call makes: default and ceiling
	// MaxAttempts (3); more is clamped to it.
	Attempts int
	// CallTimeout bounds each attempt: default DefaultTimeout (45 s).
	CallTimeout time.Duration
	// BackoffBase and BackoffCap shape the backoff after attempt N, a
	// random share of min(BackoffCap, BackoffBase × 2^(N−1)): defaults 1 s
	// and 8 s.
	BackoffBase time.Duration
	BackoffCap  time.Duration
	// Reserve is kept back from ctx's deadline for the writes that follow
	// the call: default 5 s.
	Reserve time.Duration
	// MinCall is the least budget an attempt is started with, after any
	// backoff: default 2 s.
	MinCall time.Duration
}

// normalized fills in p's defaults and clamps Attempts to MaxAttempts.
func (p Policy) normalized() Policy {
	if p.Attempts <= 0 || p.Attempts > MaxAttempts {
		p.Attempts = MaxAttempts
	}
	if p.CallTimeout <= 0 {
		p.CallTimeout = DefaultTimeout
	}
	if p.BackoffBase <= 0 {
		p.BackoffBase = DefaultBackoffBase
	}
	if p.BackoffCap <= 0 {
		p.BackoffCap = DefaultBackoffCap
	}
	switch {
	case p.Reserve == 0:
		p.Reserve = DefaultReserve
	case p.Reserve < 0:
		p.Reserve = 0
	}
	switch {
	case p.MinCall == 0:
		p.MinCall = DefaultMinCall
	case p.MinCall < 0:
		p.MinCall = 0
	}
	return p
}

// backoffCeiling is the longest backoff after attempt n (1-based), before
// jitter: min(BackoffCap, BackoffBase × 2^(n−1)).
func (p Policy) backoffCeiling(n int) time.Duration {
	d := p.BackoffBase
	for i := 1; i < n && d < p.BackoffCap; i++ {
		d *= 2
	}
	return min(d, p.BackoffCap)
}

// unboundedBudget is the budget of a Call whose ctx has no deadline: every
// attempt's timeout and the longest backoff between each two.
func (p Policy) unboundedBudget() time.Duration {
	b := time.Duration(p.Attempts) * p.CallTimeout
	for n := 1; n < p.Attempts; n++ {
		b += p.backoffCeiling(n)
	}
	return b
}

// Caller makes the bounded, retried model call of SPEC_ORACLE_GEMINI_TIMEOUT.
// Only Primary is required. A Caller is safe for concurrent use when its
// functions are.
type Caller struct {
	// Primary is called first.
	Primary Generator
	// Fallback, if set, takes every attempt after the primary fails with
	// RateLimited, ServerError, Timeout or ConnectionError.
	Fallback Generator
	Policy   Policy
	// Rand returns a number in [0, 1) for the full jitter of backoffs;
	// nil means math/rand/v2.
	Rand func() float64
	// Sleep waits for d, or until ctx ends and then returns ctx.Err();
	// nil means a timer.
	Sleep func(ctx context.Context, d time.Duration) error
	// Now is the clock of the budget and latencies; nil means time.Now.
	Now func() time.Time
	// Log receives one line for the budget and one for each attempt; it
	// never sees the prompt, the reply or the key. Nil discards.
	Log *slog.Logger
	// Metrics, when set, gets one line for each attempt the model
	// answered or failed (not one the caller canceled): its latency
	// (obs.ModelLatency) and, when it failed, obs.ModelFailures.
	Metrics Figures
}

// Figures emits metrics (obs.Metrics).
type Figures interface {
	Emit(figs ...obs.Figure)
}

// Result is a Call's valid reply and how it was got.
type Result struct {
	Reply Reply
	// Attempts is the number of calls made, 1 to MaxAttempts.
	Attempts int
	// Model is the model that answered: the reply's model version, or the
	// generator's model when the reply names none.
	Model string
	// Fallback says that the fallback generator answered.
	Fallback bool
	// Strict says that the stricter retry after a content failure was used.
	Strict bool
	// Latency is the successful attempt's.
	Latency time.Duration
}

// ErrInvalidReply is wrapped, with validate's error, in the *Error of Kind
// ContentFailure for a reply that validate refused.
var ErrInvalidReply = errors.New("gemini: the reply is not a valid answer")

// ErrNoBudget is a Call's error when the time left before ctx's deadline,
// less the reserve, was too short for even one attempt.
var ErrNoBudget = errors.New("gemini: not enough time left for a model call")

// CallError is a Call that got no valid reply. Err is the last attempt's
// failure, an *Error (errors.As and KindOf see it), or ErrNoBudget when no
// attempt was made.
type CallError struct {
	// Attempts is the number of calls made, 0 to MaxAttempts.
	Attempts int
	// Model is the model of the last attempt; empty when none was made.
	Model string
	// Strict says that the stricter retry was used.
	Strict bool
	// Refusals counts the attempts the model refused on content grounds
	// (ErrRefused).
	Refusals int
	Err      error
}

// Refusals is how many attempts of a failed Call the model refused on
// content grounds: 2 means the prompt was refused again on the stricter
// retry, a content outcome rather than an outage.
func Refusals(err error) int {
	var ce *CallError
	if errors.As(err, &ce) {
		return ce.Refusals
	}
	return 0
}

// Error says how many attempts were made and how the last one failed, in
// words safe to log (the message of an *Error never quotes the prompt or
// the reply).
func (e *CallError) Error() string {
	if e.Attempts == 0 {
		return "gemini: no attempt made: " + e.Err.Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "gemini: no valid reply after %d attempt", e.Attempts)
	if e.Attempts > 1 {
		b.WriteByte('s')
	}
	if e.Model != "" {
		fmt.Fprintf(&b, " (last on %s", e.Model)
		if e.Strict {
			b.WriteString(", strict")
		}
		b.WriteByte(')')
	}
	b.WriteString(": ")
	b.WriteString(e.Err.Error())
	return b.String()
}

// Unwrap returns the last failure.
func (e *CallError) Unwrap() error { return e.Err }

// Countable reports whether a failed Call counts against the circuit
// breaker: true when attempts were made and the last failed with
// RateLimited, Timeout, ServerError or ConnectionError. A content failure,
// a refused request or key, a cancellation, or a call that never started
// for want of time, does not count.
func Countable(err error) bool {
	var ce *CallError
	if errors.As(err, &ce) && ce.Attempts == 0 {
		return false
	}
	return retryable(KindOf(err))
}

// retryable reports whether a failure of kind k is Gemini's to retry: the
// kinds that also count against the circuit.
func retryable(k Kind) bool {
	switch k {
	case RateLimited, Timeout, ServerError, ConnectionError:
		return true
	}
	return false
}

// Log codes of failures that are never retried (invariant 4).
const (
	codeBadRequest  = "GEMINI_BAD_REQUEST"
	codeAuthFailure = "GEMINI_AUTH_FAILURE"
)

// Call makes the model call r, retried as SPEC_ORACLE_GEMINI_TIMEOUT says,
// and returns the first reply that validate accepts; validate may be nil.
//
// The budget is ctx's deadline less Policy.Reserve, or with no deadline
// every attempt's timeout and the longest backoffs. Each attempt is bounded
// by min(CallTimeout, the budget left), and none is started, nor any
// backoff, that would leave it less than MinCall. At most Policy.Attempts
// calls are made:
//
//   - RateLimited, Timeout, ServerError and ConnectionError are retried
//     after a full-jitter backoff, Rand() × min(BackoffCap, BackoffBase ×
//     2^(N−1)) after attempt N; a RateLimited with Google's retry delay
//     waits that delay instead, or ends the Call when it does not fit. With
//     a Fallback, the attempts after such a failure go to the fallback.
//   - A content failure, an *Error of Kind ContentFailure or a reply that
//     validate refuses, gets one more attempt at once, with Request.Strict
//     set, and with Request.Correction set when validate's error is a
//     Correction; a second one ends the Call.
//   - BadRequest and AuthFailure end the Call at once, logged with the code
//     GEMINI_BAD_REQUEST or GEMINI_AUTH_FAILURE; so does Canceled. The one
//     exception is a refused key that the generator, read again from its
//     secret, finds replaced: the next attempt, at once, carries the new key.
//
// A failed Call returns a *CallError; see Countable, KindOf and
// ErrInvalidReply.
func (c *Caller) Call(ctx context.Context, r Request, validate func(text string) error) (Result, error) {
	if c.Primary == nil {
		return Result{}, errors.New("gemini: call: the caller has no primary generator")
	}
	p := c.Policy.normalized()
	log := c.Log
	if log == nil {
		log = discard
	}
	start := c.now()
	var end time.Time
	deadline, hasDeadline := ctx.Deadline()
	if hasDeadline {
		end = deadline.Add(-p.Reserve)
		log.LogAttrs(ctx, slog.LevelInfo, "[gemini] budget",
			slog.Time("deadline", deadline), slog.Time("now", start), slog.Int64("budget_ms", end.Sub(start).Milliseconds()))
	} else {
		end = start.Add(p.unboundedBudget())
		log.LogAttrs(ctx, slog.LevelInfo, "[gemini] budget",
			slog.String("deadline", "none"), slog.Time("now", start), slog.Int64("budget_ms", end.Sub(start).Milliseconds()))
	}

	gen, name, onFallback := c.Primary, c.name(c.Primary, "primary"), false
	var ce CallError // the failure so far, allocated only when returned
	correction := "" // what the stricter retry tells the model, if anything
	for {
		if errors.Is(ctx.Err(), context.Canceled) {
			return Result{}, c.stop(ctx, log, ce, canceled(ctx, ce.Err), "canceled")
		}
		remaining := end.Sub(c.now())
		if ctx.Err() != nil || remaining <= 0 || remaining < p.MinCall {
			if ce.Attempts == 0 {
				log.LogAttrs(ctx, slog.LevelWarn, "[gemini] gave up",
					slog.String("reason", "no_budget"), slog.Int("attempts", 0), slog.Int64("remaining_ms", remaining.Milliseconds()))
				return Result{}, &CallError{Err: ErrNoBudget}
			}
			return Result{}, c.stop(ctx, log, ce, ce.Err, "budget")
		}

		ce.Attempts++
		ce.Model = name
		req := r
		req.Strict = r.Strict || ce.Strict
		if correction != "" {
			req.Correction = correction
		}
		began := c.now()
		reply, err := c.attempt(ctx, gen, req, min(p.CallTimeout, remaining))
		latency := c.now().Sub(began)
		if err == nil && validate != nil {
			if verr := validate(reply.Text); verr != nil {
				err = &Error{Kind: ContentFailure, detail: "the reply failed validation", Err: fmt.Errorf("%w: %w", ErrInvalidReply, verr)}
				var named Correction
				if !ce.Strict && errors.As(verr, &named) {
					correction = named.Correction()
				}
			}
		}
		if err == nil {
			c.measure(latency, false)
			log.LogAttrs(ctx, slog.LevelInfo, attemptMessage(ce.Attempts, true),
				slog.String("model", name), slog.Int64("latency_ms", latency.Milliseconds()), slog.Bool("strict", ce.Strict), slog.Bool("fallback", onFallback))
			model := reply.Model
			if model == "" {
				model = name
			}
			return Result{Reply: reply, Attempts: ce.Attempts, Model: model, Fallback: onFallback, Strict: ce.Strict, Latency: latency}, nil
		}
		e := classified(ctx, err)
		ce.Err = e
		if e.Kind != Canceled {
			c.measure(latency, true)
		}
		if errors.Is(e, ErrRefused) {
			ce.Refusals++
		}
		attrs := []slog.Attr{
			slog.String("model", name), slog.String("kind", e.Kind.String()), slog.Int64("latency_ms", latency.Milliseconds()),
			slog.Bool("strict", ce.Strict), slog.Bool("fallback", onFallback), slog.String("error", e.Error()),
		}
		if e.HTTPStatus != 0 {
			attrs = append(attrs, slog.Int("http_status", e.HTTPStatus))
		}
		level := slog.LevelWarn
		switch e.Kind {
		case BadRequest:
			level, attrs = slog.LevelError, append(attrs, slog.String("code", codeBadRequest))
		case AuthFailure:
			level, attrs = slog.LevelError, append(attrs, slog.String("code", codeAuthFailure))
		}
		log.LogAttrs(ctx, level, attemptMessage(ce.Attempts, false), attrs...)

		// What next: stop, or wait and try again, maybe strictly, maybe
		// on the fallback.
		if ctx.Err() != nil {
			return Result{}, c.stop(ctx, log, ce, canceled(ctx, e), ctxReason(ctx))
		}
		var wait time.Duration
		strict := ce.Strict
		switch {
		case e.Kind == ContentFailure:
			if ce.Strict {
				return Result{}, c.stop(ctx, log, ce, e, "second_content_failure")
			}
			strict = true // and at once: the model answered, it is not overloaded
		case retryable(e.Kind):
			switch {
			case c.Fallback != nil && !onFallback:
				// The fallback model has its own quota: Google's delay
				// for the primary does not apply to it.
				gen, name, onFallback = c.Fallback, c.name(c.Fallback, "fallback"), true
				wait = c.jitter(p, ce.Attempts)
			case e.Kind == RateLimited && e.RetryAfter > 0:
				wait = e.RetryAfter
				if ce.Attempts < p.Attempts && end.Sub(c.now())-wait < p.MinCall {
					return Result{}, c.stop(ctx, log, ce, e, "retry_after_exceeds_budget")
				}
			default:
				wait = c.jitter(p, ce.Attempts)
			}
		case e.Kind == AuthFailure && renewed(ctx, gen, e):
			// Not a retry of the refused request: the operator has put
			// another key in the secret, and this attempt tries it, at
			// once, within the same ceiling.
		default: // BadRequest, AuthFailure, Canceled
			return Result{}, c.stop(ctx, log, ce, e, "not_retryable")
		}
		if ce.Attempts >= p.Attempts {
			return Result{}, c.stop(ctx, log, ce, e, "attempts_exhausted")
		}
		if end.Sub(c.now())-wait < p.MinCall {
			return Result{}, c.stop(ctx, log, ce, e, "budget")
		}
		ce.Strict = strict
		if wait > 0 {
			log.LogAttrs(ctx, slog.LevelDebug, "[gemini] backoff",
				slog.Int64("wait_ms", wait.Milliseconds()), slog.String("next_model", name), slog.Bool("strict", strict))
			if err := c.sleep(ctx, wait); err != nil {
				return Result{}, c.stop(ctx, log, ce, canceled(ctx, e), ctxReason(ctx))
			}
		}
	}
}

// measure emits an attempt's figures.
func (c *Caller) measure(latency time.Duration, failed bool) {
	if c.Metrics == nil {
		return
	}
	ms := obs.Figure{Name: obs.ModelLatency, Value: float64(latency.Milliseconds()), Unit: obs.UnitMilliseconds}
	if failed {
		c.Metrics.Emit(ms, obs.Figure{Name: obs.ModelFailures, Value: 1, Unit: obs.UnitCount})
		return
	}
	c.Metrics.Emit(ms)
}

// keyRenewer is a Generator whose API key can be read again after Google
// refused it (the *Client).
type keyRenewer interface {
	RenewKey(ctx context.Context, refused error) bool
}

// renewed reports whether gen has another key to try after e refused its key.
func renewed(ctx context.Context, gen Generator, e *Error) bool {
	r, ok := gen.(keyRenewer)
	return ok && r.RenewKey(ctx, e)
}

// attempt makes one call bounded by timeout.
func (c *Caller) attempt(ctx context.Context, gen Generator, r Request, timeout time.Duration) (Reply, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return gen.Generate(ctx, r)
}

// stop logs why the Call ends and returns ce with its last failure last.
func (c *Caller) stop(ctx context.Context, log *slog.Logger, ce CallError, last error, reason string) error {
	ce.Err = last
	log.LogAttrs(ctx, slog.LevelWarn, "[gemini] gave up",
		slog.String("reason", reason), slog.Int("attempts", ce.Attempts), slog.String("kind", KindOf(last).String()), slog.Bool("countable", Countable(&ce)))
	return &ce
}

// canceled is the failure that ends a Call whose ctx ended: a Canceled
// *Error when ctx was canceled, else (ctx's deadline passed) the last
// failure, or a Timeout when there was none.
func canceled(ctx context.Context, last error) error {
	if errors.Is(ctx.Err(), context.Canceled) {
		return &Error{Kind: Canceled, detail: "the caller canceled the call", Err: ctx.Err()}
	}
	if last != nil {
		return last
	}
	return &Error{Kind: Timeout, detail: "the caller's deadline passed", Err: ctx.Err()}
}

// ctxReason names why a Call stopped when its ctx ended or its Sleep
// failed.
func ctxReason(ctx context.Context) string {
	switch err := ctx.Err(); {
	case errors.Is(err, context.Canceled):
		return "canceled"
	case err != nil:
		return "deadline"
	}
	return "sleep_failed"
}

// classified returns err as an *Error. A Generator other than the *Client
// may return other errors: a context error is Canceled or Timeout, and
// anything else a ServerError, whose message does not quote it.
func classified(ctx context.Context, err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	switch {
	case errors.Is(err, context.Canceled) && ctx.Err() != nil:
		return &Error{Kind: Canceled, detail: "the caller canceled the call", Err: err}
	case errors.Is(err, context.DeadlineExceeded):
		return &Error{Kind: Timeout, detail: "no answer within the attempt's timeout", Err: err}
	default:
		return &Error{Kind: ServerError, detail: "unclassified failure", Err: err}
	}
}

// jitter is the full-jitter backoff after attempt n.
func (c *Caller) jitter(p Policy, n int) time.Duration {
	f := rand.Float64
	if c.Rand != nil {
		f = c.Rand
	}
	x := f()
	if !(x >= 0 && x < 1) { // NaN included
		x = 0
	}
	return time.Duration(x * float64(p.backoffCeiling(n)))
}

func (c *Caller) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

func (c *Caller) sleep(ctx context.Context, d time.Duration) error {
	if c.Sleep != nil {
		return c.Sleep(ctx, d)
	}
	return wait.Sleep(ctx, d)
}

// name is g's model name, or role when it has none.
func (c *Caller) name(g Generator, role string) string {
	if n, ok := g.(modelNamer); ok {
		if m := n.Model(); m != "" {
			return m
		}
	}
	return role
}

// attemptMessage is the log message of attempt n: exactly
// "[gemini] attempt N failed" or "[gemini] attempt N succeeded".
func attemptMessage(n int, ok bool) string {
	outcome := "failed"
	if ok {
		outcome = "succeeded"
	}
	return fmt.Sprintf("[gemini] attempt %d %s", n, outcome)
}

var discard = slog.New(slog.DiscardHandler)
