package main

import (
	"context"

	"42sisters.ai/oracle/shared/audit"
	"42sisters.ai/oracle/shared/crosscheck"
	"42sisters.ai/oracle/shared/quarantine"
	"42sisters.ai/oracle/shared/sosfilter"
)

// The generator's audit records. Each has an id unique for what it
// records, so a redelivered job writes nothing twice; a record that cannot
// be written alerts (audit.Recorder) and withholds nothing from the
// customer.

// record is the audit record of the task's order, as the generator's
// verdict_generated event; the callers name other events.
func (h *Handler) record(t *task, status audit.Status, detail *string, model string) audit.Record {
	r := audit.OfOrder(h.Hasher, t.order, audit.SourceGenerator, audit.EventVerdictGenerated, status, t.started, h.Now())
	r.ErrorDetail, r.Model = detail, model
	return r
}

// audit writes the record of the order's outcome: its verdict generated or
// regenerated, or its generation failed.
func (h *Handler) audit(ctx context.Context, t *task, status audit.Status, detail *string, id, model string) {
	r := h.record(t, status, detail, model)
	switch status {
	case audit.StatusError:
		r.Event = audit.EventGenerationFailed
	case audit.StatusRegenerated:
		r.Event = audit.EventVerdictRegenerated
	}
	h.Audit.Record(ctx, r, id)
}

// auditCrosscheck writes the record of the n-th crosscheck of this
// generation, passed or not.
func (h *Handler) auditCrosscheck(ctx context.Context, t *task, d crosscheck.Decision, n int) {
	status, detail := audit.StatusOK, (*string)(nil)
	if !d.Approved {
		status, detail = audit.StatusError, audit.Detail("crosscheck rejected the reply: "+string(d.Reason)+" by the "+string(d.Rule)+" rule")
	}
	r := h.record(t, status, detail, "")
	r.Event = audit.EventCrosscheck
	r.Crosscheck = &audit.Crosscheck{VerdictLabel: d.VerdictLabel, CoherenceScore: d.CoherenceScore, Threshold: d.Threshold,
		Phi: crosscheck.PHI, Approved: d.Approved, Flags: d.Flags, CrosscheckReason: string(d.Reason), Rule: string(d.Rule)}
	h.Audit.Record(ctx, r, audit.RecordID(t.order.SessionID, audit.NameCrosscheck, t.order.Attempts, n))
}

// auditFilter writes the record of gate 1's decision on this generation:
// the entries' ids, never the text.
func (h *Handler) auditFilter(ctx context.Context, t *task, rep sosfilter.Report) {
	status, detail := audit.StatusOK, (*string)(nil)
	if rep.Action == sosfilter.Quarantine {
		status, detail = audit.StatusError, audit.Detail("quarantined by the content filter: "+string(rep.Reason))
	}
	r := h.record(t, status, detail, "")
	r.Event = audit.EventFilter
	r.Filter = &audit.Filter{Gate: quarantine.GateGenerator, Action: rep.Action.String(), Reason: string(rep.Reason),
		TermIDs: rep.Terms(), Version: rep.Version}
	if r.Filter.TermIDs == nil {
		r.Filter.TermIDs = []string{}
	}
	h.Audit.Record(ctx, r, audit.RecordID(t.order.SessionID, audit.NameFilterGenerator, t.order.Attempts))
}

// auditDivergence writes the record of a regenerated verdict's comparison
// with the first one, once per regeneration.
func (h *Handler) auditDivergence(ctx context.Context, t *task, original string) {
	o := t.order
	r := audit.OfOrder(h.Hasher, o, audit.SourceGenerator, audit.EventDivergenceCheck, audit.StatusOK, h.Now(), h.Now())
	r.Divergence = &audit.Divergence{OriginalVerdict: original, RegenVerdict: string(o.VerdictLabel),
		TopLevelMatch: o.OriginalVerdict == o.VerdictLabel, DivergenceLevel: o.Divergence}
	h.Audit.Record(ctx, r, audit.RecordID(o.SessionID, audit.NameDivergence, o.GeneratedAt.Unix()))
}
