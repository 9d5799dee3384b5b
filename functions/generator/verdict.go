package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/crashpoint"
	"42sisters.ai/oracle/shared/obs"
	"42sisters.ai/oracle/shared/oracle"
	"42sisters.ai/oracle/shared/prompt"
	"42sisters.ai/oracle/shared/sosfilter"
	"42sisters.ai/oracle/shared/store"
)

// store passes a generation through gate 1 and stores it as the order's
// one verdict.
func (h *Handler) store(ctx context.Context, t *task, g generation) error {
	// Gate 1: what the model wrote reaches the store only through the
	// content filter, on first generations and regenerations alike. The
	// model writes plain text: markup in it is taken out first, so the
	// filter reads what a reader would ("AI<b></b>ON" is AION) and no tag
	// reaches the customer as junk.
	filtered, rep := h.Filter.Analysis(sosfilter.UnmarkedAnalysis(g.analysis))
	crashpoint.Reach(ctx, crashpoint.GeneratorFiltered)
	h.auditFilter(ctx, t, rep)
	if rep.Action == sosfilter.Quarantine {
		return h.quarantine(ctx, t, g, rep)
	}
	if rep.Action == sosfilter.Replace {
		t.log.WarnContext(ctx, "content filter replaced terms in the verdict", "terms", strings.Join(rep.Terms(), ","), "filter_version", rep.Version)
	}
	g.analysis = filtered
	canonical, err := g.analysis.CanonicalJSON()
	if err != nil {
		return h.failed(ctx, t, err)
	}
	v := store.StoredVerdict{
		Canonical:      string(canonical),
		Hash:           h.Hasher.Hash(string(canonical)),
		PromptVersion:  prompt.Version,
		Model:          g.result.Model,
		Label:          g.analysis.Verdict,
		CoherenceScore: g.decision.CoherenceScore,
		FilterVersion:  rep.Version,
		ExpiresAt:      h.Now().Add(t.order.Retention(h.Retention)),
	}
	if t.order.Regen {
		v.Divergence = oracle.Diverge(t.order.OriginalVerdict, g.analysis.Verdict)
	}
	if v.Audit, err = carriedText(t); err != nil {
		return h.failed(ctx, t, err)
	}
	// From here the verdict, and the records it carries, may be stored
	// whatever the answer says: its records are written with it or by the
	// job's redelivery, never apart from it.
	t.storing = true
	stored, err := h.Orders.StoreVerdict(ctx, t.order.SessionID, t.lease, v)
	if errors.Is(err, store.ErrLeaseLost) {
		t.storing = false
		// Another generator overtook this slow one; whichever stored first
		// is the verdict, and its own job finishes the work.
		t.log.WarnContext(ctx, "generation lease lost before storing; the verdict of the other attempt stands")
		return nil
	}
	if err != nil {
		h.abandon(ctx, t)
		return err
	}
	crashpoint.Reach(ctx, crashpoint.GeneratorStored)
	if !stored.Regen && stored.GeneratedAt != nil {
		// The customer's wait for their first verdict, once per stored
		// verdict; over a minute, CustomerWaitAlarm's.
		h.Metrics.Emit(obs.Waited(obs.VerdictWait, audit.Wait(stored.PaidAt, *stored.GeneratedAt), audit.WaitBudget)...)
	}
	// The tokens Google counted for the reply that became the verdict, by
	// tier: what a verdict's model cost is summed from (make cost's table
	// prices the same figures as the fake model counts them).
	u := g.result.Reply.Usage
	t.log.InfoContext(ctx, "verdict stored", "verdict", string(g.analysis.Verdict), "tier", string(t.order.Tier), "model", g.result.Model,
		"model_attempts", g.result.Attempts, "coherence", g.decision.CoherenceScore, "latency_ms", h.Now().Sub(t.started).Milliseconds(),
		"wait_ms", audit.Wait(stored.PaidAt, h.Now()).Milliseconds(), // payment to verdict stored
		"prompt_tokens", u.PromptTokens, "output_tokens", u.OutputTokens, "thought_tokens", u.ThoughtTokens)
	t.order = stored
	return h.afterStore(ctx, t)
}

// divergenceCheck compares a regenerated verdict with the first one: an
// audit record (one per regeneration, however often this runs), returned
// for the regeneration's object, and, when it moved far, the customer's
// notice (SPEC_ORACLE_REGEN_CONSISTENCY), which the mailer sends once.
func (h *Handler) divergenceCheck(ctx context.Context, t *task) (audit.Line, error) {
	o := t.order
	original := string(o.OriginalVerdict)
	if original == "" {
		original = "UNKNOWN"
	}
	rec := h.divergenceRecord(t, original)
	t.log.InfoContext(ctx, "regenerated verdict compared", "original", original, "regenerated", string(o.VerdictLabel), "divergence", o.Divergence)
	if !oracle.NotifyDivergence(o.Divergence) {
		return rec, nil
	}
	if err := h.notify(ctx, o, oracle.MailDivergence); err != nil {
		return audit.Line{}, fmt.Errorf("enqueue divergence notice: %w", err)
	}
	return rec, nil
}

// afterStore hands on what a stored verdict is owed and finishes the rest
// beside the hand-off, not after it: the generation's object (the records
// its verdict carries, the divergence check, the verdict's own record) and
// the first verdict kept past the order (a Stripe order's) are written
// while a first verdict's email is queued (a regenerated one's divergence
// notice, when it moved far). None of them depends on the others, and
// begun together they cost the invocation one round trip, not two: the
// mailer's first calls no longer meet them. A redelivery of a
// READY order runs it again, so everything here is idempotent: the mailer
// sends each email once, the object's key is the verdict's write-once
// record id, and the job's message is acknowledged only once all of it is
// done. A failed audit write alerts but does not withhold the customer's
// email.
func (h *Handler) afterStore(ctx context.Context, t *task) error {
	o := t.order
	status, id := audit.StatusOK, audit.RecordID(o.SessionID, audit.NameGenerated)
	var lines []audit.Line
	if o.Regen && o.GeneratedAt != nil {
		status, id = audit.StatusRegenerated, audit.RecordID(o.SessionID, audit.NameRegenerated, o.GeneratedAt.Unix())
		d, err := h.divergenceCheck(ctx, t)
		if err != nil {
			return err
		}
		lines = append(lines, d)
	}
	r := h.record(t, status, nil, o.Model)
	switch {
	case status == audit.StatusOK && o.GeneratedAt != nil:
		r.WaitMS = audit.Wait(o.PaidAt, *o.GeneratedAt).Milliseconds()
	case status == audit.StatusRegenerated:
		r.Event = audit.EventVerdictRegenerated
	}
	// On a redelivery, t.carried is what the stored verdict carries: the
	// records of the generation that stored it, which a crash may have
	// kept from being written.
	h.writeStep(ctx, t, o, append(lines, audit.Line{Record: r, ID: id})...)
	// Only a Stripe session comes back to be generated again once its
	// order is gone (the result page's landing); an agent's order is never
	// claimed again, so nothing would read its first verdict.
	if !oracle.IsAgentOrder(o.SessionID) {
		original := oracle.Original{Verdict: o.VerdictLabel, Hash: o.VerdictHash}
		if o.Regen {
			// The emailed verdict stands (REGEN_CONSISTENCY invariant 4): a
			// regeneration only reaches the customer's inbox as the
			// divergence notice.
			original = oracle.Original{Verdict: o.OriginalVerdict, Hash: o.OriginalVerdictHash}
		}
		t.spawn(ctx, func(ctx context.Context) error {
			return h.Originals.KeepOriginal(ctx, o.SessionID, original, o.Retention(h.OriginalRetention))
		})
	}
	if !o.Regen {
		if err := h.notify(ctx, o, oracle.MailVerdict); err != nil {
			return fmt.Errorf("enqueue verdict mail: %w", err)
		}
		t.log.InfoContext(ctx, "verdict mail enqueued")
	}
	crashpoint.Reach(ctx, crashpoint.GeneratorHandedOver)
	return nil
}
