// Package chatreply writes the Sisters Chat's replies: one exchange is the
// person's message answered in the single external voice, from two model
// passes with opposite stances (one builds the case, one tests it), run at
// once, then a third that merges them into the one reply. The reply passes
// the content filter (shared/sosfilter, the gate a verdict's text passes)
// before it is returned; a reply the filter stops is written again once,
// then replaced by a fixed apology (templates/apology.txt) with a CHAT_REPLY_FILTERED
// alert. The stances have no names beyond "build" and "test": nothing of
// them reaches the person or a log line.
//
// The package calls the model through the generator's client, circuit and
// timeouts (shared/gemini, shared/circuit); it stores nothing and spends
// nothing: the caller takes the exchange before Reply and gives it back
// when Reply fails with ErrUnavailable or answers with the apology.
package chatreply

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/circuit"
	"42sisters.ai/oracle/shared/gemini"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/prompt"
	"42sisters.ai/oracle/shared/sosfilter"
)

// What Result.Filter says of the reply.
const (
	FilterPass        = "pass"        // the first reply passed the filter (repaired, if it had to be)
	FilterRegenerated = "regenerated" // the first was stopped; the one written again passed
	FilterApology     = "apology"     // both were stopped (or the second could not be written): the apology
)

// How Reply shares its deadline (see Reply).
const (
	// StanceShare is the part of the time left at the start that the two
	// stances, run at once, may take.
	StanceShare = 0.4
	// MergeShare is the part of the time left after the stances that the
	// merge may take; a reply written again gets the rest.
	MergeShare = 0.6
	// DefaultBudget bounds a Reply whose ctx has no deadline: the API's
	// 30 s less room for the caller's writes.
	DefaultBudget = 25 * time.Second
)

// ErrUnavailable is the error of a Reply the model could not write: the
// circuit is open, a pass failed (after the Caller's retries) or the
// deadline passed. The caller gives the exchange back and tells the person
// to try again. It is an *oracle.Error (503) whose message a person may
// read; the cause is wrapped beside it (gemini.KindOf sees it).
var ErrUnavailable = oracle.Errorf(oracle.CodeUnavailable, "the reply could not be written just now: please try again")

// apology replaces a reply the filter stopped twice. It lives beside the
// package, like every customer-facing text, and a test runs it through the
// content filter.
//
//go:embed templates/apology.txt
var apologyText string

// Apology is the fixed reply given when the content filter stopped a reply
// and the reply written again.
func Apology() string { return strings.TrimSpace(apologyText) }

// Request is one exchange.
type Request struct {
	// History is the conversation so far, oldest first; Reply reads the
	// newest MaxHistoryChars of it (Bound).
	History []Turn
	// Message is the person's new message, checked by Validate.
	Message string
	// Account is the account's keyed hash, for the alert's subject only;
	// may be empty.
	Account string
}

// Result is an exchange's reply and how it was written.
type Result struct {
	// Reply is the text to store and show: the filter's output, or the
	// apology.
	Reply string
	// Filter is FilterPass, FilterRegenerated or FilterApology.
	Filter string
	// Model is the model that wrote the reply (empty for the apology when
	// no second reply was written).
	Model string
	// Usage is the tokens Google counted over every pass that answered.
	Usage gemini.Usage
	// Calls is how many passes answered: 3, or 4 with a reply written again.
	Calls int
}

// Model makes one bounded, retried model call (gemini.Caller, built with
// CallerPolicy).
type Model interface {
	Call(ctx context.Context, r gemini.Request, validate func(text string) error) (gemini.Result, error)
}

// Circuit is the breaker the generator shares (shared/circuit).
type Circuit interface {
	Allow(ctx context.Context) (circuit.Permit, error)
	Succeeded(ctx context.Context, p circuit.Permit, latency time.Duration) (circuit.Transition, error)
	Failed(ctx context.Context, p circuit.Permit) (circuit.Transition, error)
}

// Filter is the content filter (sosfilter.Filter).
type Filter interface {
	Text(text string) sosfilter.Result
	Listed(s string) []string
}

// Alerter raises operator alerts (alert.Alerter).
type Alerter interface {
	Raise(ctx context.Context, a alert.Alert)
}

// CallerPolicy is the gemini.Policy of the Caller a Replier calls through:
// each attempt bounded by callTimeout (GEMINI_CALL_TIMEOUT), at most two
// attempts, and no reserve of its own, since Reply hands each pass a
// deadline that already leaves the caller's room (a reserve taken from
// each share would be taken three times).
func CallerPolicy(callTimeout time.Duration) gemini.Policy {
	return gemini.Policy{CallTimeout: callTimeout, Attempts: 2, Reserve: -1, MinCall: time.Second}
}

// Replier writes replies. Model and Filter are required; Circuit and Alerts
// may be nil (no breaker, no alerts), Log and Now default to discarding
// and time.Now. It is safe for concurrent use.
type Replier struct {
	Model   Model
	Circuit Circuit
	Filter  Filter
	Alerts  Alerter
	Log     *slog.Logger
	Now     func() time.Time
}

// Reply answers req.Message in the single voice.
//
// Time: the whole exchange fits in ctx's deadline (DefaultBudget from now
// when it has none), which the caller sets to what its API allows less the
// writes that follow. The three model calls share it: the two stances run
// at once and must both answer within StanceShare (40 %) of the time left
// when Reply starts; the merge gets MergeShare (60 %) of the time left
// after them; a reply written again gets whatever is left. Each share is
// the deadline of one Model.Call, inside which the Caller's own bounds
// apply (GEMINI_CALL_TIMEOUT an attempt, its retries and backoff while the
// share allows). With the API's 30 s and 25 s for the exchange, the
// stances have 10 s, a merge that starts at 3 s has 13 s and a second
// merge what remains, so a slow model ends in ErrUnavailable in time for
// the person to be told, never in the API's own timeout.
//
// It fails with Validate's error for a message it does not answer, with an
// error for a history of unknown roles, and with ErrUnavailable (wrapping
// the cause) when the model could not write the reply; a reply the filter
// stops twice is not an error but the apology (Result.Filter).
func (r *Replier) Reply(ctx context.Context, req Request) (Result, error) {
	if err := Validate(req.Message); err != nil {
		return Result{}, err
	}
	if err := checkRoles(req.History); err != nil {
		return Result{}, err
	}
	if r.Model == nil || r.Filter == nil {
		return Result{}, errors.New("chatreply: the replier has no model or no filter")
	}
	start := r.now()
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = start.Add(DefaultBudget)
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	history := Bound(req.History)
	x := &exchange{r: r, log: r.logger(), account: req.Account, in: prompt.ChatInput{History: turns(history), Message: req.Message}}

	permit, err := r.allow(ctx, x.log)
	if err != nil {
		return Result{}, err
	}
	res, err := x.run(ctx, start, deadline)
	health := err
	if health == nil {
		health = x.againErr // the apology after a second writing that failed
	}
	r.report(ctx, x.log, permit, x.slowest, health)
	attrs := []slog.Attr{
		slog.Int("history_turns", len(history)), slog.Int("history_dropped", len(req.History)-len(history)),
		slog.Int("message_chars", VisibleChars(req.Message)), slog.Int("calls", x.calls),
		slog.Int64("latency_ms", r.now().Sub(start).Milliseconds()),
		slog.Int("prompt_tokens", x.usage.PromptTokens), slog.Int("output_tokens", x.usage.OutputTokens),
	}
	if err != nil {
		x.log.LogAttrs(ctx, slog.LevelWarn, "chat reply failed", append(attrs, slog.String("error", err.Error()))...)
		return Result{}, err
	}
	x.log.LogAttrs(ctx, slog.LevelInfo, "chat reply", append(attrs, slog.String("filter", res.Filter),
		slog.String("model", res.Model), slog.Int("reply_chars", utf8.RuneCountInString(res.Reply)))...)
	return res, nil
}

// exchange is one Reply's state.
type exchange struct {
	r        *Replier
	log      *slog.Logger
	account  string
	in       prompt.ChatInput
	mu       sync.Mutex
	usage    gemini.Usage
	calls    int
	slowest  time.Duration // the longest answered pass, for the circuit's slow streak
	againErr error         // why the reply could not be written again, for the circuit
}

// run makes the passes and the filter's decision.
func (x *exchange) run(ctx context.Context, start, deadline time.Time) (Result, error) {
	stanceCtx, cancel := context.WithDeadline(ctx, share(start, deadline, StanceShare))
	defer cancel()
	// The first stance to fail fails the exchange and stops the other; its
	// error, not the other's cancellation, is what the circuit hears.
	var wg sync.WaitGroup
	var once sync.Once
	var failed error
	notes := make([]gemini.Result, 2)
	build, test, err := prompt.ChatStances(x.in)
	if err != nil {
		return Result{}, fmt.Errorf("chatreply: the stances: %w", err)
	}
	for i, p := range []prompt.ChatPrompt{build, test} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := x.ask(stanceCtx, p)
			if err != nil {
				once.Do(func() { failed = err; cancel() })
				return
			}
			notes[i] = res
		}()
	}
	wg.Wait()
	if failed != nil {
		return Result{}, failed
	}

	merge := x.in
	merge.Built, merge.Tested = strings.TrimSpace(notes[0].Reply.Text), strings.TrimSpace(notes[1].Reply.Text)
	mergeCtx, cancelMerge := context.WithDeadline(ctx, share(x.r.now(), deadline, MergeShare))
	defer cancelMerge()
	first, err := x.call(mergeCtx, prompt.PassMerge, merge)
	if err != nil {
		return Result{}, err
	}
	out := x.r.Filter.Text(strings.TrimSpace(first.Reply.Text))
	if out.Action != sosfilter.Quarantine {
		return x.result(out.Text, FilterPass, first.Model), nil
	}
	x.log.LogAttrs(ctx, slog.LevelWarn, "chat reply stopped by the content filter; writing it again",
		slog.String("categories", categories(out.Hits)), slog.String("reason", string(out.Reason)))

	again := merge
	again.Again, again.Avoid = true, x.r.Filter.Listed(first.Reply.Text)
	second, err := x.call(ctx, prompt.PassMerge, again)
	if err == nil {
		out2 := x.r.Filter.Text(strings.TrimSpace(second.Reply.Text))
		if out2.Action != sosfilter.Quarantine {
			return x.result(out2.Text, FilterRegenerated, second.Model), nil
		}
		x.apologise(ctx, "the content filter stopped a chat reply ("+categories(out.Hits)+
			") and the reply written again ("+categories(out2.Hits)+")")
		return x.result(Apology(), FilterApology, second.Model), nil
	}
	x.againErr = err
	x.apologise(ctx, "the content filter stopped a chat reply ("+categories(out.Hits)+
		") and writing it again failed ("+gemini.KindOf(err).String()+")")
	return x.result(Apology(), FilterApology, ""), nil
}

// call makes one pass within ctx.
func (x *exchange) call(ctx context.Context, pass prompt.ChatPass, in prompt.ChatInput) (gemini.Result, error) {
	p, err := prompt.Chat(pass, in)
	if err != nil {
		return gemini.Result{}, fmt.Errorf("chatreply: %s: %w", pass, err)
	}
	return x.ask(ctx, p)
}

// ask sends one pass's prompt within ctx, counting what it used. A failure
// is ErrUnavailable, naming the pass and wrapping the cause.
func (x *exchange) ask(ctx context.Context, p prompt.ChatPrompt) (gemini.Result, error) {
	pass := p.Pass
	began := x.r.now()
	res, err := x.r.Model.Call(ctx, gemini.Request{System: p.System, User: p.User, Seed: p.Seed, Text: true, MaxOutputTokens: p.MaxTokens}, nil)
	took := x.r.now().Sub(began)
	if err != nil {
		return gemini.Result{}, fmt.Errorf("%w (the %s pass): %w", ErrUnavailable, pass, err)
	}
	x.mu.Lock()
	x.usage = x.usage.Add(res.Reply.Usage)
	x.calls++
	x.slowest = max(x.slowest, took)
	x.mu.Unlock()
	return res, nil
}

func (x *exchange) result(reply, filter, model string) Result {
	x.mu.Lock()
	defer x.mu.Unlock()
	return Result{Reply: reply, Filter: filter, Model: model, Usage: x.usage, Calls: x.calls}
}

// apologise raises the one alert of an exchange that ends in the apology.
func (x *exchange) apologise(ctx context.Context, detail string) {
	x.log.LogAttrs(ctx, slog.LevelWarn, "chat reply replaced by the apology")
	if x.r.Alerts == nil {
		return
	}
	x.r.Alerts.Raise(ctx, alert.Alert{Severity: alert.Warn, Kind: alert.ChatReplyFiltered, Subject: x.account,
		Detail: detail + "; the person got the apology and the exchange is not spent"})
}

// allow asks the circuit for leave to call the model: an open circuit is
// ErrUnavailable at once, an unreadable one lets the call through.
func (r *Replier) allow(ctx context.Context, log *slog.Logger) (circuit.Permit, error) {
	if r.Circuit == nil {
		return circuit.Permit{}, nil
	}
	p, err := r.Circuit.Allow(ctx)
	var open *circuit.OpenError
	switch {
	case errors.As(err, &open):
		return p, fmt.Errorf("%w: %w", ErrUnavailable, err)
	case err != nil:
		log.WarnContext(ctx, "circuit state unreadable; calling the model", "error", err.Error())
	}
	return p, nil
}

// report tells the circuit how the model fared, as the generator does: a
// failure of the kinds that show it unwell counts; any answer is a
// success, timed by the slowest pass (each is one call, as a verdict is).
func (r *Replier) report(ctx context.Context, log *slog.Logger, p circuit.Permit, slowest time.Duration, callErr error) {
	if r.Circuit == nil || errors.Is(callErr, circuit.ErrOpen) || errors.Is(callErr, gemini.ErrNoBudget) {
		return
	}
	var t circuit.Transition
	var err error
	if gemini.Countable(callErr) {
		t, err = r.Circuit.Failed(ctx, p)
	} else {
		t, err = r.Circuit.Succeeded(ctx, p, slowest)
	}
	if err != nil {
		log.ErrorContext(ctx, "recording the model's health in the circuit failed", "error", err.Error())
	}
	if r.Alerts != nil {
		switch {
		case t.Tripped():
			r.Alerts.Raise(ctx, alert.Alert{Severity: alert.Error, Kind: alert.CircuitOpen,
				Detail: "the model circuit opened (" + t.String() + ") on a chat reply; chat messages are answered \"try again\" and paid orders are parked until it closes"})
		case t.Changed() && t.To == circuit.Closed:
			r.Alerts.Raise(ctx, alert.Alert{Severity: alert.Warn, Kind: alert.CircuitClosed, Detail: "the model circuit closed; parked orders resume"})
		}
	}
	if t.Changed() {
		log.WarnContext(ctx, "circuit "+t.String())
	}
}

// share is the deadline at part of the time from now to deadline.
func share(now, deadline time.Time, part float64) time.Time {
	left := deadline.Sub(now)
	if left <= 0 {
		return deadline
	}
	return now.Add(time.Duration(float64(left) * part))
}

// turns maps the history onto the prompt's turns.
func turns(history []Turn) []prompt.ChatTurn {
	out := make([]prompt.ChatTurn, len(history))
	for i, t := range history {
		out[i] = prompt.ChatTurn{FromPerson: t.Role == RolePerson, Text: t.Text}
	}
	return out
}

// categories names the block list categories of hits with their counts,
// such as "internal_term 1, crew_callsign 2": what a log line or an alert
// may say of a stopped reply. Not the entries: a crew entry's id spells
// the name it blocks, and the chat never logs the internal names of its
// streams.
func categories(hits []sosfilter.Hit) string {
	var order []sosfilter.Category
	count := map[sosfilter.Category]int{}
	for _, h := range hits {
		if count[h.Category] == 0 {
			order = append(order, h.Category)
		}
		count[h.Category]++
	}
	parts := make([]string, len(order))
	for i, c := range order {
		parts[i] = fmt.Sprintf("%s %d", c, count[c])
	}
	return strings.Join(parts, ", ")
}

func (r *Replier) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *Replier) logger() *slog.Logger {
	if r.Log != nil {
		return r.Log
	}
	return slog.New(slog.DiscardHandler)
}
