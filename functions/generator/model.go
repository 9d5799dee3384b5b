package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/circuit"
	"42sisters.ai/oracle/shared/crosscheck"
	"42sisters.ai/oracle/shared/gemini"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/prompt"
	"42sisters.ai/oracle/shared/sosfilter"
)

// generation is a model reply that passed the crosscheck and the schema.
type generation struct {
	result   gemini.Result
	raw      string // the reply as the model wrote it, for a quarantine record
	analysis oracle.Analysis
	decision crosscheck.Decision
}

// rejected is a reply the crosscheck refused (SPEC_ORACLE_TMM_CROSSCHECK).
type rejected struct{ decision crosscheck.Decision }

func (r *rejected) Error() string {
	d := r.decision
	if x := d.Contradiction; d.Rule == crosscheck.RuleMajority && x != nil {
		return fmt.Sprintf("the crosscheck rejected the reply (%s: %s over %d of %d dimensions %s, C=%.4f)",
			d.Reason, x.Verdict, len(x.Dimensions), x.Present, x.Majority, d.CoherenceScore)
	}
	return fmt.Sprintf("the crosscheck rejected the reply (%s by the %s rule, C=%.4f)", d.Reason, d.Rule, d.CoherenceScore)
}

// Correction names a contradiction to the model on the stricter retry
// (gemini.Correction); other rejections get the strict instruction alone.
func (r *rejected) Correction() string {
	x := r.decision.Contradiction
	if x == nil {
		return ""
	}
	return prompt.Contradiction(x.Verdict, x.Majority, x.Dimensions, x.Present)
}

// unpublishable is a reply gate 1 would repair or hold: the model writes
// it again once, told which words to avoid, before anything is held.
type unpublishable struct {
	terms []string // the block list's entries, for the error's words
	words []string // the reply's listed words as it wrote them, for the model only
}

func (u *unpublishable) Error() string {
	return "gate 1 would repair or hold the reply (" + strings.Join(u.terms, ",") + "); the model writes it again"
}

// Correction names the words to the model on the stricter retry.
func (u *unpublishable) Correction() string { return prompt.Unpublishable(u.words) }

// ask asks the model for the leased order's verdict, checking each reply
// before anything else sees it: the crosscheck first (audited every time),
// then the tier's schema. A reply either fails gets the model call's one
// stricter retry, which is the crosscheck's "one fresh generation"; a reply
// that contradicts its dimensions has the contradiction named in it.
//
// The first reply that passes both also meets gate 1 here, before the
// store's: one it would repair or hold is written again, on the same
// stricter retry (so within GEMINI INV-2's bound of attempts), with its
// listed words named (prompt.Unpublishable), and its decision is audited
// as a REWRITE. A verdict is held only when its second writing fails too:
// the store's gate 1 decides on it (at most one rewrite). When that second
// writing fails the crosscheck or the schema instead, the Call ends on
// it, and the first writing is what gate 1 holds or repairs.
func (h *Handler) ask(ctx context.Context, t *task) (generation, error) {
	o := t.order
	p, err := prompt.Build(o.Tier, o.Query)
	if err != nil {
		return generation{}, fmt.Errorf("build prompt: %w", err)
	}
	var g generation
	var (
		rewriting bool       // gate 1 sent a reply back to be written again
		first     generation // that reply
	)
	checks := 0
	validate := func(text string) error {
		checks++
		d := crosscheck.Check(o.Tier, []byte(text))
		h.auditCrosscheck(ctx, t, d, checks)
		if !d.Approved && !slices.Contains(d.Flags, crosscheck.FlagMalformedJSON) {
			return &rejected{decision: d}
		}
		a, err := oracle.ParseAnalysis(o.Tier, []byte(text))
		if err != nil {
			return err
		}
		if !rewriting {
			if _, rep := h.Filter.Analysis(sosfilter.UnmarkedAnalysis(a)); rep.Action != sosfilter.Pass {
				rewriting = true
				first = generation{raw: text, analysis: a, decision: d}
				h.auditRewrite(t, rep)
				return &unpublishable{terms: rep.Terms(), words: h.Filter.ListedIn(sosfilter.UnmarkedAnalysis(a))}
			}
		}
		g.analysis, g.decision, g.raw = a, d, text
		return nil
	}
	res, err := h.Model.Call(ctx, gemini.Request{System: p.System, User: p.User, Schema: prompt.Schema(o.Tier), Seed: prompt.Seed}, validate)
	g.result = res
	if err == nil && rewriting {
		t.log.InfoContext(ctx, "verdict written again for gate 1", "model_attempts", res.Attempts)
	}
	var ce *gemini.CallError
	if err != nil && rewriting && errors.As(err, &ce) {
		// The writing again failed the crosscheck or the schema, or
		// never came: the first writing, which passed both, goes to gate 1.
		first.result = gemini.Result{Attempts: ce.Attempts, Model: ce.Model, Strict: ce.Strict}
		t.log.WarnContext(ctx, "the verdict written again for gate 1 failed; gate 1 decides on the first writing", "error", err.Error())
		return first, nil
	}
	return g, err
}

// report tells the circuit how the model fared: a final failure of the
// kinds that show it unwell counts; any answer, even a refused one, is a
// success (the model is up). latency is the whole call, retries and
// backoffs included, as the circuit's slow streak needs (GAP-02B: a model
// that answers only on its third attempt is slow).
func (h *Handler) report(ctx context.Context, log *slog.Logger, p circuit.Permit, latency time.Duration, callErr error) {
	if errors.Is(callErr, gemini.ErrNoBudget) {
		return // nothing was asked
	}
	var t circuit.Transition
	var err error
	if gemini.Countable(callErr) {
		t, err = h.Circuit.Failed(ctx, p)
	} else {
		t, err = h.Circuit.Succeeded(ctx, p, latency)
	}
	if err != nil {
		log.ErrorContext(ctx, "recording the model's health in the circuit failed", "error", err.Error())
	}
	switch {
	case t.Tripped():
		h.Alerts.Raise(ctx, alert.Alert{Severity: alert.Error, Kind: alert.CircuitOpen,
			Detail: "the model circuit opened (" + t.String() + "); paid orders are parked until it closes"})
	case t.Changed() && t.To == circuit.Closed:
		h.Alerts.Raise(ctx, alert.Alert{Severity: alert.Warn, Kind: alert.CircuitClosed, Detail: "the model circuit closed; parked orders resume"})
	}
	if t.Changed() {
		log.WarnContext(ctx, "circuit "+t.String())
	}
}
