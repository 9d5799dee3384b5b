package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"42sisters.ai/oracle/shared/alert"
	"42sisters.ai/oracle/shared/circuit"
	"42sisters.ai/oracle/shared/crosscheck"
	"42sisters.ai/oracle/shared/gemini"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/prompt"
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

// ask asks the model for the leased order's verdict, checking each reply
// before anything else sees it: the crosscheck first (audited every time),
// then the tier's schema. A reply either fails gets the model call's one
// stricter retry, which is the crosscheck's "one fresh generation"; a reply
// that contradicts its dimensions has the contradiction named in it.
func (h *Handler) ask(ctx context.Context, t *task) (generation, error) {
	o := t.order
	p, err := prompt.Build(o.Tier, o.Query)
	if err != nil {
		return generation{}, fmt.Errorf("build prompt: %w", err)
	}
	var g generation
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
		g.analysis, g.decision, g.raw = a, d, text
		return nil
	}
	res, err := h.Model.Call(ctx, gemini.Request{System: p.System, User: p.User, Schema: prompt.Schema(o.Tier), Seed: prompt.Seed}, validate)
	g.result = res
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
